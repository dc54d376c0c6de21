#!/usr/bin/env bash
# Waiting policies for many tasks on few cores, compared in one run: coll_bench's barrier
# (dissemination, global interrupt) and 8-byte allreduce (tree, recursive doubling) at 8 (2x2x2),
# 64 (4x4x4) and 1,024 tasks (8x8x8 virtual-node mode), every policy once per repetition,
# interleaved, plus the whole job's wall time (start-up and shutdown included).
#   bench/wait_policy.sh [REPS] [SIZES] [VARIANTS]     (defaults: 3, "8 64 1024", all)
# Variants are settings of the wait policy's variables (docs/CONFIGURATION.md):
#   auto   the defaults (by tasks per core)
#   yield  spin 64, then yield for ever (Open MPI's oversubscribed policy: never sleep)
#   sleep  sleep on the doorbell at once (every wake-up targeted: whoever makes work rings it)
#   spin   spin 64 rounds, then sleep (no yields)
# Each variant also runs collnet_bench (the collective network alone, no harness barrier around
# each call): the global-interrupt barrier's back-to-back period and a 256-byte u64 allreduce.
# Output: one line per run (variant, tasks, rep, wall s of the coll_bench job, then median µs of
# each row), then a summary of min and median per variant and row. Env: BGL_BIN (default build/bin), BGL_TIMEOUT_S
# (per job, default 300).
set -euo pipefail
reps=${1:-3}
sizes=${2:-"8 64 1024"}
variants=${3:-"auto yield sleep spin"}
bin=${BGL_BIN:-build/bin}
limit=${BGL_TIMEOUT_S:-300}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

settings() {
  case "$1" in
    auto) echo "" ;;
    yield) echo "BGL_SPIN=64 BGL_YIELD=100000000" ;;
    sleep) echo "BGL_SPIN=0 BGL_YIELD=0" ;;
    spin) echo "BGL_SPIN=64 BGL_YIELD=0" ;;
    *) echo "wait_policy.sh: unknown variant '$1'" >&2; exit 2 ;;
  esac
}
# shellcheck source=geometry.sh
source "$(dirname "$0")/geometry.sh"

echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "variant tasks rep wall_s barrier/dissemination barrier/gi allreduce8/recursive_doubling allreduce8/tree collnet/gi_period collnet/allreduce256"
for ((rep = 1; rep <= reps; rep++)); do
  for n in $sizes; do
    for v in $variants; do
      start=$(date +%s.%N)
      # shellcheck disable=SC2046
      text=$(env $(settings "$v") timeout "$limit" "$bin/bglrun" $(geometry "$n") \
        "$bin/coll_bench" --ops barrier,allreduce --sizes 8 \
        --algs dissemination,gi,tree,recursive_doubling --rounds 3 2>&1) || true
      end=$(date +%s.%N)
      wall=$(echo "$end - $start" | bc)
      row() { echo "$text" | awk -v op="$1" -v alg="$2" '$1 == op && $3 == alg { print $5; f = 1 } END { if (!f) print "NA" }'; }
      barriers=200
      [ "$n" -ge 512 ] && barriers=20
      # shellcheck disable=SC2046
      collnet=$(env $(settings "$v") timeout "$limit" "$bin/bglrun" $(geometry "$n") \
        "$bin/collnet_bench" --rounds 1 --max-bytes 256 --barriers $barriers 2>&1 |
        awk '/^allreduce, u64/ { a = 1 } a && $1 == "256" { ar = 256 / $2; a = 0 }
             /global interrupt/ { gi = $5 }
             END { printf "%s %s", gi == "" ? "NA" : gi, ar == "" ? "NA" : sprintf("%.1f", ar) }') || true
      line="$v $n $rep $wall $(row barrier dissemination) $(row barrier gi) $(row allreduce recursive_doubling) $(row allreduce tree) $collnet"
      echo "$line" | tee -a "$out"
    done
  done
done
echo
echo "# summary: min / median over repetitions (wall in s, rows in µs)"
python3 - "$out" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault((int(f[1]), f[0]), []).append(f[3:])
names = ["wall_s", "barrier/diss", "barrier/gi", "allreduce/rd", "allreduce/tree",
         "collnet/gi_period", "collnet/ar256"]
print("tasks variant " + " ".join(f"{n:>22}" for n in names))
for (n, v), runs in sorted(rows.items()):
    cells = []
    for i in range(len(names)):
        vals = [float(r[i]) for r in runs if r[i] != "NA"]
        cells.append(f"{min(vals):10.{3 if i == 0 else 0}f} / {statistics.median(vals):9.{3 if i == 0 else 0}f}" if vals else f"{'NA':>22}")
    print(f"{n:5d} {v:7s} " + " ".join(f"{c:>22}" for c in cells))
PY
