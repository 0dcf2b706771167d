// gaf report --target npu-tile: the NPU tile model's fused-vs-unfused comparison as text (the
// seed's table: fusion kind, count, modeled time saved per fusion, total) and as JSON.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "generators/npu_profiler.h"

namespace gaf::cli {

std::string npu_report_text(const FusionPlan& plan, const NpuPlanModel& m);
nlohmann::json npu_report_json(const FusionPlan& plan, const NpuPlanModel& m);

}  // namespace gaf::cli
