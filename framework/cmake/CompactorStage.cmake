# compactor_add_stage(<name> SOURCES <files…> [OUTPUT_DIRECTORY <dir>])
#
# Builds the stage plugin compactor_stage_<name>.so as a MODULE library: hidden visibility (only
# the COMPACTOR_PLUGIN entry point is exported), linked against the shared framework library and
# shared Boost, never static copies. The build fingerprint is stamped by the compiler itself:
# compactor/build_fingerprint.hpp turns the compiler's and libraries' version macros into the
# entry symbol's name, so a plugin built with anything else cannot be mistaken for a match.
# In-tree stages land in <build>/plugins, where the CLI finds them. The sources see the name and
# kind as COMPACTOR_BUILD_NAME and COMPACTOR_BUILD_KIND, so COMPACTOR_STAGE("<name>", …) (and its
# summarizer and checker forms) refuse to compile under another name: the name is spelled once in
# the C++ source, and this call must agree with it.
function(_compactor_add_plugin kind name target caller)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "${caller}: SOURCES is required")
  endif()
  set(install_it FALSE)
  if(NOT ARG_OUTPUT_DIRECTORY)
    set(ARG_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/plugins)
    set(install_it TRUE)  # test fixtures name their own folder and are never installed
  endif()
  add_library(${target} MODULE ${ARG_SOURCES})
  if(install_it)
    install(TARGETS ${target} LIBRARY DESTINATION lib/compactor/plugins)
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME ${target}
    LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY}
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    # No RUNPATH: the host has loaded the framework and the libraries it shares with its plugins
    # before any plugin, and a plugin's own search path must never reach the working folder.
    BUILD_WITH_INSTALL_RPATH ON
    INSTALL_RPATH "")
  target_link_libraries(${target} PRIVATE compactor::framework)
  target_compile_definitions(${target} PRIVATE COMPACTOR_BUILD_KIND="${kind}" COMPACTOR_BUILD_NAME="${name}")
endfunction()

function(compactor_add_stage name)
  _compactor_add_plugin(stage ${name} compactor_stage_${name} "compactor_add_stage(${name})" ${ARGN})
endfunction()

# compactor_add_summarizer(<kind> SOURCES <files…> [OUTPUT_DIRECTORY <dir>]): the same, for a
# summarizer backend found as compactor_summarizer_<kind>.so (`summarizer: {kind: <kind>}`).
function(compactor_add_summarizer kind)
  _compactor_add_plugin(summarizer ${kind} compactor_summarizer_${kind} "compactor_add_summarizer(${kind})" ${ARGN})
endfunction()

# compactor_add_checker(<name> SOURCES <files…> [OUTPUT_DIRECTORY <dir>]): the same, for a checker
# found as compactor_checker_<name>.so when `checkers.enabled` names it.
function(compactor_add_checker name)
  _compactor_add_plugin(checker ${name} compactor_checker_${name} "compactor_add_checker(${name})" ${ARGN})
endfunction()
