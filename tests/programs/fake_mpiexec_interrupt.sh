#!/bin/bash
# Stands in for Hydra's mpiexec in bglrun's launcher tests (BGL_MPIEXEC, --launcher mpiexec) when
# the user interrupts the job: it starts N ranks (BGL_RANK set, as PMI would give it), passes a
# SIGINT or SIGTERM it receives on to them as Hydra does, waits for them and reports their wait
# statuses like Hydra (-print-all-exitcodes).
set -u
set -m # ranks in the background keep SIGINT's default action (not ignored)
while [ $# -gt 0 ] && [ "$1" != "-n" ]; do shift; done
[ $# -ge 3 ] || { echo "fake_mpiexec_interrupt: usage: ... -n N program args..." >&2; exit 2; }
n=$2
shift 2
pids=()
for ((r = 0; r < n; r++)); do
  BGL_RANK=$r "$@" &
  pids+=($!)
done
got=0
trap 'got=2; kill -INT "${pids[@]}" 2> /dev/null' INT
trap 'got=15; kill -TERM "${pids[@]}" 2> /dev/null' TERM
while [ $got -eq 0 ] && [ -n "$(jobs -p)" ]; do wait; done
wait
codes=$(printf "$got,%.0s" $(seq "$n"))
echo "[mpiexec@$(hostname)] Exit codes: [$(hostname)] ${codes%,}"
exit $((128 + got))
