#!/bin/bash
# Stands in for Hydra's mpiexec in bglrun's launcher tests (BGL_MPIEXEC, --launcher mpiexec).
# bglrun starts it as `mpiexec -launcher fork -print-all-exitcodes -n N program args...`; it starts
# N ranks (BGL_RANK set, as PMI would give it) and, once every rank has printed "pid R P", plays
# the failure that made bglrun name the wrong rank on a loaded machine:
#   - it stops bglrun (SIGSTOP), so that bglrun looks only after everything has happened;
#   - kills rank FAKE_MPIEXEC_VICTIM with SIGKILL and waits until it is gone;
#   - kills every other rank with SIGKILL, rank 0 first (what Hydra's proxy does as soon as a
#     rank's PMI socket closes), and waits for them;
#   - lets bglrun continue, and reports the wait statuses like Hydra (-print-all-exitcodes).
# With FAKE_MPIEXEC_VICTIM=none it only waits for the ranks.
set -u
while [ $# -gt 0 ] && [ "$1" != "-n" ]; do shift; done
[ $# -ge 3 ] || { echo "fake_mpiexec: usage: ... -n N program args..." >&2; exit 2; }
n=$2
shift 2
victim=${FAKE_MPIEXEC_VICTIM:-0}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
pids=()
for ((r = 0; r < n; r++)); do
  BGL_RANK=$r "$@" > "$dir/$r" 2>&1 &
  pids+=($!)
done
for ((i = 0; i < 3000; i++)); do # up to 30 s for the ranks to start
  up=0
  for ((r = 0; r < n; r++)); do
    grep -q '^pid ' "$dir/$r" 2> /dev/null && up=$((up + 1))
  done
  [ $up -eq "$n" ] && break
  sleep 0.01
done
sleep 0.2 # bglrun opens a rank's pidfd within 5 ms of the rank recording its pid
if [ "$victim" = none ]; then # FAKE_MPIEXEC_VICTIM=none: kill nobody, wait for the ranks
  wait
  exit 0
fi
kill -STOP $PPID
kill -KILL "${pids[$victim]}"
wait "${pids[$victim]}"
for ((r = 0; r < n; r++)); do
  [ $r -ne "$victim" ] && kill -KILL "${pids[$r]}"
done
wait
kill -CONT $PPID
cat "$dir"/*
codes=$(printf '9,%.0s' $(seq "$n"))
echo "[mpiexec@$(hostname)] Exit codes: [$(hostname)] ${codes%,}"
exit 137
