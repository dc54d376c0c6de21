#!/usr/bin/env bash
# Counts the instructions one 8-byte MPI_Send/MPI_Recv round trip costs each process, by library,
# on Debian's MPICH and on the bgl device: adi3_device/bench/mpi_pingpong_count.c under callgrind
# with N1 and N2 round trips; the difference divided by N2-N1 leaves out start-up and finalize.
# Instruction counts do not drift with the machine's load the way times do, so this shows where
# the device's small-message latency goes (docs/PERFORMANCE.md, "Where the small-message latency
# goes"). The device's ranks sleep instead of spinning (BGL_SPIN=0, BGL_YIELD=0) so
# that polling adds little; Debian's ranks always poll, so compare the process whose messages were
# already there when it asked for them (the smaller count).
#
#   tools/mpi_instructions.sh [--out DIR] [--n1 N] [--n2 N]
#
# Needs valgrind, build/bin/bglrun, the bgl MPICH prefix and Debian's mpich package. Takes a few
# minutes (valgrind runs each rank ~50x slower).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${TMPDIR:-/tmp}/mpi_instructions.$$
n1=2000
n2=12000
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --n1) n1=$2; shift 2 ;;
    --n2) n2=$2; shift 2 ;;
    *) echo "mpi_instructions: unknown option $1" >&2; exit 2 ;;
  esac
done
case "$n1$n2" in *[!0-9]*) echo "mpi_instructions: --n1/--n2 need numbers" >&2; exit 2 ;; esac
[ "$n2" -gt "$n1" ] || { echo "mpi_instructions: --n2 must be larger than --n1" >&2; exit 2; }
command -v valgrind > /dev/null || { echo "mpi_instructions: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
prefix=${BGL_MPICH_PREFIX:-$("$repo/tools/build_mpich.sh" --print-prefix)}
bglrun=${BGLRUN:-$repo/build/bin/bglrun}
[ -x "$prefix/bin/mpicc" ] || { echo "mpi_instructions: no bgl MPICH at $prefix (tools/build_mpich.sh)" >&2; exit 1; }
[ -x "$bglrun" ] || { echo "mpi_instructions: no bglrun at $bglrun (tools/build.sh)" >&2; exit 1; }
mkdir -p "$out"
src=$repo/adi3_device/bench/mpi_pingpong_count.c
mpicc.mpich -O2 -g -o "$out/bench_debian" "$src"
"$prefix/bin/mpicc" -O2 -g -o "$out/bench_bgl" "$src"

for n in "$n1" "$n2"; do
  cg=(valgrind --tool=callgrind --callgrind-out-file="$out/debian.$n.%p")
  timeout 1200 mpiexec.mpich -n 2 "${cg[@]}" "$out/bench_debian" "$n" > "$out/debian.$n.log" 2>&1
  cg=(valgrind --tool=callgrind --callgrind-out-file="$out/bgl.$n.%p")
  BGL_SPIN=0 BGL_YIELD=0 BGL_MPIEXEC=$prefix/bin/mpiexec \
    timeout 1200 "$bglrun" -np 2 --shape 2x1x1 --timeout 1180 --launcher mpiexec \
    "${cg[@]}" "$out/bench_bgl" "$n" > "$out/bgl.$n.log" 2>&1
done

python3 - "$out" "$n1" "$n2" <<'EOF'
import collections, glob, re, subprocess, sys
out, n1, n2 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
trips = n2 - n1

def group(fn, obj):
    if 'libbglml' in obj: return 'bglemu (message + packet layer)'
    if 'libuc' in obj: return 'UCX (ucp + uct)'
    if 'libmpi' in obj:
        if re.search(r'MPIDI_BGL|MPIDI_NM_|^arrival$|^send_done$|^recv_done$', fn): return 'bgl netmod'
        return 'MPICH (CH4, MPIDIG)'
    if 'libc.so' in obj: return 'libc (memcpy, ...)'
    return 'other'

# What a round trip's work is without the polling around it (inclusive counts): the send; for
# Debian posting the receive and UCX's handler for the arriving message; for the device the
# message layer's handler up-call (matching and copy in MPIDIG included).
KEY = {'debian': ['PMPI_Send', 'ucp_tag_recv_nbx', 'ucp_eager_only_handler'],
       'bgl': ['PMPI_Send', 'MPIDI_NM_mpi_irecv', 'bgl_msg_post', 'c_arrival']}

def functions(path, inclusive):
    """(instructions, function, object) per function of a callgrind profile."""
    text = subprocess.run(['callgrind_annotate', '--threshold=100',
                           '--inclusive=' + ('yes' if inclusive else 'no'), path],
                          capture_output=True, text=True).stdout
    for line in text.splitlines():
        m = re.match(r'\s*([\d,]+) \(\s*[\d.]+%\)\s+(?:[^:]*:)?(.*?)(?: \[(.*)\])?$', line)
        if m and 'PROGRAM TOTALS' not in line and '=>' not in line:
            yield int(m.group(1).replace(',', '')), m.group(2), m.group(3) or ''

def costs(path):
    c = collections.Counter()
    for n, fn, obj in functions(path, False):
        c[group(fn, obj)] += n
    return c

def inclusive(path):
    c = collections.Counter()
    for n, fn, _ in functions(path, True):
        for k in KEY['debian'] + KEY['bgl']:
            if re.search(r'(^|::)' + k + r'(\(|$)', fn):
                c[k] = max(c[k], n)
    return c

print(f"instructions per 8-byte round trip and process ({n2} - {n1} round trips)")
for mpi in ('debian', 'bgl'):
    runs = {n: sorted(glob.glob(f'{out}/{mpi}.{n}.[0-9]*')) for n in (n1, n2)}
    for rank, (a, b) in enumerate(zip(runs[n1], runs[n2])):
        ca, cb = costs(a), costs(b)
        total = sum(cb.values()) - sum(ca.values())
        parts = ', '.join(f'{k} {(cb[k] - ca[k]) / trips:.0f}'
                          for k in sorted(cb, key=lambda k: ca[k] - cb[k]) if abs(cb[k] - ca[k]) / trips >= 10)
        print(f'{mpi:7s} process {rank + 1}: {total / trips:6.0f}   ({parts})')
        ia, ib = inclusive(a), inclusive(b)
        print('        ' + ', '.join(f'{k} {(ib[k] - ia[k]) / trips:.0f}' for k in KEY[mpi]))
EOF
