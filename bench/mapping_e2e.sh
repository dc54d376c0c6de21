#!/usr/bin/env bash
# End-to-end mapping optimisation (docs/PERFORMANCE.md, "Mapping optimisation from a run's
# communication matrix"): examples/halo_exchange on 4x4x4 and 8x8x8 with its ranks shuffled over
# the torus, run with --stats and --virtual-time; bglmap --optimize on the recorded matrix; then
# ROUNDS interleaved rounds of the shuffled, the optimised and the default XYZT mapping, reporting
# the BG/L time the runs measured (min, median), the busiest link, and beside it the time bglmap
# --rate predicts for the same mapping from the first run's matrix alone.
#   bench/mapping_e2e.sh [BUILD_DIR] [ROUNDS] [OUT_DIR]
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
out=${3:-$(mktemp -d "${TMPDIR:-/tmp}/mapping_e2e.XXXXXX")}
bin=$(cd "$build/bin" && pwd)
mkdir -p "$out" && cd "$out"
echo "# files in $out"
for spec in "64 4x4x4 4 10" "512 8x8x8 8 5"; do
  read -r np shape e iters <<< "$spec"
  python3 -c "
import random
random.seed(1)
c = [(x, y, z) for z in range($e) for y in range($e) for x in range($e)]
random.shuffle(c)
print('# $np tasks on $shape, shuffled (seed 1)')
print('\n'.join('%d %d %d' % p for p in c))" > "scattered$np.map"
  halo=("$bin/halo_exchange" --bytes 2048 --iterations "$iters")
  "$bin/bglrun" -np "$np" --shape "$shape" --virtual-time --mapfile "scattered$np.map" \
    --stats "run$np.json" "${halo[@]}" > /dev/null 2>&1
  "$bin/bglmap" --matrix "run$np.json" --shape "$shape" --mapfile "scattered$np.map" --optimize \
    -o "optimised$np.map"
  "$bin/bglmap" --matrix "run$np.json" --shape "$shape" --rate "optimised$np.map" | tail -n +2
  "$bin/bglmap" --matrix "run$np.json" --shape "$shape" --mapping XYZT --optimize -o /dev/null \
    2>&1 | sed -n 3p
  "$bin/bglmap" -np "$np" --shape "$shape" --mapping XYZT -o "xyzt$np.map" 2> /dev/null
  for m in scattered optimised xyzt; do
    "$bin/bglmap" --matrix "run$np.json" --shape "$shape" --rate "$m$np.map" \
      | sed -n 's/^  predicted \([0-9.]*\) us = .*/\1/p' > "predicted_${np}_$m.txt"
  done
  for ((r = 1; r <= rounds; ++r)); do
    for m in scattered optimised xyzt; do
      if [ "$m" = xyzt ]; then mapping=(--mapping XYZT); else mapping=(--mapfile "$m$np.map"); fi
      "$bin/bglrun" -np "$np" --shape "$shape" --virtual-time "${mapping[@]}" \
        --stats "r${r}_${np}_$m.json" "${halo[@]}" > /dev/null 2>&1
    done
  done
  python3 - "$np" <<'PY'
import glob, json, statistics, sys
n = sys.argv[1]
for m in ['scattered', 'optimised', 'xyzt']:
    ps, bl, ut = [], [], []
    for f in sorted(glob.glob('r*_%s_%s.json' % (n, m))):
        j = json.load(open(f))
        ps.append(j['virtual_time']['predicted_seconds'] * 1e6)
        bl.append(max(l['bytes'] for l in j['links']))
        ut.append(max(l['utilisation'] for l in j['virtual_time']['links']))
    pred = float(open('predicted_%s_%s.txt' % (n, m)).read().split()[0])
    print('%4s tasks %-9s BG/L time (bglrun --virtual-time) min %7.1f us, median %7.1f us; '
          'bglmap --rate predicted %7.1f us (%+.1f %% of the median); busiest link %6d B '
          '(packets with headers), utilisation %.1f %%'
          % (n, m, min(ps), statistics.median(ps), pred,
             100 * (pred - statistics.median(ps)) / statistics.median(ps), max(bl),
             100 * statistics.median(ut)))
PY
done
