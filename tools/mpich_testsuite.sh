#!/usr/bin/env bash
# Runs MPICH's own test suite (test/mpi of the same MPICH source) against the bgl device, every
# test through bglrun (and so through Hydra's mpiexec), and summarises pass/fail per directory.
#
#   tools/mpich_testsuite.sh [--dirs "pt2pt coll"] [--maxnp 4] [--mode heater|coprocessor|vn]
#                            [--out DIR] [--timeout S] [--reference]
#
# --dirs     test/mpi subdirectories (default: pt2pt coll)
# --maxnp    largest job (tests that need more ranks are skipped; default 4)
# --mode     node mode of the emulated partition (default heater)
# --timeout  per-test limit in seconds (default 180, MPICH's)
# --reference  run the same tests with Debian's MPICH (mpiexec.mpich) instead, for comparison
# Results: DIR/summary.txt, DIR/<dir>.tap (TAP), DIR/<dir>.log (runtests' output).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dirs="pt2pt coll"
maxnp=4
mode=heater
timeout=180
reference=0
out=${TMPDIR:-/tmp}/mpich_testsuite.$$
while [ $# -gt 0 ]; do
  case "$1" in
    --dirs) dirs=$2; shift 2 ;;
    --maxnp) maxnp=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --reference) reference=1; shift ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed -e 's/^# \{0,1\}//' -e '/^set -euo/d' >&2; exit 2 ;;
  esac
done

prefix=${BGL_MPICH_PREFIX:-$("$repo/tools/build_mpich.sh" --print-prefix)}
[ -x "$prefix/bin/mpicc" ] || { echo "no bgl MPICH at $prefix (tools/build_mpich.sh)" >&2; exit 1; }
cache=$(dirname "$prefix")
src=$cache/src/test/mpi
bglrun=${BGLRUN:-$repo/build/bin/bglrun}
mkdir -p "$out"
out=$(cd "$out" && pwd)

if [ $reference -eq 1 ]; then
  mpi=/usr
  tdir=$cache/testsuite-debian
  command -v mpicc.mpich > /dev/null || { echo "Debian's mpich is not installed" >&2; exit 1; }
else
  mpi=$prefix
  tdir=$cache/testsuite
fi

# A private configured copy of test/mpi built with the MPI under test.
if [ ! -f "$tdir/Makefile" ]; then
  echo "mpich_testsuite: configuring test/mpi in $tdir"
  mkdir -p "$tdir"
  if [ $reference -eq 1 ]; then
    # Debian's wrappers have .mpich suffixes; a bin/ of links gives configure the usual names.
    mkdir -p "$tdir/mpibin/bin"
    for t in mpicc mpicxx mpif77 mpifort mpiexec; do ln -sf "/usr/bin/$t.mpich" "$tdir/mpibin/bin/$t"; done
    mpi=$tdir/mpibin
  fi
  (cd "$tdir" && "$src/configure" --with-mpi="$mpi" --disable-perftest --disable-ft-tests \
     --disable-spawn --disable-cxx FFLAGS=-fallow-argument-mismatch FCFLAGS=-fallow-argument-mismatch) \
    > "$out/configure.log" 2>&1 || { tail -20 "$out/configure.log" >&2; exit 1; }
fi

# mpiexec for runtests: bglrun with the job's mode, or Debian's mpiexec.
wrapper=$out/mpiexec
if [ $reference -eq 1 ]; then
  ln -sf /usr/bin/mpiexec.mpich "$wrapper"
else
  cat > "$wrapper" <<EOF
#!/usr/bin/env bash
# runtests calls: mpiexec -n N [mpiexec args] ./program [args]
np=1; env_args=()
while [ \$# -gt 0 ]; do
  case "\$1" in
    -n|-np) np=\$2; shift 2 ;;
    -genv) env_args+=("\$2=\$3"); shift 3 ;;
    -*) shift ;;
    *) break ;;
  esac
done
exec env "\${env_args[@]}" "$bglrun" -np "\$np" --mode "$mode" --timeout "\${MPIEXEC_TIMEOUT:-$timeout}" \\
  --launcher mpiexec "\$@"
EOF
  chmod +x "$wrapper"
fi

summary=$out/summary.txt
: > "$summary"
echo "# MPICH 4.0.2 test/mpi, $( [ $reference -eq 1 ] && echo "Debian's MPICH" || echo "bgl device, --mode $mode"), maxnp $maxnp, $(date -u +%Y-%m-%dT%H:%MZ)" | tee -a "$summary"
for d in $dirs; do
  echo "== $d: building"
  make -C "$tdir/$d" -k -j"$(nproc)" > "$out/$d.build.log" 2>&1 || true
  echo "== $d: running"
  start=$(date +%s)
  (cd "$tdir/$d" && MPITEST_TIMEOUT=$timeout perl ../runtests -srcdir="$src/$d" -tests=testlist \
      -mpiexec="$wrapper" -maxnp="$maxnp" -tapfile="$out/$d.tap" -showprogress) \
    > "$out/$d.log" 2>&1 || true
  pass=$(grep -c '^ok ' "$out/$d.tap" || true)
  xfail=$(grep -c '^ok .*# TODO\|^not ok .*# TODO' "$out/$d.tap" || true)
  fail=$(grep '^not ok ' "$out/$d.tap" | grep -vc '# TODO\|# SKIP' || true)
  skip=$(grep -c '# SKIP' "$out/$d.tap" || true)
  printf '%-10s pass %4d  fail %4d  xfail/todo %3d  skip %3d  (%ds)\n' "$d" "$pass" "$fail" "$xfail" "$skip" \
    $(( $(date +%s) - start )) | tee -a "$summary"
  grep '^not ok ' "$out/$d.tap" | grep -v '# TODO\|# SKIP' | sed "s/^/    $d: /" | tee -a "$summary" || true
done
echo "# details: $out" | tee -a "$summary"
