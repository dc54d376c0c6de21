#!/usr/bin/env bash
# The scale benchmark: one unmodified MPI program (adi3_device/bench/mpi_scale.c: 100 x allreduce
# of 8 bytes, 100 x barrier, 10 x alltoall of 8 bytes, 10 x a 3D halo exchange of 1 KiB) at
# 64, 512 and 1,024 tasks (4x4x4, 8x8x8, 8x8x8 in virtual-node mode), run side by side in one
# invocation, interleaved per repetition:
#   bgl        the device, through bglrun
#   bgl_vt     the same with --virtual-time (per-operation times are then BG/L's, predicted)
#   simgrid    SimGrid's smpirun simulating the program on a 1,024-host 8x8x16 torus platform
#              (Debian's libsimgrid-dev; per-operation times are the simulated platform's)
#   openmpi    Open MPI (Debian's openmpi-bin and libopenmpi-dev), oversubscribed on this host
# A variant whose tools are not installed is listed once as "not installed" and left out.
# Per run: the job's wall time from launch to exit, start-up (launch -> the slowest task in main),
# shutdown (rank 0 in MPI_Finalize -> exit; NA for simgrid, whose clock is simulated inside MPI) and each phase's time per operation (rank 0's wall time
# or, for bgl_vt and simgrid, the predicted or simulated time). Then min / median per variant and
# size.
#
#   bench/scale.sh [--sizes "64 512 1024"] [--reps N] [--variants "bgl bgl_vt simgrid openmpi"]
#                  [--phases allreduce,barrier,alltoall,halo] [--check]
#
# --phases  the program's phases to run (default all; `--phases allreduce` is the 100-allreduce
#           program of issue 24's 1,024-task target)
#
# --check   CI's small run: every requested variant that is installed must finish with every phase
#           reported, else exit 1 (`--sizes 8 --reps 1 --variants "bgl bgl_vt" --check`)
# Needs build/bin/bglrun (BGL_BIN) and the device's MPICH (BGL_MPICH_PREFIX, or
# tools/build_mpich.sh --print-prefix). Every run is bounded (timeout 900 s).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
sizes="64 512 1024"
reps=3
variants="bgl bgl_vt simgrid openmpi"
check=0
phases=allreduce,barrier,alltoall,halo
while [ $# -gt 0 ]; do
  case "$1" in
    --sizes) sizes=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --variants) variants=$2; shift 2 ;;
    --phases) phases=$2; shift 2 ;;
    --check) check=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed -e 's/^# \{0,1\}//' -e '/^set -euo/d'; exit 0 ;;
    *) echo "scale.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
bin=${BGL_BIN:-$repo/build/bin}
prefix=${BGL_MPICH_PREFIX:-$("$repo/tools/build_mpich.sh" --print-prefix)}
[ -x "$bin/bglrun" ] || { echo "scale.sh: no $bin/bglrun (build first)" >&2; exit 2; }
[ -x "$prefix/bin/mpicc" ] || { echo "scale.sh: no device MPICH in $prefix (tools/build_mpich.sh)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=$repo/adi3_device/bench/mpi_scale.c

# shellcheck source=geometry.sh
source "$(dirname "$0")/geometry.sh"

# SimGrid's platform: 1,024 hosts on an 8x8x16 torus with BG/L's numbers (a node's two cores at
# 700 MHz, 2 flops a cycle; a torus link 1.4 Gb/s each way; about 100 ns a hop).
simgrid_platform() {
  cat > "$work/torus.xml" <<'XML'
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="bgl" prefix="node-" suffix="" radical="0-1023" speed="2.8Gf" bw="175MBps"
           lat="100ns" topology="TORUS" topo_parameters="8,8,16"/>
</platform>
XML
  for ((i = 0; i < 1024; ++i)); do echo "node-$i"; done > "$work/hosts.txt"
}

available=""
for v in $variants; do
  case "$v" in
    bgl | bgl_vt)
      [ -x "$work/mpi_scale.bgl" ] ||
        "$prefix/bin/mpicc" -O2 -o "$work/mpi_scale.bgl" "$src" > "$work/cc.log" 2>&1 ||
        { cat "$work/cc.log" >&2; echo "scale.sh: cannot compile $src with $prefix/bin/mpicc" >&2; exit 1; }
      available+=" $v" ;;
    simgrid)
      if command -v smpicc > /dev/null && command -v smpirun > /dev/null; then
        smpicc -O2 -o "$work/mpi_scale.simgrid" "$src" > "$work/cc.log" 2>&1 && simgrid_platform &&
          available+=" $v" || echo "# simgrid: smpicc failed: $(tail -1 "$work/cc.log")"
      else
        echo "# simgrid: not installed (apt-get install libsimgrid-dev)"
      fi ;;
    openmpi)
      if command -v mpicc.openmpi > /dev/null && command -v mpirun.openmpi > /dev/null; then
        mpicc.openmpi -O2 -o "$work/mpi_scale.openmpi" "$src" > "$work/cc.log" 2>&1 &&
          available+=" $v" || echo "# openmpi: mpicc.openmpi failed: $(tail -1 "$work/cc.log")"
      else
        echo "# openmpi: not installed (apt-get install openmpi-bin libopenmpi-dev)"
      fi ;;
    *) echo "scale.sh: unknown variant $v" >&2; exit 2 ;;
  esac
done

run() {  # variant tasks
  case "$1" in
    # shellcheck disable=SC2046
    bgl) timeout 900 "$bin/bglrun" $(geometry "$2") --timeout 880 "$work/mpi_scale.bgl" "$phases" ;;
    # shellcheck disable=SC2046
    bgl_vt) timeout 900 "$bin/bglrun" $(geometry "$2") --timeout 880 --virtual-time \
              "$work/mpi_scale.bgl" "$phases" ;;
    simgrid) timeout 900 smpirun -np "$2" -platform "$work/torus.xml" -hostfile "$work/hosts.txt" \
               --cfg=smpi/display-timing:no --log=root.thres:critical "$work/mpi_scale.simgrid" "$phases" ;;
    # --oversubscribe also makes Open MPI yield when idle; root (a container, CI) must be allowed.
    openmpi) OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 900 \
               mpirun.openmpi --oversubscribe --bind-to none -np "$2" "$work/mpi_scale.openmpi" "$phases" ;;
  esac
}

rows=$work/rows
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "variant tasks rep total_s startup_s shutdown_s allreduce_us barrier_us alltoall_us halo_us"
failed=0
for ((rep = 1; rep <= reps; rep++)); do
  for n in $sizes; do
    for v in $available; do
      start=$(date +%s%N)
      text=$(run "$v" "$n" 2>&1) || true
      end=$(date +%s%N)
      row=$(echo "$text" | awk -v s="$start" -v e="$end" -v v="$v" -v n="$n" -v rep="$rep" \
                               -v want="$(echo "$phases" | tr ',' '\n' | grep -c .)" '
        function per_op(p) { return (p in t) ? t[p] : "NA" }
        $1 == "scale" && $2 == "main_entered_ns" { entered = $3 }
        $1 == "scale" && $2 == "finalize_ns" { fin = $3 }
        $1 == "scale" && NF == 4 { t[$2] = $4; c++ }
        END { if (c != want || entered == "" || fin == "") { print "FAIL"; exit }
              # SMPI answers clock_gettime with simulated time once MPI is up: no split there.
              up = (v == "simgrid") ? "NA" : sprintf("%.3f", (entered - s) / 1e9)
              down = (v == "simgrid") ? "NA" : sprintf("%.3f", (e - fin) / 1e9)
              printf "%s %d %d %.3f %s %s %s %s %s %s\n", v, n, rep, (e - s) / 1e9, up, down,
                     per_op("allreduce"), per_op("barrier"), per_op("alltoall"), per_op("halo") }')
      if [ "$row" = FAIL ]; then
        failed=1
        echo "$v $n $rep FAILED after $(( (end - start) / 1000000 )) ms:"
        echo "$text" | tail -5 | sed 's/^/    /'
      else
        echo "$row" | tee -a "$rows"
      fi
    done
  done
done

[ -s "$rows" ] && echo && echo "min / median per variant and size" &&
  sort -k1,1 -k2,2n "$rows" | awk '
    BEGIN { print "variant tasks total_s startup_s shutdown_s allreduce_us barrier_us alltoall_us halo_us" }
    function flush() {
      if (key == "") return
      line = key
      for (f = 4; f <= 10; ++f) {
        m = split(vals[f], a, " ")
        for (i = 2; i <= m; ++i)  # insertion sort (mawk has no asort)
          for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; --j) { x = a[j]; a[j] = a[j - 1]; a[j - 1] = x }
        if (a[1] == "NA") line = line " NA"
        else line = line sprintf(" %s/%s", a[1], (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2)
        vals[f] = ""
      }
      print line
    }
    { k = $1 " " $2; if (k != key) { flush(); key = k }
      for (f = 4; f <= 10; ++f) vals[f] = vals[f] " " $f }
    END { flush() }'
[ "$check" = 1 ] && [ "$failed" = 1 ] && { echo "scale.sh: a run failed" >&2; exit 1; }
exit 0
