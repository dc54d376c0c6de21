#!/usr/bin/env bash
# Sets up, builds and runs every test: the release build (unit and multi-process tests), the same
# suite under AddressSanitizer + UndefinedBehaviorSanitizer, and the threaded unit tests under
# ThreadSanitizer. `tools/test.sh --quick` runs the release build only.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[ "${1:-}" = "--quick" ] && quick=1
tools/setup.sh
jobs=$(nproc)

run_suite() {  # dir label-regex
  echo "== ctest in $1 ${2:+(labels $2)}"
  ctest --test-dir "$1" --output-on-failure --timeout 600 -j "$jobs" ${2:+-L "$2"}
}

tools/build.sh release
run_suite build
if [ $quick -eq 0 ]; then
  tools/build.sh asan
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_suite build-asan
  tools/build.sh tsan
  TSAN_OPTIONS=halt_on_error=1 run_suite build-tsan unit
fi
echo "== all test suites passed"
