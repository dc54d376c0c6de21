#!/usr/bin/env bash
# Runs the same MPI benchmark (adi3_device/bench/mpi_bench.c) against Debian's MPICH (package
# mpich: mpicc.mpich, mpiexec.mpich; shared-memory transport, busy polling) and against MPICH with
# the bgl device (tools/build_mpich.sh; every message crosses the emulated torus), in one
# invocation, each measurement group alternating between the two, and prints both side by side
# with the ratios bgl / debian of the minimum and the median (P50) times.
#
#   tools/mpi_compare.sh [--quick] [--out DIR] [--ranks "8 64"] [--json FILE] [--pingpong-max B]
#                        [--coll-max B]
#
# --quick         0.1 s per measurement instead of 0.3 s
# --ranks         rank counts of the collective runs (default "8 64"; all on this host's cores)
# --json FILE     also write every row as JSON
# --pingpong-max  largest ping-pong message (default 4194304)
# --coll-max      largest collective message (default 1048576)
# Needs: build/bin/bglrun, the bgl MPICH prefix (BGL_MPICH_PREFIX or tools/build_mpich.sh
# --print-prefix) and Debian's mpich package (apt-get install mpich libmpich-dev; ours is always
# addressed by its absolute path). Every run is bounded (timeout 900 s).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${TMPDIR:-/tmp}/mpi_compare.$$
ranks="8 64"
budget=0.3
json=""
pp_max=$((4 << 20))
coll_max=$((1 << 20))
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) budget=0.1; shift ;;
    --out) out=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    --pingpong-max) pp_max=$2; shift 2 ;;
    --coll-max) coll_max=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed -e 's/^# \{0,1\}//' -e '/^set -euo/d'; exit 0 ;;
    *) echo "mpi_compare: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
prefix=${BGL_MPICH_PREFIX:-$("$repo/tools/build_mpich.sh" --print-prefix)}
bglrun=${BGLRUN:-$repo/build/bin/bglrun}
[ -x "$prefix/bin/mpicc" ] || { echo "mpi_compare: no bgl MPICH at $prefix (tools/build_mpich.sh)" >&2; exit 1; }
[ -x "$bglrun" ] || { echo "mpi_compare: no bglrun at $bglrun (tools/build.sh)" >&2; exit 1; }
command -v mpicc.mpich > /dev/null ||
  { echo "mpi_compare: Debian's mpich is not installed (apt-get install mpich libmpich-dev)" >&2; exit 1; }

mkdir -p "$out"
src=$repo/adi3_device/bench/mpi_bench.c
mpicc.mpich -O2 -o "$out/bench_debian" "$src"
"$prefix/bin/mpicc" -O2 -o "$out/bench_bgl" "$src"
export BENCH_TIME=$budget
rows=$out/rows.txt
: > "$rows"

run() {  # name np what arg
  local name=$1 np=$2 what=$3 arg=$4 shape
  shape=$(case $np in 2) echo 2x1x1 ;; 4) echo 2x2x1 ;; 8) echo 2x2x2 ;; 16) echo 4x2x2 ;; 32) echo 4x4x2 ;; 64) echo 4x4x4 ;; *) echo "" ;; esac)
  echo "== $name: $np ranks, $what $arg" >&2
  timeout 900 mpiexec.mpich -n "$np" "$out/bench_debian" "$what" "$arg" > "$out/$name.debian" 2>&1 ||
    echo "   (debian run failed or timed out: $out/$name.debian)" >&2
  timeout 900 "$bglrun" -np "$np" ${shape:+--shape $shape} --timeout 880 "$out/bench_bgl" "$what" "$arg" \
    > "$out/$name.bgl" 2>&1 || echo "   (bgl run failed: $out/$name.bgl)" >&2
  echo "### $name ($np ranks on $(nproc) cores; times in µs, ratio = bgl / debian)"
  printf '%-10s %9s %11s %11s %11s %11s %8s %8s %10s %10s\n' test bytes deb_min bgl_min deb_p50 bgl_p50 \
    r_min r_p50 deb_MB/s bgl_MB/s
  join -j1 <(awk '!/^#/ && NF == 7 {print $1"/"$2, $3, $4, $6}' "$out/$name.debian" | sort) \
           <(awk '!/^#/ && NF == 7 {print $1"/"$2, $3, $4, $6}' "$out/$name.bgl" | sort) |
    awk -v np="$np" -v rows="$rows" '{
          split($1, k, "/"); rmin = $2 > 0 ? $5 / $2 : 0; rp50 = $3 > 0 ? $6 / $3 : 0
          printf "%-10s %9s %11.2f %11.2f %11.2f %11.2f %8.2f %8.2f %10.1f %10.1f\n", k[1], k[2], $2, $5, $3, $6, rmin, rp50, $4, $7
          printf "%s %s %s %s %s %s %s %s %s\n", np, k[1], k[2], $2, $5, $3, $6, $4, $7 >> rows
        }' | sort -k1,1 -k2,2n
  echo
}

echo "# tools/mpi_compare.sh on $(hostname), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), BENCH_TIME=$budget"
echo "# bgl: $prefix; debian: mpich $(dpkg-query -W -f='${Version}' mpich)"
echo
run pingpong2 2 pingpong "$pp_max"
for np in $ranks; do
  run coll$np "$np" coll "$coll_max"
done
if [ -n "$json" ]; then
  awk 'BEGIN {print "["} NR > 1 {print ","}
       {printf "  {\"ranks\": %s, \"test\": \"%s\", \"bytes\": %s, \"debian_min_us\": %s, \"bgl_min_us\": %s, \"debian_p50_us\": %s, \"bgl_p50_us\": %s, \"debian_MBps\": %s, \"bgl_MBps\": %s}", $1, $2, $3, $4, $5, $6, $7, $8, $9}
       END {print "\n]"}' "$rows" > "$json"
  echo "# JSON: $json"
fi
echo "# raw outputs in $out"
