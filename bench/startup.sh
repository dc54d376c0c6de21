#!/usr/bin/env bash
# Start-up and shutdown time of a job per layer and size, interleaved (bench/startup.cpp):
#   launch   bglrun started -> the last task entered main()
#   ready    bglrun started -> the last task had its runtime/session up and passed a barrier
#   shutdown the first task began shutting down (after a last barrier) -> bglrun exited
#   bench/startup.sh [REPS] [SIZES]     (defaults: 3, "64 512 1024"; BGL_BIN default build/bin)
# Sizes: 64 on 4x4x4, 512 on 8x8x8, 1024 on 8x8x8 in virtual-node mode. Prints every run, then
# min / median per layer and size.
set -euo pipefail
reps=${1:-3}
sizes=${2:-"64 512 1024"}
bin=${BGL_BIN:-build/bin}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# shellcheck source=geometry.sh
source "$(dirname "$0")/geometry.sh"
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "layer tasks rep launch_s ready_s shutdown_s total_s"
for ((rep = 1; rep <= reps; rep++)); do
  for n in $sizes; do
    for layer in packet message; do
      start=$(date +%s%N)
      # shellcheck disable=SC2046
      text=$(timeout 600 "$bin/bglrun" $(geometry "$n") "$bin/startup" "$layer" 2>&1) || true
      end=$(date +%s%N)
      echo "$text" | awk -v s="$start" -v e="$end" -v layer="$layer" -v n="$n" -v rep="$rep" '
        $1 == "startup" { c++; if ($3 > entered) entered = $3; if ($4 > ready) ready = $4;
                          if (first == "" || $5 < first) first = $5 }
        END { if (c != n) { printf "%s %d %d NA NA NA %.3f (%d of %d tasks reported)\n", layer, n, rep, (e - s) / 1e9, c, n; exit }
              printf "%s %d %d %.3f %.3f %.3f %.3f\n", layer, n, rep, (entered - s) / 1e9,
                     (ready - s) / 1e9, (e - first) / 1e9, (e - s) / 1e9 }' | tee -a "$out"
    done
  done
done
echo
echo "# summary: min / median over repetitions (s)"
python3 - "$out" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault((f[0], int(f[1])), []).append(f[3:7])
names = ["launch", "ready", "shutdown", "total"]
print("layer   tasks " + " ".join(f"{n:>17}" for n in names))
for (layer, n), runs in sorted(rows.items()):
    cells = []
    for i in range(4):
        vals = [float(r[i]) for r in runs if r[i] != "NA"]
        cells.append(f"{min(vals):7.3f} / {statistics.median(vals):7.3f}" if vals else "NA")
    print(f"{layer:7s} {n:5d} " + " ".join(f"{c:>17}" for c in cells))
PY
