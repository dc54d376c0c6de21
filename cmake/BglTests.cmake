# Test programs and their tests.
#
# BGL_TEST_PROGRAMS chooses which test programs a build compiles: `all` (the default), or a list of
# labels, and then only the programs with a test carrying one of them. tools/test.sh's full run
# builds `mpi;heavy` in the optimised build (what it runs there; the rest runs under the
# sanitizers) and `unit` in the ThreadSanitizer build. A program left out is not built by `ninja`
# and has no tests in ctest.
set(BGL_TEST_PROGRAMS all CACHE STRING "Test programs to build: all, or the labels of their tests")

# bgl_test_selected(<out-var> <labels>...): whether BGL_TEST_PROGRAMS builds a program whose tests
# carry these labels.
function(bgl_test_selected out)
  set(selected FALSE)
  if(BGL_TEST_PROGRAMS STREQUAL "all")
    set(selected TRUE)
  endif()
  foreach(label IN LISTS ARGN)
    if(label IN_LIST BGL_TEST_PROGRAMS)
      set(selected TRUE)
    endif()
  endforeach()
  set(${out} ${selected} PARENT_SCOPE)
endfunction()

# bgl_test_helper(<target>...): programs that tests start (task programs run by bglrun). They are
# built with the test programs that depend on them (add_dependencies), not on their own.
function(bgl_test_helper)
  set_target_properties(${ARGN} PROPERTIES EXCLUDE_FROM_ALL ON)
endfunction()

# bgl_discover_tests(<target> TIMEOUT <seconds> [LABELS <label>...] [PREFIX <prefix>]
#                    [TEST_LIST <name>] [HEAVY <gtest filter>] [HEAVY_TIMEOUT <seconds>]
#                    [PROPERTIES <name> <value>...])
#
# gtest_discover_tests for a test program whose tests carry LABELS (and PROPERTIES), or, when
# BGL_TEST_PROGRAMS leaves the program out, takes it out of the build. TEST_LIST names the tests
# of a second discovery of the same program (another PREFIX and environment). The tests matching
# HEAVY (a GoogleTest filter: "Suite.Test:Other.*") are labelled `heavy` as well. Heavy tests are
# the scale and stress runs (a million packets, 512 tasks on 2 cores, 1 GiB messages):
# tools/test.sh runs them in the optimised build and leaves them out of the sanitizer builds (ctest
# -LE heavy), where they would only spend CI's time; smaller tests of the same code run there.
function(bgl_discover_tests target)
  cmake_parse_arguments(arg "" "TIMEOUT;PREFIX;TEST_LIST;HEAVY;HEAVY_TIMEOUT" "LABELS;PROPERTIES"
                        ${ARGN})
  set(labels ${arg_LABELS})
  if(arg_HEAVY)
    list(APPEND labels heavy)
  endif()
  bgl_test_selected(selected ${labels})
  if(NOT selected)
    set_target_properties(${target} PROPERTIES EXCLUDE_FROM_ALL ON)
    return()
  endif()
  if(BGL_SANITIZE)
    # The tests themselves (*_test.cpp) at -O0: they compile in half the time of -O1 with the
    # sanitizers. The code under test keeps -O1, in the libraries and in the sources of tools that
    # a test program compiles in (bglrun's call-site merge, whose speed a test checks).
    get_target_property(sources ${target} SOURCES)
    list(FILTER sources INCLUDE REGEX "_test\\.cpp$")
    set_source_files_properties(${sources} PROPERTIES COMPILE_OPTIONS -O0)
  endif()
  if(NOT arg_TEST_LIST)
    set(arg_TEST_LIST ${target}_TESTS)
  endif()
  if(NOT arg_HEAVY_TIMEOUT)
    set(arg_HEAVY_TIMEOUT ${arg_TIMEOUT})
  endif()
  set(common TEST_PREFIX "${arg_PREFIX}" DISCOVERY_TIMEOUT 60)
  set(filter "")
  if(arg_HEAVY)
    set(filter TEST_FILTER "-${arg_HEAVY}")
    gtest_discover_tests(${target} ${common} TEST_FILTER "${arg_HEAVY}"
                         TEST_LIST ${arg_TEST_LIST}_heavy
                         PROPERTIES TIMEOUT ${arg_HEAVY_TIMEOUT} ${arg_PROPERTIES})
    bgl_label_tests(${arg_TEST_LIST}_heavy ${arg_LABELS} heavy)
  endif()
  gtest_discover_tests(${target} ${common} ${filter} TEST_LIST ${arg_TEST_LIST}
                       PROPERTIES TIMEOUT ${arg_TIMEOUT} ${arg_PROPERTIES})
  bgl_label_tests(${arg_TEST_LIST} ${arg_LABELS})
endfunction()

# bgl_label_tests(<test list> <label>...): gives the tests of a discovered list these labels.
# gtest_discover_tests's PROPERTIES cannot carry a list, so a file ctest reads after the list's
# own sets them.
function(bgl_label_tests list)
  if(NOT ARGN)
    return()
  endif()
  set(file ${CMAKE_CURRENT_BINARY_DIR}/${list}_labels.cmake)
  file(WRITE ${file} "if(${list})\n  set_tests_properties(\${${list}} PROPERTIES LABELS \"${ARGN}\")\n"
                     "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${file})
endfunction()
