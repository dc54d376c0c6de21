#!/usr/bin/env bash
# Sets up, builds and runs every test: the release build (unit and multi-process tests), MPICH with
# bglemu's device (tools/build_mpich.sh, cached by a hash of its inputs) with the MPI tests (label
# `mpi`) and MPICH's own pt2pt and coll tests with up to 4 ranks, the suite under
# AddressSanitizer + UndefinedBehaviorSanitizer, and the threaded unit tests under
# ThreadSanitizer.
#
#   tools/test.sh [--quick] [--mpi|--no-mpi]
#
# --quick   the release build and its tests only (plus the MPI part unless --no-mpi)
# --mpi     (the default) build MPICH (cold: about 17 minutes on 2 idle cores; cached afterwards)
#           and run the MPI tests and MPICH's pt2pt and coll tests
# --no-mpi  skip them
#
# In the full run the release build runs only the MPI tests: the sanitizer builds run every other
# test (the same sources, the same tests), and running them three times does not fit CI's budget.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
mpi=1
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --no-mpi) mpi=0 ;;
    --mpi) mpi=1 ;;
    *) echo "usage: tools/test.sh [--quick] [--mpi|--no-mpi]" >&2; exit 2 ;;
  esac
done
tools/setup.sh
jobs=$(nproc)
t0=$(date +%s)
stamp() { echo "== [$(( ($(date +%s) - t0) / 60 )) min] $*"; }

run_suite() {  # dir [label-regex]
  stamp "ctest in $1 ${2:+(labels $2)}"
  ctest --test-dir "$1" --output-on-failure --timeout 600 -j "$jobs" -LE mpi ${2:+-L "$2"}
}

stamp "release build"
tools/build.sh release
[ $quick -eq 0 ] || run_suite build
if [ $mpi -eq 1 ]; then
  stamp "MPICH with the bgl device"
  tools/build_mpich.sh --bglml build/lib/libbglml.so
  stamp "ctest -L mpi"
  ctest --test-dir build --output-on-failure --timeout 300 -L mpi
  stamp "MPICH's test suite: pt2pt and coll, up to 4 ranks (heater mode)"
  timeout 1800 tools/mpich_testsuite.sh --dirs "pt2pt coll" --maxnp 4 --modes heater --timeout 60 \
    --expect adi3_device/tests/mpich_expected_failures.txt --out build/mpich_testsuite
fi
if [ $quick -eq 0 ]; then
  stamp "ASan build"
  tools/build.sh asan
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_suite build-asan
  stamp "TSan build"
  tools/build.sh tsan
  TSAN_OPTIONS=halt_on_error=1 run_suite build-tsan unit
fi
stamp "all test suites passed"
