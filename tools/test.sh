#!/usr/bin/env bash
# Sets up, builds and runs every test: the release build (unit and multi-process tests), the same
# suite under AddressSanitizer + UndefinedBehaviorSanitizer, and the threaded unit tests under
# ThreadSanitizer. `tools/test.sh --quick` runs the release build only. The MPI tests (label
# `mpi`, issue 6) need MPICH built with our device (tools/build_mpich.sh, ~15 min cold) and run
# only with --mpi.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
mpi=0
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --mpi) mpi=1 ;;
    *) echo "usage: tools/test.sh [--quick] [--mpi]" >&2; exit 2 ;;
  esac
done
tools/setup.sh
jobs=$(nproc)

run_suite() {  # dir [label-regex]
  echo "== ctest in $1 ${2:+(labels $2)}"
  ctest --test-dir "$1" --output-on-failure --timeout 600 -j "$jobs" -LE mpi ${2:+-L "$2"}
}

tools/build.sh release
run_suite build
if [ $mpi -eq 1 ]; then
  tools/build_mpich.sh --bglml build/lib/libbglml.so --bglml-include message_layer/include \
    --bglml-include adi3_device/bglml
  cmake -S . -B build > /dev/null
  ctest --test-dir build --output-on-failure --timeout 900 -L mpi
fi
if [ $quick -eq 0 ]; then
  tools/build.sh asan
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_suite build-asan
  tools/build.sh tsan
  TSAN_OPTIONS=halt_on_error=1 run_suite build-tsan unit
fi
echo "== all test suites passed"
