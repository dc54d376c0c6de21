#!/usr/bin/env bash
# Sets up, builds and runs every test: the release build, MPICH with bglemu's device
# (tools/build_mpich.sh, cached by a hash of its inputs) with the MPI tests (label `mpi`) and
# MPICH's own pt2pt and coll tests with up to 4 ranks, the suite under AddressSanitizer +
# UndefinedBehaviorSanitizer, and the threaded unit tests under ThreadSanitizer.
#
#   tools/test.sh [--quick] [--mpi|--no-mpi]
#
# --quick   the release build and all its tests (plus the MPI part unless --no-mpi); no sanitizers
# --mpi     (the default) build MPICH (cold: about 17 minutes of 2 idle cores; cached afterwards)
#           and run the MPI tests and MPICH's pt2pt and coll tests
# --no-mpi  skip them
#
# The full run fits CI's 90 minutes on a fresh 2-core machine because
#  - every test runs once: the release build runs the MPI tests, the `heavy` ones (1 GiB
#    messages, a million packets, 512 tasks: scale runs whose smaller versions run under the
#    sanitizers) and the `install` ones (tests/install/run.sh: about 2 minutes), the ASan build
#    every other test, and the TSan build the unit tests (in-process, threaded) again;
#  - each build compiles only the test programs it runs (BGL_TEST_PROGRAMS, cmake/BglTests.cmake:
#    `mpi;heavy` in the release build, `unit` in the TSan build; the sanitizer builds have no MPI
#    test programs); the sanitizer builds are compiled with -O1 -g1, the tests themselves
#    (*_test.cpp) with -O0 (the code under test keeps -O1);
#  - the long single-threaded steps overlap with compiling: MPICH's build (configure is one
#    process) starts as soon as libbglml is built and runs in the background while the rest
#    compiles, and the test suite's configure runs beside the ASan tests. Timing-sensitive runs
#    (the MPI tests, MPICH's test suite) run alone.
# Each step prints its start as "== [minutes] step"; a background step's output goes to its log
# under build/, printed in full if it fails.
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

run_suite() {  # dir [ctest label options...]
  local dir=$1
  shift
  stamp "ctest in $dir $*"
  ctest --test-dir "$dir" --output-on-failure --timeout 600 -j "$jobs" "$@"
}

# Background steps: started with `background NAME command...`, joined with `join NAME`.
declare -A bg_pid bg_log
background() {
  local name=$1
  shift
  bg_log[$name]=build/$name.log
  stamp "$name (in the background; log ${bg_log[$name]})"
  "$@" > "${bg_log[$name]}" 2>&1 &
  bg_pid[$name]=$!
}
join() {
  local name=$1
  if ! wait "${bg_pid[$name]}"; then
    cat "${bg_log[$name]}"
    echo "== $name failed" >&2
    exit 1
  fi
  tail -3 "${bg_log[$name]}"
  stamp "$name done"
}
kill_background() {
  for pid in "${bg_pid[@]}"; do kill "$pid" 2> /dev/null || true; done
}
trap kill_background EXIT

mpich_suite=(tools/mpich_testsuite.sh --dirs "pt2pt coll" --maxnp 4 --modes heater --timeout 60
             --expect adi3_device/tests/mpich_expected_failures.txt --out build/mpich_testsuite)

# The full run's optimised build has only the test programs it runs (the rest run under the
# sanitizers); --quick runs them all there.
release=(release)
[ $quick -eq 1 ] || release+=("-DBGL_TEST_PROGRAMS=mpi;heavy")
if [ $mpi -eq 1 ]; then
  stamp "libbglml (release)"
  tools/build.sh "${release[@]}" bgl_adi3_device
  background mpich tools/build_mpich.sh --bglml build/lib/libbglml.so
fi
stamp "release build"
tools/build.sh "${release[@]}"
if [ $quick -eq 1 ]; then
  run_suite build -LE mpi
else
  stamp "ASan build"
  tools/build.sh asan
  stamp "TSan build"
  tools/build.sh tsan
fi
if [ $mpi -eq 1 ]; then
  join mpich
  stamp "ctest -L mpi (one at a time)"
  ctest --test-dir build --output-on-failure --timeout 300 -L mpi
  if [ $quick -eq 0 ]; then
    background mpich_suite_build timeout 2400 "${mpich_suite[@]}" --build-only
  fi
fi
if [ $quick -eq 0 ]; then
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_suite build-asan -LE 'mpi|heavy'
  if [ $mpi -eq 1 ]; then join mpich_suite_build; fi
fi
if [ $mpi -eq 1 ]; then
  stamp "MPICH's test suite: pt2pt and coll, up to 4 ranks (heater mode)"
  timeout 1800 "${mpich_suite[@]}"
fi
if [ $quick -eq 0 ]; then
  run_suite build -L 'heavy|install'
  TSAN_OPTIONS=halt_on_error=1 run_suite build-tsan -L unit -LE heavy
fi
stamp "all test suites passed"
