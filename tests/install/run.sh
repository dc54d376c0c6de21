#!/usr/bin/env bash
# Tests bglemu as users get it: installed, away from its source and build trees.
#
#   tests/install/run.sh prefix --build-dir DIR [--keep]
#       cmake --install DIR --prefix <scratch>/prefix, then (see "the installed tree" below)
#   tests/install/run.sh deb --build-dir DIR [--keep]
#       cpack -G DEB in DIR; checks the package's declared dependencies and contents, that apt-get
#       would install it (apt-get install --simulate), installs it with dpkg into an empty scratch
#       root (its own dpkg database; as a non-root user: dpkg -x), then "the installed tree" with
#       <root>/usr; then dpkg --purge and checks that no file of it is left
#
# The installed tree: no text file of it names the source or build tree; then, in a private mount
# namespace where the source tree and the build tree are covered by empty, unreadable tmpfs mounts
# (unshare --mount; as a non-root user with --map-root-user), builds tests/install/cxx (C++,
# find_package(bglemu)), tests/install/c (C, pkg-config bglemu) and the installed examples
# (<prefix>/share/bglemu/examples, find_package) from copies, and runs them through the installed
# bglrun on an emulated 2x2x2 torus: packets between every pair of tasks, messages of every
# protocol around a ring (C++ and C, heater and virtual-node mode), the installed torus_demo and
# the rebuilt one, halo_exchange and the installed coll_bench; every task checks the data it got.
# Also bglrun/bglmap --help and --version, the man pages and pkg-config's view of the package.
#
# Needs cmake, ninja or make, a C and C++ compiler, pkg-config, util-linux's unshare (and for deb:
# cpack, dpkg-deb, dpkg-shlibdeps). Each bglrun job has a timeout; ctest gives the whole a bound.
set -euo pipefail

die() { echo "install test: FAILED: $*" >&2; exit 1; }
say() { echo "install test: $*"; }

# --- inside the private mount namespace ------------------------------------------------------
if [ "${1:-}" = "--inside" ]; then
  scratch=$2 prefix=$3
  shift 3
  for hidden in "$@"; do
    mount -t tmpfs -o size=64k,mode=000 bglemu-hidden "$hidden" ||
      die "cannot cover $hidden with a tmpfs"
    [ -z "$(ls -A "$hidden" 2> /dev/null)" ] || die "$hidden is still readable"
    say "hidden: $hidden"
  done
  cd "$scratch"
  export PATH=$prefix/bin:$PATH
  export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
  generator=()
  command -v ninja > /dev/null && generator=(-G Ninja)

  check_job() {  # name expected_ok_lines bglrun-arguments...
    local name=$1 want=$2
    shift 2
    local out
    out=$(bglrun --timeout 60 "$@" 2>&1) || { echo "$out"; die "$name: bglrun exited non-zero"; }
    local got
    got=$(grep -c ': ok,' <<< "$out" || true)
    [ "$got" = "$want" ] || { echo "$out"; die "$name: $got of $want tasks reported ok"; }
    ! grep -q FAILED <<< "$out" || { echo "$out"; die "$name: a task reported FAILED"; }
    say "$name: $got tasks ok"
  }

  [ "$(command -v bglrun)" = "$prefix/bin/bglrun" ] || die "bglrun is not the installed one"
  # Outputs are captured before grep -q reads them: with pipefail, a writer that grep -q leaves
  # early dies of SIGPIPE and fails the pipe.
  grep -q "^bglrun (bglemu) " <<< "$(bglrun --version)" || die "bglrun --version"
  grep -q "^bglmap (bglemu) " <<< "$(bglmap --version)" || die "bglmap --version"
  grep -q "^bglreport (bglemu) " <<< "$(bglreport --version)" || die "bglreport --version"
  grep -q -- "--mpich-prefix" <<< "$(bglrun --help)" || die "bglrun --help lacks --mpich-prefix"
  grep -q -- "--check" <<< "$(bglmap --help)" || die "bglmap --help"
  for tool in bglrun bglmap bglreport; do
    page=$(ls "$prefix"/share/man/man1/$tool.1* 2> /dev/null | head -1)
    [ -n "$page" ] || die "no man page for $tool"
    grep -q '^\.TH' <<< "$(zcat -f "$page")" || die "$page is not a man page"
  done
  version=$(pkg-config --modversion bglemu) || die "pkg-config does not find bglemu"
  say "pkg-config bglemu $version: $(pkg-config --cflags --libs bglemu)"
  grep -q ": ok;" <<< "$(bglmap -np 8 --shape 2x2x2 \
    --mapfile "$prefix/share/bglemu/examples/map-2x2x2.txt" --check)" ||
    die "bglmap --check of the installed example mapping"

  say "building the C++ project (find_package(bglemu))"
  cmake -S src/cxx -B build-cxx "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" > cxx.log 2>&1 || { cat cxx.log; die "cmake of the C++ project"; }
  cmake --build build-cxx >> cxx.log 2>&1 || { cat cxx.log; die "building the C++ project"; }
  say "building the C project (pkg-config bglemu)"
  make -C src/c > c.log 2>&1 || { cat c.log; die "building the C project"; }
  say "building the installed examples (find_package(bglemu))"
  cmake -S "$prefix/share/bglemu/examples" -B build-examples "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" > examples.log 2>&1 ||
    { cat examples.log; die "cmake of the installed examples"; }
  cmake --build build-examples >> examples.log 2>&1 ||
    { cat examples.log; die "building the installed examples"; }

  check_job "packets, C++ (find_package)" 8 -np 8 --shape 2x2x2 build-cxx/packet_ring
  check_job "messages, C++ (find_package)" 8 -np 8 --shape 2x2x2 build-cxx/message_ring
  check_job "messages, C++, virtual-node mode" 16 -np 16 --shape 2x2x2 --mode vn \
    build-cxx/message_ring
  check_job "messages, C (pkg-config)" 8 -np 8 --shape 2x2x2 src/c/c_ring
  check_job "messages, C, virtual-node mode" 16 -np 16 --shape 2x2x2 --mode vn src/c/c_ring
  for demo in "$prefix/libexec/bglemu/torus_demo" build-examples/torus_demo; do
    out=$(bglrun --timeout 60 -np 8 --shape 2x2x2 \
      --mapfile "$prefix/share/bglemu/examples/map-2x2x2.txt" "$demo" 2>&1) ||
      { echo "$out"; die "$demo"; }
    [ "$(grep -c 'received 7 packets\|received 8 packets' <<< "$out")" = 8 ] ||
      { echo "$out"; die "$demo: not every rank received its greetings"; }
    say "torus_demo ($demo): 8 ranks received their packets"
  done
  out=$(bglrun --timeout 60 -np 8 --shape 2x2x2 build-examples/halo_exchange --iterations 5 2>&1) ||
    { echo "$out"; die "halo_exchange"; }
  grep -q "^halo_exchange: 5 iterations" <<< "$out" || { echo "$out"; die "halo_exchange output"; }
  say "halo_exchange (built from the installed examples) ran"
  if [ -x "$prefix/libexec/bglemu/coll_bench" ]; then
    out=$(bglrun --timeout 60 -np 8 --shape 2x2x2 "$prefix/libexec/bglemu/coll_bench" \
      --ops allreduce --sizes 64 --rounds 1 2>&1) || { echo "$out"; die "coll_bench"; }
    grep -q "^allreduce .* tree " <<< "$out" || { echo "$out"; die "coll_bench output"; }
    say "coll_bench (installed) ran"
  fi
  exit 0
fi

# --- outside: install, then run the part above in a private mount namespace -----------------
mode=${1:-}
[ "$mode" = prefix ] || [ "$mode" = deb ] || { sed -n '2,/^set -euo/p' "$0" | sed -e 's/^# \{0,1\}//' -e '/^set -euo/d' >&2; exit 2; }
shift
build=""
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build=$(cd "$2" && pwd); shift 2 ;;
    --keep) keep=1; shift ;;
    *) die "unknown option $1" ;;
  esac
done
[ -n "$build" ] && [ -f "$build/CMakeCache.txt" ] || die "--build-dir: not a configured build directory"
repo=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
scratch=$(mktemp -d /tmp/bglemu-install-test.XXXXXX)
cleanup() {
  if [ $keep -eq 1 ]; then say "kept $scratch"; else rm -rf "$scratch"; fi
}
trap cleanup EXIT

if [ "$mode" = prefix ]; then
  prefix=$scratch/prefix
  say "cmake --install $build --prefix $prefix"
  cmake --install "$build" --prefix "$prefix" > "$scratch/install.log" 2>&1 ||
    { cat "$scratch/install.log"; die "cmake --install"; }
else
  say "cpack -G DEB in $build"
  (cd "$build" && cpack -G DEB -B "$scratch/package") > "$scratch/cpack.log" 2>&1 ||
    { cat "$scratch/cpack.log"; die "cpack -G DEB"; }
  deb=$(ls "$scratch"/package/bglemu_*.deb)
  say "package: $(basename "$deb")"
  depends=$(dpkg-deb -f "$deb" Depends)
  say "Depends: $depends"
  names=" $(sed -e 's/ ([^)]*)//g' -e 's/,/ /g' <<< "$depends") "
  for p in libspdlog1.10-fmt9 libfmt9 libfabric1 libstdc++6 libgcc-s1 libc6; do
    [[ "$names" == *" $p "* ]] || die "Depends lacks $p"
  done
  dpkg-deb -c "$deb" > "$scratch/contents"
  for f in usr/bin/bglrun usr/bin/bglmap usr/lib/libbglml.so.1 usr/lib/pkgconfig/bglemu.pc \
           usr/lib/cmake/bglemu/bglemuConfig.cmake usr/include/bgl/message_layer/bgl_msg.h \
           usr/share/man/man1/bglrun.1 usr/libexec/bglemu/torus_demo \
           usr/share/bglemu/examples/CMakeLists.txt usr/share/doc/bglemu/README.md; do
    grep -q "\./$f" "$scratch/contents" || die "the package lacks /$f"
  done
  if command -v apt-get > /dev/null; then
    apt-get install --simulate --no-install-recommends "$deb" > "$scratch/apt.log" 2>&1 ||
      { cat "$scratch/apt.log"; die "apt-get install --simulate $deb"; }
    grep -q "^Inst bglemu " "$scratch/apt.log" || { cat "$scratch/apt.log"; die "apt-get would not install bglemu"; }
    say "apt-get install --simulate: would install bglemu"
  fi
  root=$scratch/root
  if [ "$(id -u)" -eq 0 ]; then
    # A real dpkg install into an empty root (its own database; the dependencies are not there,
    # apt-get's simulation above checked them). The maintainer scripts (ldconfig) run outside.
    mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
    touch "$root/var/lib/dpkg/status"
    dpkg --root="$root" --force-depends --force-script-chrootless -i "$deb" > "$scratch/dpkg.log" 2>&1 ||
      { cat "$scratch/dpkg.log"; die "dpkg -i into $root"; }
    [ "$(dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Status}' bglemu)" = "install ok installed" ] ||
      die "dpkg does not list bglemu as installed in $root"
    say "dpkg -i into a scratch root: installed"
  else
    dpkg -x "$deb" "$root"
    say "dpkg -x into a scratch root (not root: no dpkg database)"
  fi
  prefix=$root/usr
fi

leaks=$(grep -rlI -e "$repo" -e "$build" "$prefix" || true)
[ -z "$leaks" ] || die "installed files name the source or build tree: $leaks"
mkdir -p "$scratch/src"
cp -r "$repo/tests/install/cxx" "$repo/tests/install/c" "$scratch/src/"
cp "$0" "$scratch/run.sh"
hide=("$repo")
case "$build/" in "$repo"/*) ;; *) hide+=("$build") ;; esac
unshare_args=(--mount --propagation private)
[ "$(id -u)" -eq 0 ] || unshare_args+=(--map-root-user)
unshare "${unshare_args[@]}" bash "$scratch/run.sh" --inside "$scratch" "$prefix" "${hide[@]}"

if [ "$mode" = deb ]; then
  if [ -d "$root/var/lib/dpkg" ]; then
    dpkg --root="$root" --force-script-chrootless --purge bglemu > "$scratch/dpkg.log" 2>&1 ||
      { cat "$scratch/dpkg.log"; die "dpkg --purge bglemu"; }
    left=$(cd "$root" && find . -mindepth 1 -not -path './var' -not -path './var/lib' \
      -not -path './var/lib/dpkg' -not -path './var/lib/dpkg/*')
    [ -z "$left" ] || die "dpkg --purge left files behind: $left"
    ! dpkg-query --admindir="$root/var/lib/dpkg" -W bglemu > /dev/null 2>&1 ||
      die "dpkg still lists bglemu after --purge"
    say "dpkg --purge: removed every file"
  else
    rm -rf "$root"
    [ ! -e "$root" ] || die "the unpacked package could not be removed"
    say "removed the unpacked package"
  fi
fi
say "passed ($mode)"
