#!/usr/bin/env bash
# Multi-link bandwidth with and without the coprocessor receiving rendezvous data: runs
# ml_multilink (3x3x3 torus, coprocessor mode) alternately with BGL_ML_COPROCESSOR_RECEIVE=1 and
# =0, INVOCATIONS times each, and merges every round of every invocation into one table
# (aggregate MB/s min/median/max, the centre's main-thread CPU share, its main-thread CPU time per
# MB moved - which does not depend on how busy the machine is, unlike the wall-clock figures - and
# the share of its received messages that the coprocessor took).
#   bench/ml_multilink.sh [BUILD_DIR] [INVOCATIONS] [ROUNDS] [extra ml_multilink options...]
#   e.g. bench/ml_multilink.sh build 3 3 --size 1048576 --count 8 --window 4
# NM_JSON=1 prints the merged rows as JSON instead of the table.
set -euo pipefail
build=${1:-build}
invocations=${2:-3}
rounds=${3:-3}
shift $(( $# < 3 ? $# : 3 ))
bin="$build/bin"
out=$(mktemp -d "${TMPDIR:-/tmp}/ml_multilink.XXXXXX")
trap 'rm -rf "$out"' EXIT

for ((i = 0; i < invocations; ++i)); do
  for unit in 1 0; do
    BGL_ML_COPROCESSOR_RECEIVE=$unit "$bin/bglrun" -np 27 --shape 3x3x3 --mode coprocessor \
      --timeout 900 "$bin/ml_multilink" --json --rounds "$rounds" "$@" > "$out/run_${i}_${unit}.json"
  done
done

NM_JSON=${NM_JSON:-0} python3 - "$out" "$invocations" "$rounds" <<'EOF'
import glob, json, os, statistics, sys
out, invocations, rounds = sys.argv[1], sys.argv[2], sys.argv[3]
merged = {}
meta = None
for path in sorted(glob.glob(out + "/run_*.json")):
    with open(path) as f:
        text = f.read()
    d = json.loads(text[text.index("{"):])
    meta = d
    unit = "unit on" if d["coprocessor_receive"] else "unit off"
    for variant, per_k in d["samples"].items():
        for k, s in per_k.items():
            m = merged.setdefault((unit, variant, int(k)),
                                  {"MBps": [], "main_cpu": [], "on_co": [], "us_per_MB": []})
            m["MBps"] += s["MBps"]
            m["main_cpu"] += s["main_cpu"]
            m["on_co"] += s["on_coprocessor"]
            # CPU s / wall s divided by MB / wall s: the centre's main-thread CPU per MB moved.
            m["us_per_MB"] += [1e6 * c / b for c, b in zip(s["main_cpu"], s["MBps"])]
as_json = os.environ.get("NM_JSON") == "1"
say = (lambda *a, **k: None) if as_json else print
say(f"ml_multilink: {meta['bytes']}-byte rendezvous messages, {meta['count']} per link and "
      f"direction, window {meta['window']}; {invocations} invocations x {rounds} rounds per "
      f"setting, alternating BGL_ML_COPROCESSOR_RECEIVE=1/0")
say(f"{'setting':9} {'variant':8} {'links':>5} {'samples':>7} {'MBps_min':>9} {'MBps_median':>11} "
      f"{'MBps_max':>9} {'main_cpu':>8} {'us_per_MB':>9} {'on_coproc':>9}")
rows = []
for (unit, variant, k), m in sorted(merged.items(), key=lambda x: (x[0][0] != "unit on", x[0][1], x[0][2])):
    v = m["MBps"]
    row = {"setting": unit, "variant": variant, "links": k, "samples": len(v),
           "MBps_min": min(v), "MBps_median": statistics.median(v), "MBps_max": max(v),
           "main_cpu_median": statistics.median(m["main_cpu"]),
           "main_cpu_us_per_MB_min": min(m["us_per_MB"]),
           "main_cpu_us_per_MB_median": statistics.median(m["us_per_MB"]),
           "on_coprocessor_median": statistics.median(m["on_co"])}
    rows.append(row)
    say(f"{unit:9} {variant:8} {k:5d} {len(v):7d} {row['MBps_min']:9.1f} {row['MBps_median']:11.1f} "
          f"{row['MBps_max']:9.1f} {row['main_cpu_median']:8.3f} "
          f"{row['main_cpu_us_per_MB_median']:9.0f} {row['on_coprocessor_median']:9.3f}")
if as_json:
    print(json.dumps({"benchmark": "ml_multilink.sh", "bytes": meta["bytes"], "count": meta["count"],
                      "window": meta["window"], "rows": rows}, indent=1))
EOF
