#!/usr/bin/env bash
# What the MPI calls' timeline (bglrun --trace, `mpi` events) costs an MPI program: the same
# benchmark (adi3_device/bench/mpi_bench.c) built with a base MPICH prefix from before the trace
# hook (mpich_patches/0005) and with the current one, run three ways in each round, rounds
# interleaved: `base`, `off` (the current prefix, no --trace: each MPI call tests the hook's
# pointer) and `on` (--trace: each call is recorded). Prints per row the minimum over the rounds
# and the median of the rounds' P50s, and the ratios off/base and on/base. BENCH_TIME (default
# 0.05 s per measurement) keeps the traced runs within their cap of 4,000,000 events.
#
#   tools/mpi_trace_cost.sh --base PREFIX [--rounds N] [--what "pingpong:8 idle:100"]
#
# Needs build/bin/bglrun and the current bgl MPICH prefix (BGL_MPICH_PREFIX or
# tools/build_mpich.sh --print-prefix). Every run is bounded (timeout 300 s).
set -euo pipefail
export LC_ALL=C
repo=$(cd "$(dirname "$0")/.." && pwd)
rounds=5
what="pingpong:8 idle:100"
base=""
while [ $# -gt 0 ]; do
  case "$1" in
    --base) base=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --what) what=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed -e 's/^# \{0,1\}//' -e '/^set -euo/d'; exit 0 ;;
    *) echo "mpi_trace_cost: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$base" ] || { echo "mpi_trace_cost: --base PREFIX is required" >&2; exit 2; }
prefix=${BGL_MPICH_PREFIX:-$("$repo/tools/build_mpich.sh" --print-prefix)}
bglrun=${BGLRUN:-$repo/build/bin/bglrun}
for p in "$base" "$prefix"; do
  [ -x "$p/bin/mpicc" ] || { echo "mpi_trace_cost: no MPICH at $p" >&2; exit 1; }
done
[ -x "$bglrun" ] || { echo "mpi_trace_cost: no bglrun at $bglrun (tools/build.sh)" >&2; exit 1; }
out=$(mktemp -d "${TMPDIR:-/tmp}/mpi_trace_cost.XXXXXX")
trap 'rm -rf "$out"' EXIT
src=$repo/adi3_device/bench/mpi_bench.c
"$base/bin/mpicc" -O2 -o "$out/bench_base" "$src"
"$prefix/bin/mpicc" -O2 -o "$out/bench_new" "$src"
export BENCH_TIME=${BENCH_TIME:-0.05}
echo "# tools/mpi_trace_cost.sh, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), BENCH_TIME=$BENCH_TIME, rounds $rounds, load $(cut -d' ' -f1 /proc/loadavg)"
for r in $(seq 1 "$rounds"); do
  for w in $what; do
    test=${w%%:*} arg=${w#*:}
    for v in base off on; do
      exe=$out/bench_new trace=()
      [ $v = base ] && exe=$out/bench_base
      [ $v = on ] && trace=(--trace "$out/t.json" --trace-events 4000000)
      timeout 300 "$bglrun" -np 2 --shape 2x1x1 --timeout 280 "${trace[@]}" "$exe" "$test" "$arg" \
        > "$out/$test.$v.$r" 2>&1 || echo "   ($v run failed: $out/$test.$v.$r)" >&2
    done
  done
done
agg() {  # the rounds' outputs of one variant -> "test|bytes min p50"
  awk '!/^#/ && NF == 7 {k = $1 "|" $2; n[k]++; m = n[k]; mins[k, m] = $3; p50[k, m] = $4}
       END {
         for (k in n) {
           lo = mins[k, 1]; for (i = 2; i <= n[k]; i++) if (mins[k, i] < lo) lo = mins[k, i]
           for (i = 1; i <= n[k]; i++) v[i] = p50[k, i]
           for (i = 2; i <= n[k]; i++) { x = v[i]; j = i - 1; while (j >= 1 && v[j] > x) { v[j + 1] = v[j]; j-- } v[j + 1] = x }
           med = n[k] % 2 ? v[(n[k] + 1) / 2] : (v[n[k] / 2] + v[n[k] / 2 + 1]) / 2
           printf "%s %.3f %.3f\n", k, lo, med
         }
       }' "$@" | sort
}
printf '%-14s %7s %9s %9s %9s %9s %9s %9s %8s %8s %8s %8s\n' test bytes base_min off_min on_min \
  base_p50 off_p50 on_p50 off/b_min on/b_min off/b_p50 on/b_p50
for w in $what; do
  test=${w%%:*}
  join <(agg "$out/$test.base".*) <(agg "$out/$test.off".*) | join - <(agg "$out/$test.on".*) |
    awk '{split($1, k, "|"); printf "%-14s %7s %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %8.3f %8.3f %8.3f %8.3f\n",
          k[1], k[2], $2, $4, $6, $3, $5, $7, $4 / $2, $6 / $2, $5 / $3, $7 / $3}'
done
