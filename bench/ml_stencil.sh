#!/usr/bin/env bash
# The stencil kernel in heater vs virtual-node mode (tasks doubled) for one node and for eight:
# runs ml_stencil for every configuration, REPEATS times, configurations interleaved, and reports
# ms per iteration (min/median over the repeats), the halo share and the checksum (which must be
# the same everywhere: the result does not depend on the decomposition).
#   bench/ml_stencil.sh [BUILD_DIR] [REPEATS] [extra ml_stencil options...]
#   e.g. bench/ml_stencil.sh build 5 --n 128 --iterations 40
# NM_JSON=1 prints the merged rows as JSON instead of the table.
set -euo pipefail
build=${1:-build}
repeats=${2:-5}
shift $(( $# < 2 ? $# : 2 ))
bin="$build/bin"
out=$(mktemp -d "${TMPDIR:-/tmp}/ml_stencil.XXXXXX")
trap 'rm -rf "$out"' EXIT

configs=("1 1x1x1 heater" "2 1x1x1 vn" "8 2x2x2 heater" "16 2x2x2 vn" "8 2x2x2 coprocessor")
for ((i = 0; i < repeats; ++i)); do
  for c in "${configs[@]}"; do
    read -r np shape mode <<< "$c"
    "$bin/bglrun" -np "$np" --shape "$shape" --mode "$mode" --timeout 900 \
      "$bin/ml_stencil" --json "$@" > "$out/run_${i}_${np}_${shape}_${mode}.json"
  done
done

NM_JSON=${NM_JSON:-0} python3 - "$out" "$repeats" <<'EOF'
import glob, json, os, statistics, sys
out, repeats = sys.argv[1], sys.argv[2]
merged = {}
title = None
for path in sorted(glob.glob(out + "/run_*.json")):
    with open(path) as f:
        text = f.read()
    d = json.loads(text[text.index("{"):])
    t = d["tables"][0]
    title = t["title"]
    r = t["rows"][0]
    key = (r["shape"], r["tasks"], r["mode"])
    m = merged.setdefault(key, {"row": r, "ms": [], "halo": [], "checksums": set()})
    m["ms"].append(r["ms_per_iteration"])
    m["halo"].append(r["halo_share"])
    m["checksums"].add(r["checksum"])
rows = []
checksums = set()
for (shape, tasks, mode), m in sorted(merged.items(), key=lambda x: (x[0][0], x[0][1], x[0][2])):
    checksums |= m["checksums"]
    rows.append({"shape": shape, "mode": mode, "tasks": tasks, "task_grid": m["row"]["task_grid"],
                 "repeats": len(m["ms"]), "ms_min": min(m["ms"]),
                 "ms_median": statistics.median(m["ms"]),
                 "halo_share_median": statistics.median(m["halo"]),
                 "checksum": ",".join(sorted(m["checksums"]))})
if os.environ.get("NM_JSON") == "1":
    print(json.dumps({"benchmark": "ml_stencil.sh", "title": title, "rows": rows,
                      "checksums_agree": len(checksums) == 1}, indent=1))
else:
    print(title + f"; {repeats} repeats, configurations interleaved")
    print(f"{'shape':6} {'mode':12} {'tasks':>5} {'grid':>6} {'ms_min':>8} {'ms_median':>9} "
          f"{'halo_share':>10}  checksum")
    for r in rows:
        print(f"{r['shape']:6} {r['mode']:12} {r['tasks']:5d} {r['task_grid']:>6} {r['ms_min']:8.2f} "
              f"{r['ms_median']:9.2f} {r['halo_share_median']:10.3f}  {r['checksum']}")
    print("checksums agree" if len(checksums) == 1 else "CHECKSUMS DIFFER: " + ", ".join(checksums))
EOF
