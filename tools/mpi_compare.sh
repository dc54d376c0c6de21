#!/usr/bin/env bash
# Runs the same MPI benchmark (adi3_device/bench/mpi_bench.c) against Debian's MPICH (package
# mpich: mpicc.mpich, mpiexec.mpich; shared-memory transport, busy polling) and against MPICH with
# the bgl device (tools/build_mpich.sh; every message crosses the emulated torus), in one
# invocation, and prints both side by side with the ratio bgl / debian.
#
#   tools/mpi_compare.sh [--quick] [--out DIR] [--ranks "8 64"]
#
# --quick: 0.1 s per measurement instead of 0.3 s. Needs: build/bin/bglrun, the bgl MPICH prefix
# (BGL_MPICH_PREFIX or tools/build_mpich.sh --print-prefix) and Debian's mpich package
# (apt-get install mpich libmpich-dev; ours is always addressed by its absolute path).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${TMPDIR:-/tmp}/mpi_compare.$$
ranks="8"
budget=0.3
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) budget=0.1; shift ;;
    --out) out=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    *) echo "usage: tools/mpi_compare.sh [--quick] [--out DIR] [--ranks \"8 64\"]" >&2; exit 2 ;;
  esac
done
prefix=${BGL_MPICH_PREFIX:-$("$repo/tools/build_mpich.sh" --print-prefix)}
bglrun=${BGLRUN:-$repo/build/bin/bglrun}
[ -x "$prefix/bin/mpicc" ] || { echo "no bgl MPICH at $prefix (tools/build_mpich.sh)" >&2; exit 1; }
[ -x "$bglrun" ] || { echo "no bglrun at $bglrun (tools/build.sh)" >&2; exit 1; }
command -v mpicc.mpich > /dev/null || { echo "Debian's mpich is not installed (apt-get install mpich libmpich-dev)" >&2; exit 1; }

mkdir -p "$out"
src=$repo/adi3_device/bench/mpi_bench.c
mpicc.mpich -O2 -o "$out/bench_debian" "$src"
"$prefix/bin/mpicc" -O2 -o "$out/bench_bgl" "$src"
export BENCH_TIME=$budget

run() {  # name np what arg
  local name=$1 np=$2 what=$3 arg=$4 shape
  shape=$(case $np in 2) echo 2x1x1 ;; 8) echo 2x2x2 ;; 16) echo 4x2x2 ;; 64) echo 4x4x4 ;; *) echo "" ;; esac)
  echo "== $name: $np ranks, $what $arg" >&2
  timeout 900 mpiexec.mpich -n "$np" "$out/bench_debian" "$what" "$arg" > "$out/$name.debian" 2>&1 ||
    echo "   (debian run failed or timed out: $out/$name.debian)" >&2
  timeout 900 "$bglrun" -np "$np" ${shape:+--shape $shape} --timeout 880 "$out/bench_bgl" "$what" "$arg" \
    > "$out/$name.bgl" 2>&1 || echo "   (bgl run failed: $out/$name.bgl)" >&2
  echo "### $name ($np ranks on $(nproc) cores)"
  printf '%-10s %9s %12s %12s %8s %12s %12s\n' test bytes debian_p50us bgl_p50us ratio debian_MB/s bgl_MB/s
  join -j1 <(awk '!/^#/ && NF == 6 {print $1"/"$2, $3, $5}' "$out/$name.debian" | sort) \
           <(awk '!/^#/ && NF == 6 {print $1"/"$2, $3, $5}' "$out/$name.bgl" | sort) |
    awk '{split($1, k, "/"); r = $2 > 0 ? $4 / $2 : 0;
          printf "%-10s %9s %12.2f %12.2f %8.2f %12.1f %12.1f\n", k[1], k[2], $2, $4, r, $3, $5}' |
    sort -k1,1 -k2,2n
  echo
}

echo "# tools/mpi_compare.sh on $(hostname), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), BENCH_TIME=$budget"
echo "# bgl: $prefix; debian: $(dpkg-query -W -f='${Version}' mpich)"
echo
run pingpong2 2 pingpong $((4 << 20))
for np in $ranks; do
  run ring$np "$np" ring 8
  run coll$np "$np" coll $((1 << 20))
done
echo "# raw outputs in $out"
