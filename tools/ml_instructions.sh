#!/usr/bin/env bash
# Counts the instructions the message and packet layers spend on one 1-byte one-packet message:
# bench/ml_pingpong's "self" measurement (rank 0 posts to itself through its local FIFO, then
# advances until the message arrived and its send completed) under callgrind with N1 and N2
# messages; the difference divided by N2-N1 leaves out start-up. Only the instructions inside
# MessageLayer::post() and MessageLayer::advance() are collected (--toggle-collect), so the
# interleaved raw packet floor does not mix in. One message is one send and one receive: the
# work of one process per round trip of a ping-pong. Prints the total and the top functions
# (exclusive counts). See docs/PERFORMANCE.md, "Where the small-message latency goes".
# With --pingpong: the real ping-pong between rank 0 and rank 1 instead (per round trip, rank 0's
# profile); both ranks spin in advance() while they wait, so the count includes a varying number
# of empty polls and is less exact than the default.
#
#   tools/ml_instructions.sh [--pingpong] [--build DIR] [--out DIR] [--n1 N] [--n2 N] [--top K]
#
# Needs valgrind and DIR/bin/{bglrun,ml_pingpong} (a Release build with -g: instruction counts
# depend on the optimisation level). Takes about a minute.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$repo/build
out=${TMPDIR:-/tmp}/ml_instructions.$$
n1=2000
n2=12000
top=25
only=self
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --n1) n1=$2; shift 2 ;;
    --n2) n2=$2; shift 2 ;;
    --top) top=$2; shift 2 ;;
    --pingpong) only=protocols; shift ;;
    *) echo "ml_instructions: unknown option $1" >&2; exit 2 ;;
  esac
done
case "$n1$n2$top" in *[!0-9]*) echo "ml_instructions: --n1/--n2/--top need numbers" >&2; exit 2 ;; esac
[ "$n2" -gt "$n1" ] || { echo "ml_instructions: --n2 must be larger than --n1" >&2; exit 2; }
command -v valgrind > /dev/null || { echo "ml_instructions: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
for b in bglrun ml_pingpong; do
  [ -x "$build/bin/$b" ] || { echo "ml_instructions: no $build/bin/$b" >&2; exit 1; }
done
mkdir -p "$out"
for n in "$n1" "$n2"; do
  rm -f "$out/self.$n".*
  timeout 600 "$build/bin/bglrun" -np 2 --shape 2x1x1 --timeout 580 \
    valgrind --tool=callgrind --callgrind-out-file="$out/self.$n.%p" \
    '--toggle-collect=bgl::message_layer::MessageLayer::post(*' '--toggle-collect=bgl::message_layer::MessageLayer::advance(*' \
    "$build/bin/ml_pingpong" --only "$only" --protocol one_packet --rounds 1 --iterations "$n" \
    --warmup 0 --batch "$n" > "$out/self.$n.log" 2>&1
done

python3 - "$out" "$n1" "$n2" "$top" "$only" <<'EOF'
import collections, glob, re, subprocess, sys
out, n1, n2, top, only = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
messages = n2 - n1

def functions(path):
    text = subprocess.run(['callgrind_annotate', '--threshold=100', '--inclusive=no', '--auto=no', path],
                          capture_output=True, text=True).stdout
    c = collections.Counter()
    for line in text.splitlines():
        m = re.match(r'\s*([\d,]+) \(\s*[\d.]+%\)\s+(?:[^:]*:)?(.*?)(?: \[(.*)\])?$', line)
        if m and 'PROGRAM TOTALS' not in line and '=>' not in line:
            name = re.sub(r'\(.*', '', m.group(2))  # without the parameter list
            c[name] += int(m.group(1).replace(',', ''))
    return c

def rank0(n):
    # rank 0 is the process that did the work: the larger profile
    files = glob.glob(f'{out}/self.{n}.[0-9]*')
    return max(files, key=lambda f: sum(functions(f).values()))

a, b = functions(rank0(n1)), functions(rank0(n2))
total = (sum(b.values()) - sum(a.values())) / messages
what = ('one-packet message (send + receive)' if only == 'self'
        else 'one-packet ping-pong round trip, rank 0')
print(f'instructions per {what}, {n2} - {n1}: {total:.0f}')
diff = {k: (b[k] - a[k]) / messages for k in b}
for k, v in sorted(diff.items(), key=lambda kv: -kv[1])[:top]:
    if v >= 1: print(f'  {v:7.1f}  {k}')
EOF
