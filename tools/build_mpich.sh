#!/usr/bin/env bash
# Builds MPICH 4.0.2 with bglemu's CH4 netmod (adi3_device/netmod/bgl) and installs it into a
# cached prefix. Debian 12, as root or with sudo, non-interactive.
#
#   tools/build_mpich.sh [options]
#     --bglml PATH          libbglml.so to use (default: build it with CMake in build/)
#     --bglml-include DIR   directory with bgl/message_layer/bgl_msg.h, bgl_coll_hooks.h,
#                           bgl_nm_topo.h or bgl_nm_trace.h
#                           (repeatable)
#     --jobs N              make -jN (default: nproc)
#     --prefix DIR          install MPICH into DIR instead of the cache (DIR/bin/mpicc, mpif90,
#                           mpiexec; libbglml.so into DIR/lib). DIR is part of the cache key, so
#                           each prefix has its own build directory in the cache. Made for the
#                           prefix bglemu is installed into (cmake --install build --prefix DIR):
#                           then --bglml and --bglml-include default to DIR's libbglml.so and
#                           headers, and DIR/bin/mpicc and DIR/bin/bglrun are a matched pair.
#     --print-prefix        print the install prefix for the current configuration and exit
#     --force               reconfigure and rebuild from scratch
#     -h, --help
#
# Environment:
#   BGL_CACHE_DIR               cache root (default ~/.cache/bglemu)
#   BGL_MPICH_DATATYPE_ENGINE   dataloop (default) or yaksa (adds ~60 min of 2-core compile time)
#   BGL_MPICH_FORTRAN           value of --enable-fortran (default all: f77, f90 and f08)
#   BGL_MPICH_CONFIGURE_EXTRA   more configure options (part of the cache key)
#
# What it does (each step only when needed, so running it again is cheap):
#   1. installs the build tools it needs (apt-get) and adds a deb-src entry for Debian's mirror;
#   2. fetches MPICH's source with `apt-get source mpich` (4.0.2) into the cache;
#   3. copies it, applies adi3_device/mpich_patches/*.patch (patch -p1, in name order; sources
#      only, never the build system), adds the netmod (src/mpid/ch4/netmod/bgl), one include line
#      in src/mpid/ch4/netmod/Makefile.mk, then maint/gen_subcfg_m4 and autoreconf --no-recursive;
#   4. configures --with-device=ch4:bgl --with-ch4-shmmods=none (all traffic, on-node too, goes
#      through the emulated machine) --enable-yield=sched_yield (MPICH's busy loops outside the
#      netmod, such as the start-up and shutdown barrier of its shared-memory bootstrap, yield
#      instead of spinning: MPICH's Linux default is not to yield, and 1,024 ranks spinning in that
#      barrier on 2 cores took minutes to leave it), builds (make) and installs;
#   5. copies libbglml.so and its headers into the prefix (libmpi.so finds it by rpath), and
#      adi3_device/mpix/mpix.h and mpixf.h (the Blue Gene MPIX_* calls the netmod implements).
# The Fortran wrappers (mpif77, mpif90, mpifort) pass -fallow-argument-mismatch and
# -fallow-invalid-boz to gfortran, as Debian's mpif90.mpich does: programs such as the NAS
# Parallel Benchmarks (randi8.f's BOZ constants) rely on them with gfortran 10 and later.
# The build directory is keyed by a hash of the configuration (the recipe version below, the
# configure options, the MPICH source version, the netmod's Makefile.mk and subconfigure.m4); a
# change of the netmod's .c/.h files or of libbglml's headers only re-copies them and runs make
# (incremental, about a minute); a change of the patches restores the files the previous ones
# touched from the pristine source, applies the new ones and runs make (which then recompiles
# what includes them: for CH4's headers, most of MPICH). Bump `recipe` when a change of the steps below must rebuild.
set -euo pipefail
recipe=2
# What the Fortran wrappers pass to gfortran (and what MPICH's Fortran bindings compile with).
fortran_flags="-fallow-argument-mismatch -fallow-invalid-boz"

# The whole script is one function, read completely before it runs: editing this file while a
# build runs (they take minutes) cannot derail it.
main() {
script=$(readlink -f "${BASH_SOURCE[0]}")
repo=$(cd "$(dirname "$script")/.." && pwd)
netmod_src=$repo/adi3_device/netmod/bgl
patch_dir=$repo/adi3_device/mpich_patches
mpix_dir=$repo/adi3_device/mpix
mpich_version=4.0.2
cache=${BGL_CACHE_DIR:-$HOME/.cache/bglemu}
engine=${BGL_MPICH_DATATYPE_ENGINE:-dataloop}
fortran=${BGL_MPICH_FORTRAN:-all}
extra=${BGL_MPICH_CONFIGURE_EXTRA:-}

bglml=""
includes=()
jobs=$(nproc)
print_prefix=0
force=0
install_prefix=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bglml) bglml=$2; shift 2 ;;
    --bglml-include) includes+=("$2"); shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --prefix) install_prefix=$2; shift 2 ;;
    --prefix=*) install_prefix=${1#--prefix=}; shift ;;
    --print-prefix) print_prefix=1; shift ;;
    --force) force=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$script" | sed -e 's/^# \{0,1\}//' -e '/^set -euo/d'; exit 0 ;;
    *) echo "build_mpich: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

say() { echo "build_mpich: $*"; }
die() { echo "build_mpich: error: $*" >&2; exit 1; }
elapsed() { local s=$(( $(date +%s) - $1 )); printf '%dm%02ds' $((s / 60)) $((s % 60)); }
# CPU time (user + system) of this script's finished children so far, in seconds.
cpu_seconds() { awk '{printf "%d", ($16 + $17) / 100}' /proc/$$/stat; }
timed() {  # label start_seconds start_cpu
  local c=$(( $(cpu_seconds) - $3 ))
  say "  $1 in $(elapsed "$2") wall, $((c / 60))m$(printf '%02d' $((c % 60)))s CPU"
}

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

configure_options=(
  --with-device=ch4:bgl
  --with-ch4-shmmods=none
  --with-datatype-engine="$engine"
  --disable-ch4-netmod-inline
  --disable-static
  --enable-fortran="$fortran"
  --with-pm=hydra
  --with-hwloc=/usr
  --enable-yield=sched_yield
  --without-java
  --no-recursion
)
if [ -n "$install_prefix" ]; then
  case "$install_prefix" in
    /*) ;;
    *) install_prefix=$(pwd)/$install_prefix ;;
  esac
  install_prefix=$(realpath -m "$install_prefix")
fi
# shellcheck disable=SC2206
[ -n "$extra" ] && configure_options+=($extra)

# --- the cache key -------------------------------------------------------------------------
# Structural inputs (a change means a new build directory and a cold build) ...
config_hash=$( {
  echo "recipe $recipe"
  printf '%s\n' "$mpich_version" "${configure_options[@]}"
  echo "fortran flags $fortran_flags"
  # Only with --prefix, so that the default's key (and cache directory) depend on nothing else.
  [ -z "$install_prefix" ] || echo "prefix $install_prefix"
  cat "$netmod_src/Makefile.mk" "$netmod_src/subconfigure.m4"
} | sha256sum | cut -c1-16)
# ... the patches of MPICH's own sources (a change means restore, re-apply and make) ...
patch_files=()
for f in "$patch_dir"/*.patch; do [ -f "$f" ] && patch_files+=("$f"); done
patches_hash=$(cat "${patch_files[@]}" < /dev/null | sha256sum | cut -c1-16)
# ... and the netmod's sources plus the message layer's C headers (a change means make).
source_files() {
  (cd "$netmod_src" && find . -type f \( -name '*.c' -o -name '*.h' \) | LC_ALL=C sort)
}
source_hash=$( {
  echo "$config_hash $patches_hash"
  for f in $(source_files); do echo "$f"; cat "$netmod_src/$f"; done
  cat "$repo/message_layer/include/bgl/message_layer/bgl_msg.h" "$repo/message_layer/include/bgl/message_layer/bgl_ids.h" \
    "$repo/adi3_device/bglml/bgl_coll_hooks.h" \
    "$repo/adi3_device/bglml/bgl_nm_topo.h" "$repo/adi3_device/bglml/bgl_nm_trace.h" \
    "$mpix_dir/mpix.h" "$mpix_dir/mpixf.h"
} | sha256sum | cut -c1-16)

dir=$cache/mpich-$mpich_version-$config_hash
prefix=${install_prefix:-$dir/prefix}
if [ $print_prefix -eq 1 ]; then
  echo "$prefix"
  exit 0
fi

mkdir -p "$cache"
exec 9> "$cache/.build_mpich.lock"
if ! flock -n 9; then
  say "another build_mpich.sh is running; waiting for it"
  flock 9
fi

start=$(date +%s)
say "MPICH $mpich_version with the bgl netmod; configuration $config_hash, sources $source_hash"
say "cache $dir"

# --- libbglml ------------------------------------------------------------------------------
if [ -z "$bglml" ] && [ -n "$install_prefix" ] && [ -f "$install_prefix/lib/libbglml.so" ]; then
  say "using the installed libbglml.so and headers of $install_prefix"
  bglml=$install_prefix/lib/libbglml.so
  [ ${#includes[@]} -gt 0 ] || includes=("$install_prefix/include")
fi
if [ -z "$bglml" ]; then
  bdir=$repo/build
  if [ ! -f "$bdir/build.ninja" ]; then
    say "configuring bglemu in $bdir (for libbglml.so)"
    cmake -S "$repo" -B "$bdir" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
  fi
  say "building libbglml.so (ninja -C $bdir bgl_adi3_device)"
  ninja -C "$bdir" bgl_adi3_device > /dev/null
  bglml=$bdir/lib/libbglml.so
fi
[ -f "$bglml" ] || die "libbglml.so not found at $bglml"
[ ${#includes[@]} -gt 0 ] || includes=("$repo/message_layer/include" "$repo/adi3_device/bglml")

copy_header() {  # file dir: copies file into dir unless it is missing or already there
  [ -f "$1" ] || return 0
  [ "$(readlink -f "$1")" = "$(readlink -f "$2/$(basename "$1")" 2>/dev/null)" ] || cp -f "$1" "$2"
}
install_bglml() {
  mkdir -p "$prefix/lib" "$prefix/include/bgl/message_layer"
  # libbglml.so.1 (the soname) is the file, libbglml.so the link for -lbglml.
  local real
  real=$(readlink -f "$bglml")
  # With --prefix and bglemu installed there, the library may already be the one in the prefix.
  if [ "$real" != "$(readlink -f "$prefix/lib/libbglml.so.1" 2>/dev/null)" ]; then
    cp -f "$real" "$prefix/lib/.libbglml.so.1.new"
    mv -f "$prefix/lib/.libbglml.so.1.new" "$prefix/lib/libbglml.so.1"
  fi
  rm -f "$prefix/lib/libbglml.so"
  ln -s libbglml.so.1 "$prefix/lib/libbglml.so"
  local d
  for d in "${includes[@]}"; do
    copy_header "$d/bgl/message_layer/bgl_msg.h" "$prefix/include/bgl/message_layer/"
    copy_header "$d/bgl/message_layer/bgl_ids.h" "$prefix/include/bgl/message_layer/"
    copy_header "$d/bgl_coll_hooks.h" "$prefix/include/"
    copy_header "$d/bgl_nm_topo.h" "$prefix/include/"
    copy_header "$d/bgl_nm_trace.h" "$prefix/include/"
  done
  [ -f "$prefix/include/bgl/message_layer/bgl_msg.h" ] && [ -f "$prefix/include/bgl/message_layer/bgl_ids.h" ] &&
    [ -f "$prefix/include/bgl_coll_hooks.h" ] &&
    [ -f "$prefix/include/bgl_nm_topo.h" ] && [ -f "$prefix/include/bgl_nm_trace.h" ] ||
    die "bgl_msg.h / bgl_ids.h / bgl_coll_hooks.h / bgl_nm_topo.h / bgl_nm_trace.h not found in ${includes[*]}"
  # The Blue Gene extensions (MPIX_*, implemented in the netmod's bgl_mpix.c) for C and Fortran.
  copy_header "$mpix_dir/mpix.h" "$prefix/include/"
  copy_header "$mpix_dir/mpixf.h" "$prefix/include/"
}

if [ $force -eq 0 ] && [ -x "$prefix/bin/mpicc" ] && [ "$(cat "$dir/.installed" 2>/dev/null)" = "$source_hash" ]; then
  install_bglml
  say "up to date: $prefix ($(elapsed "$start"))"
  exit 0
fi

# --- tools and source ----------------------------------------------------------------------
need=(dpkg-dev autoconf automake libtool m4 perl make gcc g++ gfortran python3 libhwloc-dev)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

pristine=$cache/src/mpich-$mpich_version
if [ ! -f "$pristine/configure" ]; then
  # deb-src for the mirror of the first deb822 'Types: deb' entry (or sources.list line).
  if ! grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    uri=$(grep -hsA3 '^Types: deb' /etc/apt/sources.list.d/*.sources | awk '/^URIs:/ {print $2; exit}')
    [ -n "$uri" ] || uri=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
    [ -n "$uri" ] || uri=http://deb.debian.org/debian
    say "adding deb-src for $uri bookworm (/etc/apt/sources.list.d/bglemu-deb-src.sources)"
    $sudo tee /etc/apt/sources.list.d/bglemu-deb-src.sources > /dev/null <<EOF
Types: deb-src
URIs: $uri
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  fi
  if ! apt-cache showsrc mpich 2>/dev/null | grep -q "^Version: $mpich_version"; then
    say "apt-get update (source index)"
    $sudo apt-get update -qq
  fi
fi
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
fi
if [ ! -f "$pristine/configure" ]; then
  say "apt-get source mpich ($mpich_version) into $cache/src"
  tmp=$(mktemp -d "$cache/src.XXXXXX")
  (cd "$tmp" && apt-get source -qq mpich > apt-source.log 2>&1) ||
    { cat "$tmp/apt-source.log" >&2; die "apt-get source mpich failed"; }
  [ -f "$tmp/mpich-$mpich_version/configure" ] || die "apt-get source did not give mpich-$mpich_version"
  mkdir -p "$cache/src"
  rm -rf "$pristine"
  mv "$tmp/mpich-$mpich_version" "$pristine"
  rm -rf "$tmp"
fi

# --- prepare the tree ----------------------------------------------------------------------
src=$dir/src
build=$dir/build
logs=$dir/logs

# Restores the files that the previously applied patches changed (listed in .patched-files) from
# the pristine source, then applies adi3_device/mpich_patches/*.patch.
apply_patches() {
  local f
  if [ -f "$dir/.patched-files" ]; then
    while read -r f; do cp -f "$pristine/$f" "$src/$f"; done < "$dir/.patched-files"
  fi
  mkdir -p "$logs"
  for f in "${patch_files[@]}"; do
    say "applying $(basename "$f")"
    patch -d "$src" -p1 --forward --quiet < "$f" > "$logs/patch.log" 2>&1 ||
      { cat "$logs/patch.log" >&2; die "$(basename "$f") does not apply to MPICH $mpich_version"; }
  done
  for f in "${patch_files[@]}"; do sed -n 's#^+++ b/\([^[:space:]]*\).*#\1#p' "$f"; done |
    LC_ALL=C sort -u > "$dir/.patched-files"
  echo "$patches_hash" > "$dir/.patches"
}
if [ $force -eq 1 ] || [ "$(cat "$dir/.configured" 2>/dev/null)" != "$config_hash" ]; then
  incremental=0
  say "cold build: copying the source"
  rm -rf "$dir"
  mkdir -p "$dir" "$logs"
  cp -a "$pristine" "$src"
  apply_patches
  cp -a "$netmod_src" "$src/src/mpid/ch4/netmod/bgl"
  echo 'include $(top_srcdir)/src/mpid/ch4/netmod/bgl/Makefile.mk' >> "$src/src/mpid/ch4/netmod/Makefile.mk"
  say "regenerating the build system (maint/gen_subcfg_m4, autoreconf -v --no-recursive)"
  t=$(date +%s); tc=$(cpu_seconds)
  (cd "$src" && ./maint/gen_subcfg_m4 && autoreconf -v --no-recursive) > "$logs/autoreconf.log" 2>&1 ||
    { tail -30 "$logs/autoreconf.log" >&2; die "autoreconf failed (log: $logs/autoreconf.log)"; }
  timed "done" "$t" "$tc"
  install_bglml
  mkdir -p "$build"
  say "configure ${configure_options[*]} --prefix=$prefix --with-bgl=$prefix"
  t=$(date +%s); tc=$(cpu_seconds)
  (cd "$build" && "$src/configure" --prefix="$prefix" --with-bgl="$prefix" "${configure_options[@]}" \
      CC=gcc CXX=g++ FC=gfortran F77=gfortran \
      FFLAGS="$fortran_flags" FCFLAGS="$fortran_flags") > "$logs/configure.log" 2>&1 ||
    { tail -40 "$logs/configure.log" >&2; die "configure failed (log: $logs/configure.log)"; }
  timed "done" "$t" "$tc"
  echo "$config_hash" > "$dir/.configured"
else
  incremental=1
  say "incremental build: updating the netmod's sources"
  install_bglml
  [ "$(cat "$dir/.patches" 2>/dev/null)" = "$patches_hash" ] || apply_patches
  dst=$src/src/mpid/ch4/netmod/bgl
  # Copy only what changed, so that make rebuilds only what depends on it.
  for f in $(cd "$netmod_src" && find . -type f | LC_ALL=C sort); do
    if ! cmp -s "$netmod_src/$f" "$dst/$f"; then
      say "  $f"
      mkdir -p "$(dirname "$dst/$f")"
      cp -f "$netmod_src/$f" "$dst/$f"
    fi
  done
  for f in $(cd "$dst" && find . -type f \( -name '*.c' -o -name '*.h' \)); do
    [ -e "$netmod_src/$f" ] || { say "  removing $f"; rm -f "$dst/$f"; }
  done
fi

# --- build and install ---------------------------------------------------------------------
say "make -j$jobs (log: $logs/make.log)"
t=$(date +%s); tc=$(cpu_seconds)
(cd "$build" && make -j"$jobs") > "$logs/make.log" 2>&1 ||
  { grep -E 'error|Error' "$logs/make.log" | head -30 >&2; die "make failed (log: $logs/make.log)"; }
timed "done" "$t" "$tc"
t=$(date +%s); tc=$(cpu_seconds)
lib=$(cd "$build/lib/.libs" 2>/dev/null && ls libmpi.so.12.*.* 2>/dev/null | head -1 || true)
if [ "$incremental" = 1 ] && [ -n "$lib" ] && [ -f "$prefix/lib/$lib" ]; then
  # Only the netmod changed, so only libmpi did: install it without libtool's relink of
  # everything (the build tree's library is the installed one: same RUNPATH, same content).
  say "installing $lib"
  cp -f "$build/lib/.libs/$lib" "$prefix/lib/.$lib.new" && mv -f "$prefix/lib/.$lib.new" "$prefix/lib/$lib"
else
  say "make install"
  (cd "$build" && make install) > "$logs/install.log" 2>&1 ||
    { tail -30 "$logs/install.log" >&2; die "make install failed (log: $logs/install.log)"; }
fi
timed "done" "$t" "$tc"
install_bglml
echo "$source_hash" > "$dir/.installed"
[ -n "$install_prefix" ] || ln -sfn "$dir" "$cache/mpich-current"
timed "installed $prefix" "$start" 0
say "  mpicc:   $prefix/bin/mpicc"
say "  mpif90:  $prefix/bin/mpif90"
say "  mpiexec: $prefix/bin/mpiexec (bglrun --launcher mpiexec uses it)"
}

main "$@"
exit
