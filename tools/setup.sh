#!/usr/bin/env bash
# Installs bglemu's build and test dependencies from Debian's packages. Idempotent: does nothing
# when everything is already installed. Needs root (or sudo) on Debian 12.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libboost-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev
  libfabric-dev libfabric-bin
  libdw-dev  # bglrun: the collectives' call sites by function and file:line (elfutils' libdwfl)
  libhwloc-dev  # bglrun: the host's topology, discovered once for all MPI ranks
  mpich iproute2 jq
  gnuplot-nox  # bench/coll_plot.sh
  chromium libpng-dev  # the run report's browser test (tests/report_browser_test.cpp)
  clang-format
  help2man  # the tools' man pages (built with them, installed by cmake --install)
  # MPICH with the bgl device (tools/build_mpich.sh; it also adds a deb-src entry for the source)
  dpkg-dev autoconf automake libtool m4 perl make gfortran python3
  # Debian's stock MPICH: the reference of tools/mpi_compare.sh and tools/mpich_testsuite.sh
  mpich libmpich-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages are installed"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
