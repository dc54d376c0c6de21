#!/usr/bin/env bash
# Counts the instructions per packet of the packet layer's streaming path beside its floor, a
# Boost.Lockfree spsc_queue of 256-byte slots: bench/pl_stream --self (rank 0 sends N packets
# through its own local FIFO, inject then next and receive, and pushes and pops N slots of a ring
# of its own) under callgrind, collecting only self_packets and self_floor, so start-up and the
# barrier are left out. One packet is one inject and one receive: the work of both cores of a
# stream. Prints instructions per packet for both and the packet path's top functions (exclusive).
# See docs/PERFORMANCE.md, "Streaming to a nearest neighbour".
#
#   tools/pl_instructions.sh [--build DIR] [--out DIR] [--n N] [--size BYTES] [--top K]
#
# Needs valgrind and DIR/bin/{bglrun,pl_stream} (a Release build). Takes about half a minute.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$repo/build
out=${TMPDIR:-/tmp}/pl_instructions.$$
n=200000
size=256
top=12
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --top) top=$2; shift 2 ;;
    *) echo "pl_instructions: unknown option $1" >&2; exit 2 ;;
  esac
done
case "$n$size$top" in *[!0-9]*) echo "pl_instructions: --n/--size/--top need numbers" >&2; exit 2 ;; esac
command -v valgrind > /dev/null || { echo "pl_instructions: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
for b in bglrun pl_stream; do
  [ -x "$build/bin/$b" ] || { echo "pl_instructions: no $build/bin/$b" >&2; exit 1; }
done
mkdir -p "$out"
rm -f "$out"/callgrind.*
timeout 600 "$build/bin/bglrun" -np 2 --shape 2x1x1 --timeout 580 \
  valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.%p" \
  '--toggle-collect=*self_packets*' '--toggle-collect=*self_floor*' \
  "$build/bin/pl_stream" --self "$n" --size "$size" --rounds 1 > "$out/log" 2>&1 ||
  { cat "$out/log" >&2; exit 1; }

python3 - "$out" "$n" "$top" <<'PY'
import collections, glob, re, subprocess, sys
out, n, top = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def profile(path, inclusive):
    text = subprocess.run(['callgrind_annotate', '--threshold=100',
                           '--inclusive=' + ('yes' if inclusive else 'no'), '--auto=no', path],
                          capture_output=True, text=True).stdout
    c = collections.Counter()
    for line in text.splitlines():
        m = re.match(r'\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*?)(?: \[(.*)\])?$', line)
        if m and 'PROGRAM TOTALS' not in line and '=>' not in line:
            name = re.sub(r'^\S*\.(?:cpp|hpp|h|c|S):', '', m.group(2))  # without the file
            name = re.sub(r'^(?:void |bool )', '', name)
            c[re.sub(r'\((?!anonymous).*', '', name)] += int(m.group(1).replace(',', ''))
    return c

profiles = [(p, profile(p, True)) for p in glob.glob(f'{out}/callgrind.[0-9]*')]
path, inc = max(profiles, key=lambda pc: sum(pc[1].values()))
def find(name):
    return max((v for k, v in inc.items() if name in k), default=0)
packet, floor = find('self_packets'), find('self_floor')
print(f'instructions per packet: packet layer {packet / n:.0f}, floor {floor / n:.0f}, '
      f'ratio {packet / max(floor, 1):.2f} ({n} packets)')
ex = profile(path, False)
for k, v in sorted(ex.items(), key=lambda kv: -kv[1])[:top]:
    print(f'  {v / n:8.1f}  {k}')
PY
