#!/usr/bin/env bash
# Sets up, builds and runs the main job: an MPI program (compiled with the mpicc of MPICH with
# bglemu's device) on an emulated 2x2x2 torus in virtual-node mode, 16 tasks placed by a mapping
# file; then, as a second part, the packet-level torus demo on the same partition.
#
#   tools/demo.sh [--no-mpi]
#
# The first run builds MPICH with the device (tools/build_mpich.sh: about 20 minutes on an idle 2-core machine,
# cached in ~/.cache/bglemu afterwards). --no-mpi runs only the packet-level part.
set -euo pipefail
cd "$(dirname "$0")/.."
mpi=1
for arg in "$@"; do
  case "$arg" in
    --no-mpi) mpi=0 ;;
    *) echo "usage: tools/demo.sh [--no-mpi]" >&2; exit 2 ;;
  esac
done
tools/setup.sh
tools/build.sh release
if [ $mpi -eq 1 ]; then
  echo "== part 1: an MPI program on the emulated machine"
  tools/build_mpich.sh --bglml build/lib/libbglml.so
  P=$(tools/build_mpich.sh --print-prefix)
  mkdir -p build/examples
  "$P/bin/mpicc" -O2 -o build/examples/hello examples/mpi/hello.c
  echo "\$ bglrun -np 16 --shape 2x2x2 --mode vn --mapfile examples/mpi/map-2x2x2-vn.txt build/examples/hello"
  build/bin/bglrun -np 16 --shape 2x2x2 --mode vn --mapfile examples/mpi/map-2x2x2-vn.txt \
    --stats build/demo-mpi-stats.json --report build/demo-mpi-report.html --timeout 120 \
    build/examples/hello
  echo "statistics of the MPI job (per task, per link, per FIFO): build/demo-mpi-stats.json"
  echo
fi
echo "== part 2: packets on the emulated torus"
build/bin/bglrun -np 8 --shape 2x2x2 --mapfile examples/map-2x2x2.txt --stats build/demo-stats.json \
  --report build/demo-report.html --log-level info build/bin/torus_demo
echo "statistics (per task, per link, per FIFO): build/demo-stats.json"
echo
if [ $mpi -eq 1 ]; then
  echo "== the main job's report (torus, links, protocols, tasks): open this file in a browser:"
  echo "   $PWD/build/demo-mpi-report.html"
  echo "   (the packet-level part's: $PWD/build/demo-report.html)"
else
  echo "== the report (torus, links, tasks): open this file in a browser:"
  echo "   $PWD/build/demo-report.html"
fi
