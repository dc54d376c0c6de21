# bgl_discover_tests(TARGET LABEL <label> TIMEOUT <seconds> [PREFIX <prefix>]
#                    [HEAVY <gtest filter>] [HEAVY_TIMEOUT <seconds>])
#
# gtest_discover_tests for a test program whose tests carry LABEL, with the tests matching HEAVY
# (a GoogleTest filter: "Suite.Test:Other.*") labelled `heavy` as well. Heavy tests are the scale
# and stress runs (a million packets, 512 tasks on 2 cores, 1 GiB messages): tools/test.sh runs
# them in the optimised build and leaves them out of the sanitizer builds (ctest -LE heavy), where
# they would only spend CI's time; smaller tests of the same code run there.
function(bgl_discover_tests target)
  cmake_parse_arguments(arg "" "LABEL;TIMEOUT;PREFIX;HEAVY;HEAVY_TIMEOUT" "" ${ARGN})
  if(NOT arg_HEAVY)
    gtest_discover_tests(${target} TEST_PREFIX "${arg_PREFIX}" DISCOVERY_TIMEOUT 60
                         PROPERTIES TIMEOUT ${arg_TIMEOUT} LABELS ${arg_LABEL})
    return()
  endif()
  if(NOT arg_HEAVY_TIMEOUT)
    set(arg_HEAVY_TIMEOUT ${arg_TIMEOUT})
  endif()
  gtest_discover_tests(${target} TEST_PREFIX "${arg_PREFIX}" DISCOVERY_TIMEOUT 60
                       TEST_FILTER "-${arg_HEAVY}"
                       PROPERTIES TIMEOUT ${arg_TIMEOUT} LABELS ${arg_LABEL})
  # PROPERTIES cannot carry a list, so the two labels are set by a file ctest reads afterwards.
  gtest_discover_tests(${target} TEST_PREFIX "${arg_PREFIX}" DISCOVERY_TIMEOUT 60
                       TEST_FILTER "${arg_HEAVY}" TEST_LIST ${target}_heavy
                       PROPERTIES TIMEOUT ${arg_HEAVY_TIMEOUT})
  set(labels ${CMAKE_CURRENT_BINARY_DIR}/${target}_heavy_labels.cmake)
  file(WRITE ${labels} "if(${target}_heavy)\n  set_tests_properties(\${${target}_heavy} "
                       "PROPERTIES LABELS \"${arg_LABEL};heavy\")\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${labels})
endfunction()
