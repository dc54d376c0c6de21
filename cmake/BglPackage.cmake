# The Debian package (cpack -G DEB in the build directory): everything `cmake --install` installs,
# under /usr. Depends: the shared libraries the tools and libbglml load, as dpkg-shlibdeps finds
# their Debian 12 packages (libspdlog1.10-fmt9, libfmt9, libfabric1, libstdc++6, libgcc-s1,
# libc6, with minimum versions). Recommends: what
# find_package(bglemu) and the examples need to build programs of one's own (headers of Boost,
# spdlog, fmt, nlohmann-json and libfabric, a compiler, CMake, pkg-config).
set(CPACK_PACKAGE_NAME bglemu)
set(CPACK_PACKAGE_VENDOR "bglemu")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "emulated IBM Blue Gene/L message-passing stack")
set(CPACK_PACKAGE_DESCRIPTION
    "bglemu emulates the networks and message-passing software of IBM's Blue Gene/L (3D torus,\n\
collective network, global interrupts, message layer) on a workstation or a small cluster.\n\
It ships the bglrun launcher, bglmap, the C++ libraries (find_package(bglemu)), the message\n\
layer's C ABI (pkg-config bglemu), the documentation and the examples.")
set(CPACK_PACKAGE_CONTACT "bglemu developers <bglemu@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
    "g++, cmake (>= 3.25), pkg-config, libboost-dev (>= 1.74), libspdlog-dev, libfmt-dev, nlohmann-json3-dev, libfabric-dev")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "mpich, gfortran")
# Only what the install rules name goes into the package (not the tests' or benchmarks' programs).
set(CPACK_INSTALL_CMAKE_PROJECTS "${CMAKE_BINARY_DIR};${PROJECT_NAME};ALL;/")
include(CPack)
