#!/usr/bin/env bash
# Sets up, builds and runs the main job: a program on an emulated 2x2x2 torus with a mapping file.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh release
build/bin/bglrun -np 8 --shape 2x2x2 --mapfile examples/map-2x2x2.txt --stats build/demo-stats.json \
  --log-level info build/bin/torus_demo
echo "statistics (per task, per link, per FIFO): build/demo-stats.json"
