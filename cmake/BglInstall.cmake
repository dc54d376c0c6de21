# Installation: libraries as imported targets bglemu::<name> (find_package(bglemu)), their public
# headers, a pkg-config file for C users of libbglml, the tools, man pages, documentation and the
# examples' sources. Layout and lookup order: docs/CONFIGURATION.md, "Installing bglemu".
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(BGL_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/bglemu)
set(BGL_INSTALL_EXAMPLESDIR ${CMAKE_INSTALL_DATADIR}/bglemu/examples)

# bgl_install_library(<target> <name> [HEADERS <dir>]): exports <target> as bglemu::<name> (with
# the in-tree alias of the same name, so that code builds alike in and out of the tree) and
# installs the headers under <dir> (the component's include/ by default; NO_HEADERS: none).
function(bgl_install_library target name)
  cmake_parse_arguments(arg "NO_HEADERS" "HEADERS" "" ${ARGN})
  add_library(bglemu::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  install(TARGETS ${target} EXPORT bglemuTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  if(arg_NO_HEADERS)
    return()
  endif()
  if(NOT arg_HEADERS)
    set(arg_HEADERS ${CMAKE_CURRENT_SOURCE_DIR}/include/)
  endif()
  install(DIRECTORY ${arg_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")
endfunction()

# bgl_install_tool(<target>...): a user tool, installed into bin/ with a man page (help2man, from
# the tool's --help and --version) when help2man is there.
find_program(BGL_HELP2MAN help2man)
# Sanitized builds are not installed (and their tools' exit-time checks would not belong in a man
# page build), so they leave the pages out.
if(BGL_HELP2MAN AND NOT BGL_SANITIZE)
  option(BGL_MAN_PAGES "Generate and install man pages of the tools (needs help2man)" ON)
else()
  option(BGL_MAN_PAGES "Generate and install man pages of the tools (needs help2man)" OFF)
endif()
function(bgl_install_tool target description)
  install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  if(NOT BGL_MAN_PAGES)
    return()
  endif()
  if(NOT BGL_HELP2MAN)
    message(FATAL_ERROR "BGL_MAN_PAGES is set but help2man is not installed (apt-get install help2man)")
  endif()
  set(page ${CMAKE_BINARY_DIR}/man/${target}.1)
  add_custom_command(OUTPUT ${page}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
    COMMAND ${BGL_HELP2MAN} --no-info --section 1 --name "${description}"
            --source "bglemu ${PROJECT_VERSION}" --output ${page} $<TARGET_FILE:${target}>
    DEPENDS ${target}
    COMMENT "Man page of ${target} (help2man)")
  add_custom_target(${target}_man ALL DEPENDS ${page})
  install(FILES ${page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endfunction()
