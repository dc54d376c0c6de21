#!/usr/bin/env bash
# Configures and builds bglemu.
#
#   tools/build.sh [release|asan|tsan] [-DVAR=VALUE...] [ninja target...]
#
#   release -> build/      asan -> build-asan/ (AddressSanitizer + UBSan)   tsan -> build-tsan/
# The -D options go to cmake, anything else names the targets to build (default: all).
# BGL_TEST_PROGRAMS (cmake/BglTests.cmake) is `all` unless given, except in the ThreadSanitizer
# build, which builds only the in-process unit test programs it runs (`unit`).
set -euo pipefail
cd "$(dirname "$0")/.."
variant=${1:-release}
case "$variant" in
  release) dir=build;      args=(-DCMAKE_BUILD_TYPE=Release -DBGL_TEST_PROGRAMS=all) ;;
  asan)    dir=build-asan; args=(-DCMAKE_BUILD_TYPE=Debug -DBGL_SANITIZE=address,undefined
                                 -DBGL_BUILD_BENCH=OFF -DBGL_TEST_PROGRAMS=all) ;;
  tsan)    dir=build-tsan; args=(-DCMAKE_BUILD_TYPE=Debug -DBGL_SANITIZE=thread -DBGL_BUILD_BENCH=OFF
                                 -DBGL_TEST_PROGRAMS=unit) ;;
  *) echo "usage: tools/build.sh [release|asan|tsan] [-DVAR=VALUE...] [target...]" >&2; exit 2 ;;
esac
shift $(( $# > 0 ? 1 : 0 ))
targets=()
for arg in "$@"; do
  case "$arg" in
    -D*) args+=("$arg") ;;
    *) targets+=("$arg") ;;
  esac
done
cmake -S . -B "$dir" -G Ninja "${args[@]}" > /dev/null
ninja -C "$dir" "${targets[@]}"
