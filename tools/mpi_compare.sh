#!/usr/bin/env bash
# Runs the same MPI benchmark (adi3_device/bench/mpi_bench.c) against Debian's MPICH (package
# mpich: mpicc.mpich, mpiexec.mpich; shared-memory transport, busy polling) and against MPICH with
# the bgl device (tools/build_mpich.sh; every message crosses the emulated torus), in one
# invocation, and prints them side by side with the ratios bgl / debian of the minimum and the
# median (P50) times. The collectives also run a third way: the bgl device with its collective
# hooks off (BGL_NM_COLL_HOOKS=0), i.e. MPICH's own algorithms over the same emulated machine
# (column "mpich_alg"), against bglemu's collectives library (column "bgl"), and a fourth way when
# Debian's openmpi-bin is installed: Open MPI, oversubscribed (it yields when idle; column
# "ompi", ratio o = bgl / openmpi), the MPI people use on a machine with more ranks than cores. A 1-rank MPI_Pack
# run compares the datatype engines (the device's MPICH is built with dataloop, Debian's has yaksa).
# The idle sections time MPI_Test and MPI_Iprobe calls that find nothing (rows test/1k and
# iprobe/1k: the time of 1000 calls in µs, i.e. ns per call) with 2 ranks and with 8 ranks on this
# host's cores (oversubscribed on a 2-core machine).
# The bandwidth sections time osu_bw's pattern (a window of 64 sends, then a reply; the row's
# time is per message): `bw` between two nodes (2x1x1), `vn` between the two tasks of one node in
# virtual-node mode (1x1x1, --mode vn), where it also runs the ping-pong (Debian's runs are the same
# two processes on this host either way).
# The runs are interleaved: each round runs every variant once, one after the other; a row's
# minimum is the minimum over all rounds, its P50 the median of the rounds' P50s (this machine's
# speed drifts; ratios of interleaved runs are what to judge by).
#
#   tools/mpi_compare.sh [--quick] [--rounds N] [--out DIR] [--ranks "8 64"] [--json FILE]
#                        [--pingpong-max B] [--coll-max B]
#                        [--only "pingpong bw vn pack coll idle"]
#                        [--base PREFIX] [--base-env "VAR=VALUE ..."]
#
# --quick         0.1 s per measurement instead of 0.3 s
# --rounds N      interleaved rounds (default 3)
# --ranks         rank counts of the collective runs (default "8 64"; all on this host's cores)
# --json FILE     also write every row as JSON
# --pingpong-max  largest ping-pong message (default 4194304)
# --coll-max      largest collective message (default 1048576)
# --only          the sections to run (default all: pingpong bw vn pack coll idle)
# --base PREFIX   another bgl MPICH prefix (e.g. a build from before a change), run as the third
#                 variant "base" of the collective and idle sections (instead of mpich_alg;
#                 column b = bgl / base)
# --base-env VARS the variant "base" is this MPICH with these variables set (e.g. a switch back to
#                 an earlier behaviour: "BGL_ML_VN_LIMIT=0"); then the ping-pong and bandwidth
#                 sections run it too
# Needs: build/bin/bglrun, the bgl MPICH prefix (BGL_MPICH_PREFIX or tools/build_mpich.sh
# --print-prefix) and Debian's mpich package (apt-get install mpich libmpich-dev; ours is always
# addressed by its absolute path). Every run is bounded (timeout 900 s).
set -euo pipefail
export LC_ALL=C  # join and sort must agree on the order
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${TMPDIR:-/tmp}/mpi_compare.$$
ranks="8 64"
budget=0.3
rounds=3
json=""
pp_max=$((4 << 20))
coll_max=$((1 << 20))
only="pingpong bw vn pack coll idle"
base=""
base_env=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) budget=0.1; shift ;;
    --rounds) rounds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    --pingpong-max) pp_max=$2; shift 2 ;;
    --coll-max) coll_max=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --base-env) base_env=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed -e 's/^# \{0,1\}//' -e '/^set -euo/d'; exit 0 ;;
    *) echo "mpi_compare: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$rounds" in ''|*[!0-9]*|0) echo "mpi_compare: --rounds needs a positive number, got '$rounds'" >&2; exit 2 ;; esac
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
# Open MPI (Debian's openmpi-bin; it yields when oversubscribed): the collective sections' fourth
# variant when it is installed.
openmpi=()
if command -v mpicc.openmpi > /dev/null && command -v mpirun.openmpi > /dev/null; then
  mpicc.openmpi -O2 -o "$out/bench_openmpi" "$src"
  openmpi=(openmpi)
fi
export BENCH_TIME=$budget
rows=$out/rows.txt
: > "$rows"

# One variant's run: debian, bgl, or mpich_alg (the bgl device without its collective hooks).
# np "2vn": the two tasks of one node in virtual-node mode.
run_variant() {  # variant np what arg file
  local v=$1 np=$2 what=$3 arg=$4 file=$5 shape
  shape=$(case $np in 2) echo 2x1x1 ;; 4) echo 2x2x1 ;; 8) echo 2x2x2 ;; 16) echo 4x2x2 ;; 32) echo 4x4x2 ;; 64) echo 4x4x4 ;; 2vn) echo "1x1x1 --mode vn" ;; *) echo "" ;; esac)
  np=${np%vn}
  case $v in
    debian) timeout 900 mpiexec.mpich -n "$np" "$out/bench_debian" "$what" "$arg" ;;
    bgl) timeout 900 "$bglrun" -np "$np" ${shape:+--shape $shape} --timeout 880 "$out/bench_bgl" "$what" "$arg" ;;
    base) timeout 900 env $base_env "$bglrun" -np "$np" ${shape:+--shape $shape} --timeout 880 "$out/bench_base" "$what" "$arg" ;;
    mpich_alg) BGL_NM_COLL_HOOKS=0 timeout 900 "$bglrun" -np "$np" ${shape:+--shape $shape} --timeout 880 \
                 "$out/bench_bgl" "$what" "$arg" ;;
    openmpi) timeout 900 env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
               mpirun.openmpi --oversubscribe --bind-to none -np "$np" "$out/bench_openmpi" "$what" "$arg" ;;
  esac > "$file" 2>&1 || echo "   ($v run failed or timed out: $file)" >&2
}

# Per (test, bytes): the minimum of the rounds' minima, the median of their P50s, MB/s at that
# median. Input: the rounds' outputs of one variant.
aggregate() {
  awk '!/^#/ && NF == 7 {k = $1 "|" $2; n[k]++; m = n[k]; mins[k, m] = $3; p50[k, m] = $4; b[k] = $2}
       END {
         for (k in n) {
           lo = mins[k, 1]; for (i = 2; i <= n[k]; i++) if (mins[k, i] < lo) lo = mins[k, i]
           for (i = 1; i <= n[k]; i++) v[i] = p50[k, i]
           for (i = 2; i <= n[k]; i++) { x = v[i]; j = i - 1; while (j >= 1 && v[j] > x) { v[j + 1] = v[j]; j-- } v[j + 1] = x }
           med = n[k] % 2 ? v[(n[k] + 1) / 2] : (v[n[k] / 2] + v[n[k] / 2 + 1]) / 2
           printf "%s %.2f %.2f %.1f\n", k, lo, med, (med > 0 ? b[k] / med : 0)
         }
       }' "$@" | sort
}

# The letter of a variant's ratio column (bgl / that variant).
short() { case $1 in base) echo b ;; mpich_alg) echo a ;; openmpi) echo o ;; *) echo "$1" ;; esac; }

run() {  # name np what arg variants...
  local name=$1 np=$2 what=$3 arg=$4 r v
  shift 4
  local variants=("$@")
  for r in $(seq 1 "$rounds"); do
    for v in "${variants[@]}"; do
      echo "== $name: $np ranks, $what $arg, round $r/$rounds, $v" >&2
      run_variant "$v" "$np" "$what" "$arg" "$out/$name.$v.$r"
    done
  done
  for v in "${variants[@]}"; do
    aggregate "$out/$name.$v".[0-9]* > "$out/$name.$v.agg"
  done
  # One line per (test, bytes): every variant's aggregate, in the order of `variants`.
  local joined=$out/$name.joined
  cp "$out/$name.${variants[0]}.agg" "$joined"
  for v in "${variants[@]:1}"; do
    join -j1 "$joined" "$out/$name.$v.agg" > "$joined.tmp" && mv "$joined.tmp" "$joined"
  done
  local names="${variants[*]}"
  echo "### $name ($np ranks on $(nproc) cores, $rounds interleaved rounds; times in µs; r = bgl / debian$(for v in "${variants[@]:2}"; do printf ', %s = bgl / %s' "$(short "$v")" "$v"; done))"
  awk -v np="$np" -v rows="$rows" -v names="$names" -v shorts="$(for v in "${variants[@]}"; do printf '%s ' "$(short "$v")"; done)" '
    BEGIN {
      n = split(names, v, " "); split(shorts, sh, " ")
      printf "%-10s %9s", "test", "bytes"
      for (i = 1; i <= n; i++) printf " %11s", label(v[i]) "_min"
      for (i = 1; i <= n; i++) printf " %11s", label(v[i]) "_p50"
      printf " %8s %8s", "r_min", "r_p50"
      for (i = 3; i <= n; i++) printf " %8s", sh[i] "_p50"
      printf " %10s\n", "bgl_MB/s"
    }
    function label(x) { return x == "debian" ? "deb" : x == "mpich_alg" ? "alg" : x == "openmpi" ? "ompi" : x }
    function at(i, f) { return $(2 + 3 * (i - 1) + f) }  # f: 0 min, 1 p50, 2 MB/s
    function ratio(a, b) { return b > 0 ? a / b : 0 }
    {
      split($1, k, "|")
      printf "%-10s %9s", k[1], k[2]
      for (i = 1; i <= n; i++) printf " %11.2f", at(i, 0)
      for (i = 1; i <= n; i++) printf " %11.2f", at(i, 1)
      printf " %8.3f %8.3f", ratio(at(2, 0), at(1, 0)), ratio(at(2, 1), at(1, 1))
      for (i = 3; i <= n; i++) printf " %8.3f", ratio(at(2, 1), at(i, 1))
      printf " %10.1f\n", at(2, 2)
      # rows: np test bytes deb_min bgl_min deb_p50 bgl_p50 deb_MB/s bgl_MB/s third_min third_p50
      #       ompi_min ompi_p50 ("-" when the variant did not run)
      third_min = third_p50 = ompi_min = ompi_p50 = "-"
      for (i = 3; i <= n; i++)
        if (v[i] == "openmpi") { ompi_min = at(i, 0); ompi_p50 = at(i, 1) }
        else { third_min = at(i, 0); third_p50 = at(i, 1) }
      print np, k[1], k[2], at(1, 0), at(2, 0), at(1, 1), at(2, 1), at(1, 2), at(2, 2), third_min,
            third_p50, ompi_min, ompi_p50 >> rows
    }' "$joined" | { IFS= read -r head; echo "$head"; sort -k1,1 -k2,2n; }
  echo
}

echo "# tools/mpi_compare.sh on $(hostname), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), BENCH_TIME=$budget, rounds $rounds, load $(cut -d' ' -f1 /proc/loadavg)"
echo "# bgl: $prefix; debian: mpich $(dpkg-query -W -f='${Version}' mpich)"
echo
third_variant=mpich_alg
p2p_base=()
if [ -n "$base_env" ]; then
  [ -n "$base" ] || base=$prefix
  p2p_base=(base)
  echo "# base: $base with $base_env"
fi
if [ -n "$base" ]; then
  [ -x "$base/bin/mpicc" ] || { echo "mpi_compare: no MPICH at --base $base" >&2; exit 1; }
  "$base/bin/mpicc" -O2 -o "$out/bench_base" "$src"
  third_variant=base
  echo "# base: $base"
fi
section() { case " $only " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
section pingpong && run pingpong2 2 pingpong "$pp_max" debian bgl "${p2p_base[@]}"
section bw && run bw2 2 bw "$pp_max" debian bgl "${p2p_base[@]}"
if section vn; then
  run pingpong2vn 2vn pingpong "$pp_max" debian bgl "${p2p_base[@]}"
  run bw2vn 2vn bw "$pp_max" debian bgl "${p2p_base[@]}"
fi
# The datatype engines alone (1 rank): the device's MPICH uses dataloop, Debian's yaksa.
section pack && run pack1 1 pack "$coll_max" debian bgl
if section coll; then
  for np in $ranks; do
    run coll$np "$np" coll "$coll_max" debian bgl "${third_variant}" "${openmpi[@]}"
  done
fi
# Idle polls, batches of 100 calls: tasks within the cores, then 8 ranks (oversubscribed here).
if section idle; then
  run idle2 2 idle 100 debian bgl ${base:+base}
  run idle8 8 idle 100 debian bgl ${base:+base}
fi
if [ -n "$json" ]; then
  awk -v v3="$third_variant" 'BEGIN {print "["} NR > 1 {print ","}
       {alg = $10 == "-" ? "null" : $10; algp = $11 == "-" ? "null" : $11
        ompi = $12 == "-" ? "null" : $12; ompip = $13 == "-" ? "null" : $13
        mode = $1 ~ /vn$/ ? "vn" : "heater"; sub(/vn$/, "", $1)
        printf "  {\"ranks\": %s, \"mode\": \"" mode "\", \"test\": \"%s\", \"bytes\": %s, \"debian_min_us\": %s, \"bgl_min_us\": %s, \"debian_p50_us\": %s, \"bgl_p50_us\": %s, \"debian_MBps\": %s, \"bgl_MBps\": %s, \"" v3 "_min_us\": %s, \"" v3 "_p50_us\": %s, \"openmpi_min_us\": %s, \"openmpi_p50_us\": %s}", $1, $2, $3, $4, $5, $6, $7, $8, $9, alg, algp, ompi, ompip}
       END {print "\n]"}' "$rows" > "$json"
  echo "# JSON: $json"
fi
echo "# raw outputs in $out"
