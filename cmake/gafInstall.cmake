# `cmake --install <build> --prefix DIR`: the gaf CLI, the static libraries, the public headers and
# the CMake package, so that an out-of-tree project can `find_package(gaf)` with
# CMAKE_PREFIX_PATH=DIR and get
#   gaf::gaf              the CLI (gaf_add_fused_library runs it)
#   gaf::gaf_engine       the Engine and everything under it (an app that loads, plans, runs)
#   gaf::gaf_plan_runtime runs plans compiled by `gaf compile` (no Halide compiler)
#   gaf::rule_plugin      headers only, for rule plugins (engine/rule_plugin.h): a plugin's calls
#                         resolve to the loading executable, so it must not link the libraries
include(GNUInstallDirs)

add_library(gaf_rule_plugin INTERFACE)
target_include_directories(gaf_rule_plugin INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}> $<INSTALL_INTERFACE:include>)
target_link_libraries(gaf_rule_plugin INTERFACE Halide::Halide nlohmann_json::nlohmann_json)
set_target_properties(gaf_rule_plugin PROPERTIES EXPORT_NAME rule_plugin)

# What a rule plugin and an app using the Engine include, and what those headers include.
set(GAF_PUBLIC_HEADERS
  runtime/tensor.h runtime/tensor_io.h runtime/float16.h runtime/sym_expr.h runtime/npu_sim.h runtime/npu_target.h
  runtime/plan_runner.h runtime/decode_loop.h runtime/token_sampler.h
  fusion/ir/graph.h fusion/ir/builder.h
  fusion/ops/registry.h fusion/ops/op_builder.h fusion/ops/math.h
  fusion/frontend/passes.h
  fusion/planner/pattern.h fusion/planner/rule.h fusion/planner/rule_patterns.h
  fusion/planner/custom_rule.h fusion/planner/kernel_spec.h fusion/planner/plan.h fusion/planner/plan_profile.h fusion/planner/planner.h
  fusion/report/report.h
  schedules/host_params.h schedules/npu_params.h schedules/schedule_db.h
  generators/custom_rules.h generators/custom_algorithm.h generators/aot_compiler.h
  generators/executable.h generators/group_kernel.h generators/node_kernel.h
  generators/reference_executor.h
  engine/engine.h engine/model_source.h engine/rule_plugin.h)
foreach(h IN LISTS GAF_PUBLIC_HEADERS)
  get_filename_component(dir "${h}" DIRECTORY)
  install(FILES "${PROJECT_SOURCE_DIR}/${h}" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/${dir}")
endforeach()

install(TARGETS gaf gaf_engine gaf_frontend gaf_generators gaf_models gaf_planner gaf_report gaf_ops gaf_ir
                gaf_runtime gaf_tensor gaf_plan_runtime gaf_npu_sim gaf_rule_plugin
        EXPORT gafTargets
        RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}")
set(GAF_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/gaf")
install(EXPORT gafTargets NAMESPACE gaf:: DESTINATION "${GAF_INSTALL_CMAKEDIR}")

# The same config template as the build tree's, with the libraries' own dependencies.
set(GAF_CONFIG_DEPENDENCIES "find_dependency(Protobuf)\nfind_dependency(ONNX)\nfind_dependency(spdlog)")
set(GAF_FUSED_LIBRARY_CMAKE "\${CMAKE_CURRENT_LIST_DIR}/gafFusedLibrary.cmake")
configure_file(cmake/gafConfig.cmake.in "${PROJECT_BINARY_DIR}/install/gafConfig.cmake" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/install/gafConfig.cmake" cmake/gafFusedLibrary.cmake
        DESTINATION "${GAF_INSTALL_CMAKEDIR}")
