#!/usr/bin/env bash
# Runs MPICH's own test suite (test/mpi of the same MPICH 4.0.2 source) against the bgl device,
# every test through bglrun (which starts the ranks and serves their PMI) on an emulated
# partition, or against Debian's stock MPICH for comparison, and summarises pass/fail per
# directory.
#
#   tools/mpich_testsuite.sh [--dirs "pt2pt coll"] [--maxnp 4] [--modes "heater vn"]
#                            [--timeout S] [--out DIR] [--reference] [--expect FILE]
#                            [--build-only] [--hosts N]
#
# --dirs       test/mpi subdirectories (default: pt2pt coll)
# --maxnp      largest job; tests written for more ranks run with this many (runtests caps
#              their np; default 4)
# --modes      node modes of the emulated partition, one run per mode (default heater)
# --timeout    per-test limit in seconds; caps the testlists' own (longer) limits (default 60)
# --out        results directory (default $TMPDIR/mpich_testsuite.PID)
# --reference  run the same tests with Debian's MPICH (mpiexec.mpich, package mpich) instead
# --expect     file of known failures, one "dir/program np  reason" per line: the script exits 1
#              when a test fails that is not listed there (default: no list, never fails)
# --hosts N    spread every job of 2 or more ranks over N emulated hosts on loopback (bglrun
#              --hosts N: one bglrun per host under Hydra, packets through the libfabric agents);
#              jobs with fewer ranks than hosts run on one host (a host without ranks is an error)
# --build-only configure the suite and build the directories' programs, run nothing (tools/test.sh
#              does this beside other work: configure is one long single-threaded step)
# Results: DIR/summary.txt; per directory and mode DIR/<mode>/<dir>.tap (TAP), .log (runtests'
# output), .results ("dir/program np pass|fail|xfail|skip" per test, for comparisons),
# stale-segments.log (segments of killed launchers that `bglrun --cleanup` removed before a test,
# so that bglrun's warning about them does not end up in the test's output).
#
# The suite is configured and built once per MPI (in the MPICH cache, next to the prefix; for
# Debian's MPICH in $BGL_CACHE_DIR/mpich-testsuite-debian).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dirs="pt2pt coll"
maxnp=4
modes=heater
timeout=60
reference=0
expect=""
build_only=0
hosts=1
out=${TMPDIR:-/tmp}/mpich_testsuite.$$
while [ $# -gt 0 ]; do
  case "$1" in
    --dirs) dirs=$2; shift 2 ;;
    --maxnp) maxnp=$2; shift 2 ;;
    --modes|--mode) modes=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --build-only) build_only=1; shift ;;
    --hosts) hosts=$2; shift 2 ;;
    --reference) reference=1; shift ;;
    --expect) expect=$(readlink -f "$2"); shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed -e 's/^# \{0,1\}//' -e '/^set -euo/d'; exit 0 ;;
    *) echo "mpich_testsuite: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$timeout" in ''|*[!0-9]*) echo "mpich_testsuite: --timeout needs whole seconds, got '$timeout'" >&2; exit 2 ;; esac
case "$maxnp" in ''|*[!0-9]*) echo "mpich_testsuite: --maxnp needs a number, got '$maxnp'" >&2; exit 2 ;; esac
case "$hosts" in ''|*[!0-9]*|0) echo "mpich_testsuite: --hosts needs a positive number, got '$hosts'" >&2; exit 2 ;; esac
[ -z "$expect" ] || [ -f "$expect" ] || { echo "mpich_testsuite: --expect file not found" >&2; exit 2; }

cache_root=${BGL_CACHE_DIR:-$HOME/.cache/bglemu}
src=$cache_root/src/mpich-4.0.2/test/mpi
bglrun=${BGLRUN:-$repo/build/bin/bglrun}
if [ $reference -eq 1 ]; then
  command -v mpicc.mpich > /dev/null ||
    { echo "mpich_testsuite: Debian's mpich is not installed (apt-get install mpich libmpich-dev)" >&2; exit 1; }
  tdir=$cache_root/mpich-testsuite-debian
  modes=debian
else
  prefix=${BGL_MPICH_PREFIX:-$("$repo/tools/build_mpich.sh" --print-prefix)}
  [ -x "$prefix/bin/mpicc" ] || { echo "mpich_testsuite: no bgl MPICH at $prefix (tools/build_mpich.sh)" >&2; exit 1; }
  [ -x "$bglrun" ] || { echo "mpich_testsuite: no bglrun at $bglrun (tools/build.sh)" >&2; exit 1; }
  tdir=$(dirname "$prefix")/testsuite
fi
[ -f "$src/configure" ] || { echo "mpich_testsuite: no MPICH source at $src (tools/build_mpich.sh fetches it)" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)

# A private configured copy of test/mpi built with the MPI under test.
if [ ! -f "$tdir/Makefile" ]; then
  echo "mpich_testsuite: configuring test/mpi in $tdir"
  mkdir -p "$tdir"
  mpi=${prefix:-}
  if [ $reference -eq 1 ]; then
    # Debian's wrappers have .mpich suffixes; a bin/ of links gives configure the usual names.
    mkdir -p "$tdir/mpibin/bin"
    for t in mpicc mpicxx mpif77 mpifort mpif90 mpiexec; do ln -sf "/usr/bin/$t.mpich" "$tdir/mpibin/bin/$t"; done
    mpi=$tdir/mpibin
  fi
  (cd "$tdir" && "$src/configure" --with-mpi="$mpi" --disable-perftest --disable-ft-tests \
     --disable-spawn --disable-cxx --disable-fortran FFLAGS=-fallow-argument-mismatch \
     FCFLAGS=-fallow-argument-mismatch) > "$out/configure.log" 2>&1 ||
    { tail -20 "$out/configure.log" >&2; rm -f "$tdir/Makefile"; exit 1; }
fi

# The mpiexec runtests calls: bglrun with the job's mode, or Debian's mpiexec; both with the
# per-test limit capped at --timeout (runtests passes the testlist's limit in MPIEXEC_TIMEOUT).
make_wrapper() {  # mode file stale-segment-log
  local launcher cleanup=""
  if [ "$1" = debian ]; then
    launcher='exec env "${env_args[@]}" MPIEXEC_TIMEOUT=$t /usr/bin/mpiexec.mpich -n "$np" "$@"'
  else
    launcher="exec env \"\${env_args[@]}\" \"$bglrun\" -np \"\$np\" --mode $1 --timeout \"\$t\" --launcher mpiexec \"\$@\""
    if [ "$hosts" -gt 1 ]; then
      # Over several hosts bglrun reports the placement on stderr (a header line and a line per
      # host), which runtests would take for the test's output: it is taken out.
      launcher="[ \"\$np\" -ge $hosts ] && exec env \"\${env_args[@]}\" \"$bglrun\" --hosts $hosts -np \"\$np\" --mode $1 --timeout \"\$t\" --launcher mpiexec \"\$@\" 2> >(awk -v n=$hosts 'skip > 0 { skip--; next } /^bglrun: placement \\(/ { skip = n; next } { print; fflush() }' >&2)
$launcher"
    fi
    # Segments of launchers killed earlier (by anyone) would make bglrun warn into the test's
    # output, which runtests compares with "No Errors": remove them first, into a log instead.
    cleanup="removed=\$(\"$bglrun\" --cleanup 2>&1) || true
case \"\$removed\" in *' removed 0 '*) ;; *) echo \"\$(date -u +%H:%M:%S) before \$*: \$removed\" >> \"$3\" ;; esac"
  fi
  cat > "$2" <<EOF
#!/usr/bin/env bash
# runtests calls: mpiexec -n N [-genv NAME VALUE ...] ./program [args]
np=1; env_args=()
while [ \$# -gt 0 ]; do
  case "\$1" in
    -n|-np) np=\$2; shift 2 ;;
    -genv) env_args+=("\$2=\$3"); shift 3 ;;
    -*) shift ;;
    *) break ;;
  esac
done
t=\${MPIEXEC_TIMEOUT:-$timeout}
[ "\$t" -le $timeout ] 2> /dev/null || t=$timeout
$cleanup
$launcher
EOF
  chmod +x "$2"
}

summary=$out/summary.txt
: > "$summary"
unexpected=0
what=$([ $reference -eq 1 ] && echo "Debian's MPICH $(dpkg-query -W -f='${Version}' mpich)" || echo "bgl device ($prefix)")
[ $hosts -gt 1 ] && [ $reference -eq 0 ] && what="$what over $hosts emulated hosts"
echo "# MPICH 4.0.2 test/mpi on $what, maxnp $maxnp, per-test limit ${timeout}s, $(date -u +%Y-%m-%dT%H:%MZ)" | tee -a "$summary"
for d in $dirs; do
  [ -d "$tdir/$d" ] || { echo "mpich_testsuite: no test directory $d" >&2; exit 2; }
  echo "== $d: building" >&2
  make -C "$tdir/$d" -k -j"$(nproc)" > "$out/$d.build.log" 2>&1 || true
done
[ $build_only -eq 0 ] || { echo "mpich_testsuite: built $dirs in $tdir" >&2; exit 0; }
for mode in $modes; do
  mkdir -p "$out/$mode"
  make_wrapper "$mode" "$out/$mode/mpiexec" "$out/$mode/stale-segments.log"
  for d in $dirs; do
    echo "== $d ($mode): running" >&2
    start=$(date +%s)
    (cd "$tdir/$d" && MPITEST_TIMEOUT=$timeout perl ../runtests -srcdir="$src/$d" -tests=testlist \
        -mpiexec="$out/$mode/mpiexec" -maxnp="$maxnp" -tapfile="$out/$mode/$d.tap") \
      > "$out/$mode/$d.log" 2>&1 || true
    # one line per test: "dir/program np result"
    awk -v d="$d" '
      /^ok / || /^not ok / {
        line = $0; sub(/ # time=.*/, "", line)
        res = /^ok / ? "pass" : "fail"
        # runtests skips the xfail tests of the testlists ("# SKIP xfail tests disabled") and marks
        # those it runs anyway with "# TODO"; both count as expected failures, not as skips
        if (line ~ /# SKIP xfail tests disabled/ || line ~ /# TODO/) res = "xfail"
        else if (line ~ /# SKIP/) res = "skip"
        # runtests leaves the TAP test number empty: "ok  - ./prog np"
        sub(/^(not )?ok *[0-9]* *- */, "", line); sub(/ +#.*/, "", line)
        n = split(line, f, " "); prog = f[1]; sub(/^\.\//, "", prog)
        print d "/" prog, f[2], res
      }' "$out/$mode/$d.tap" > "$out/$mode/$d.results"
    read -r pass fail xfail skip < <(awk '{c[$3]++} END {print c["pass"]+0, c["fail"]+0, c["xfail"]+0, c["skip"]+0}' \
      "$out/$mode/$d.results")
    printf '%-8s %-10s pass %4d  fail %4d  xfail %3d  skip %3d  (%ds)\n' "$mode" "$d" "$pass" "$fail" \
      "$xfail" "$skip" $(( $(date +%s) - start )) | tee -a "$summary"
    while read -r name np res; do
      [ "$res" = fail ] || continue
      known=""
      [ -n "$expect" ] && known=$(awk -v t="$name" -v n="$np" '$1 == t && $2 == n {$1 = $2 = ""; sub(/^ +/, ""); print; exit}' "$expect")
      if [ -n "$known" ]; then
        echo "    failed (known: $known): $name $np" | tee -a "$summary"
      else
        echo "    FAILED: $name $np  (output: $out/$mode/$d.tap)" | tee -a "$summary"
        unexpected=$((unexpected + 1))
      fi
    done < "$out/$mode/$d.results"
  done
done
for mode in $modes; do
  [ -s "$out/$mode/stale-segments.log" ] &&
    echo "# $mode: segments of killed launchers removed before $(wc -l < "$out/$mode/stale-segments.log") test(s): $out/$mode/stale-segments.log" | tee -a "$summary"
done
echo "# details: $out" | tee -a "$summary"
if [ -n "$expect" ]; then
  echo "mpich_testsuite: $unexpected unexpected failure(s)" | tee -a "$summary"
  [ $unexpected -eq 0 ]
fi
