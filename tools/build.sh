#!/usr/bin/env bash
# Configures and builds bglemu. Usage: tools/build.sh [release|asan|tsan] (default release).
#   release -> build/          asan -> build-asan/ (AddressSanitizer + UBSan)   tsan -> build-tsan/
set -euo pipefail
cd "$(dirname "$0")/.."
variant=${1:-release}
case "$variant" in
  release) dir=build;      args=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan)    dir=build-asan; args=(-DCMAKE_BUILD_TYPE=Debug -DBGL_SANITIZE=address,undefined -DBGL_BUILD_BENCH=OFF) ;;
  tsan)    dir=build-tsan; args=(-DCMAKE_BUILD_TYPE=Debug -DBGL_SANITIZE=thread -DBGL_BUILD_BENCH=OFF) ;;
  *) echo "usage: tools/build.sh [release|asan|tsan]" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" -G Ninja "${args[@]}" > /dev/null
ninja -C "$dir"
