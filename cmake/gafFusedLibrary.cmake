# gaf_add_fused_library(): a model compiled ahead of time by `gaf compile`, as a CMake library.
#
#   gaf_add_fused_library(NAME <name> MODEL <path.onnx | builtin:NAME>
#                         [TARGETS host npu-tile] [SCHEDULES <db.json>] [COMPILE_ARGS <gaf compile options>...])
#
# Per target, at build time runs `gaf compile MODEL --target <target> -o <bindir>/<lib>.gaf --name
# <lib>` (again when the model, the schedule database or gaf change), where <lib> is <name> for
# host and <name>_npu for npu-tile (the NPU tile model: run on the host, the plan runtime's
# simulator counts GM bytes and models time; see PlanRunner::npu_counts), and defines for each:
#   - the STATIC IMPORTED library target <name>: <name>.a (kernels + the Halide runtime), its
#     folder as include directory (#include "<name>.h": the kernel table <name>_kernels), and the
#     plan runtime (runtime/plan_runner.h) as a link dependency — no Halide compiler;
#   - in the caller's scope, <name>_PLAN_FILE (the plan the runtime loads; the weights file is next
#     to it) and <name>_GAF_DIR (the output folder).
# Identical group signatures compile once. TARGETS defaults to host.
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
    if(t STREQUAL "host")
      _gaf_fused_library_for(${ARG_NAME} host)
      set(${ARG_NAME}_PLAN_FILE "${_gaf_plan}" PARENT_SCOPE)
      set(${ARG_NAME}_GAF_DIR "${_gaf_dir}" PARENT_SCOPE)
    elseif(t STREQUAL "npu-tile")
      _gaf_fused_library_for(${ARG_NAME}_npu npu-tile)
      set(${ARG_NAME}_npu_PLAN_FILE "${_gaf_plan}" PARENT_SCOPE)
      set(${ARG_NAME}_npu_GAF_DIR "${_gaf_dir}" PARENT_SCOPE)
    else()
      message(FATAL_ERROR "gaf_add_fused_library(${ARG_NAME}): TARGETS ${t}: expected host or npu-tile")
    endif()
  endforeach()
endfunction()

# One library <lib> for one target; sets _gaf_plan and _gaf_dir in the caller (ARG_* are the
# caller's parsed arguments).
macro(_gaf_fused_library_for lib target)
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/${lib}.gaf")
  file(MAKE_DIRECTORY "${dir}")
  set(outs "${dir}/${lib}.a" "${dir}/${lib}.h" "${dir}/${lib}.plan.json" "${dir}/${lib}.weights")

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
    COMMAND ${gaf_exe} compile "${model}" --target ${target} -o "${dir}" --name "${lib}" ${extra} ${ARG_COMPILE_ARGS}
    DEPENDS ${gaf_exe} ${depends}
    COMMENT "gaf compile ${ARG_MODEL} --target ${target} -> ${lib}.a"
    VERBATIM)
  add_custom_target(${lib}.gaf_compile DEPENDS ${outs})

  add_library(${lib} STATIC IMPORTED GLOBAL)
  add_dependencies(${lib} ${lib}.gaf_compile)
  set_target_properties(${lib} PROPERTIES
    IMPORTED_LOCATION "${dir}/${lib}.a"
    INTERFACE_INCLUDE_DIRECTORIES "${dir}"
    INTERFACE_LINK_LIBRARIES "${runtime}")
  set(_gaf_plan "${dir}/${lib}.plan.json")
  set(_gaf_dir "${dir}")
endmacro()
