# gaf_add_fused_library(): a model compiled ahead of time by `gaf compile`, as a CMake library.
#
#   gaf_add_fused_library(NAME <name> MODEL <path.onnx | builtin:NAME>
#                         [TARGETS host] [SCHEDULES <db.json>] [COMPILE_ARGS <gaf compile options>...])
#
# At build time runs `gaf compile MODEL --target host -o <bindir>/<name>.gaf --name <name>` (again
# when the model, the schedule database or gaf change) and defines:
#   - the STATIC IMPORTED library target <name>: <name>.a (kernels + the Halide runtime), its
#     folder as include directory (#include "<name>.h": the kernel table <name>_kernels), and the
#     plan runtime (runtime/plan_runner.h) as a link dependency — no Halide compiler;
#   - in the caller's scope, <name>_PLAN_FILE (the plan the runtime loads; the weights file is next
#     to it) and <name>_GAF_DIR (the output folder).
# Identical group signatures compile once. Only the host target is built so far (npu-tile: not yet).
function(gaf_add_fused_library)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "" "NAME;MODEL;SCHEDULES" "TARGETS;COMPILE_ARGS")
  if(NOT ARG_NAME OR NOT ARG_MODEL)
    message(FATAL_ERROR "gaf_add_fused_library: NAME and MODEL are required")
  endif()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "gaf_add_fused_library(${ARG_NAME}): unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_TARGETS)
    set(ARG_TARGETS host)
  endif()
  foreach(t IN LISTS ARG_TARGETS)
    if(NOT t STREQUAL "host")
      message(FATAL_ERROR "gaf_add_fused_library(${ARG_NAME}): TARGETS ${t}: only host is built so far")
    endif()
  endforeach()

  set(dir "${CMAKE_CURRENT_BINARY_DIR}/${ARG_NAME}.gaf")
  file(MAKE_DIRECTORY "${dir}")
  set(outs "${dir}/${ARG_NAME}.a" "${dir}/${ARG_NAME}.h" "${dir}/${ARG_NAME}.plan.json" "${dir}/${ARG_NAME}.weights")

  set(depends "")
  set(model "${ARG_MODEL}")
  if(NOT model MATCHES "^builtin:")
    get_filename_component(model "${model}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND depends "${model}")
  endif()
  set(extra "")
  if(ARG_SCHEDULES)
    get_filename_component(db "${ARG_SCHEDULES}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND depends "${db}")
    list(APPEND extra --schedules "${db}")
  endif()

  if(TARGET gaf::gaf)
    set(gaf_exe gaf::gaf)
    set(runtime gaf::gaf_plan_runtime)
  else()
    set(gaf_exe gaf)
    set(runtime gaf_plan_runtime)
  endif()

  add_custom_command(
    OUTPUT ${outs}
    COMMAND ${gaf_exe} compile "${model}" --target host -o "${dir}" --name "${ARG_NAME}" ${extra} ${ARG_COMPILE_ARGS}
    DEPENDS ${gaf_exe} ${depends}
    COMMENT "gaf compile ${ARG_MODEL} -> ${ARG_NAME}.a"
    VERBATIM)
  add_custom_target(${ARG_NAME}.gaf_compile DEPENDS ${outs})

  add_library(${ARG_NAME} STATIC IMPORTED GLOBAL)
  add_dependencies(${ARG_NAME} ${ARG_NAME}.gaf_compile)
  set_target_properties(${ARG_NAME} PROPERTIES
    IMPORTED_LOCATION "${dir}/${ARG_NAME}.a"
    INTERFACE_INCLUDE_DIRECTORIES "${dir}"
    INTERFACE_LINK_LIBRARIES "${runtime}")
  set(${ARG_NAME}_PLAN_FILE "${dir}/${ARG_NAME}.plan.json" PARENT_SCOPE)
  set(${ARG_NAME}_GAF_DIR "${dir}" PARENT_SCOPE)
endfunction()
