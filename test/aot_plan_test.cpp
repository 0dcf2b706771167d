// AotPlan: the plan file as one typed value — round trip through JSON, field-path errors, the
// cross-checks of validate() and the kernel table hash (no compiler: a plan written by hand).
#include <gtest/gtest.h>

#include "error_text.h"

#include <nlohmann/json.hpp>

#include "runtime/aot_plan.h"

using namespace gaf;
using nlohmann::json;

namespace {

// x [2, 64] -> g0 (k0: x, w -> h) -> g1 (k1: h -> y), h and y in the arena, w in the weights.
AotPlan tiny_plan() {
  AotPlan p;
  p.name = "tiny";
  p.model = "test";
  p.halide_target = "x86-64-linux";
  p.library = "tiny.a";
  p.header = "tiny.h";
  p.weights_file = "tiny.weights";
  p.inputs.push_back(AotTensor{"x", DType::Float32, {2, 64}});
  p.outputs.push_back(AotTensor{"y", DType::Float32, {2, 64}});
  AotWeight w;
  static_cast<AotTensor&>(w) = AotTensor{"w", DType::Float32, {64}};
  w.offset = 0;
  w.bytes = 256;
  p.weights.push_back(w);
  p.weights_bytes = 256;
  AotBuffer h, y;
  static_cast<AotTensor&>(h) = AotTensor{"h", DType::Float32, {2, 64}};
  h.offset = 0, h.bytes = 512, h.first = 0, h.last = 1;
  static_cast<AotTensor&>(y) = AotTensor{"y", DType::Float32, {2, 64}};
  y.offset = 512, y.bytes = 512, y.first = 1, y.last = 1;
  p.buffers = {h, y};
  p.arena_bytes = p.arena_lower_bound = 1024;
  for (int k = 0; k < 2; ++k) {
    AotKernel kern;
    kern.function = "tiny_k" + std::to_string(k);
    kern.signature = "sig" + std::to_string(k);
    kern.first_group = k;
    p.kernels.push_back(kern);
  }
  p.groups.push_back(AotGroup{0, "elementwise", "Mul", "tiny_k0", {"x", "w"}, {"h"}, {"h"}});
  p.groups.push_back(AotGroup{1, "elementwise", "Relu", "tiny_k1", {"h"}, {"y"}, {"y"}});
  p.kernel_table_hash_recorded = p.kernel_table_hash();
  return p;
}

using gaf::testing::error_of;

}  // namespace

TEST(AotPlan, RoundTripsThroughJson) {
  AotPlan p = tiny_plan();
  AotPlan q = AotPlan::from_json(p.to_json(), "tiny.plan.json");
  EXPECT_EQ(q.to_json(), p.to_json());
  EXPECT_EQ(q.buffers.at(1).offset, 512);
  EXPECT_EQ(q.groups.at(0).inputs, (std::vector<std::string>{"x", "w"}));
  EXPECT_NO_THROW(q.validate("tiny.plan.json"));
}

TEST(AotPlan, SchemaErrorsNameTheField) {
  json j = json::parse(tiny_plan().to_json());
  j["groups"][1].erase("kernel_outputs");
  EXPECT_EQ(error_of([&] { AotPlan::from_json(j.dump(), "p.json"); }),
            "p.json: field 'groups[1].kernel_outputs': missing");
  j = json::parse(tiny_plan().to_json());
  j["buffers"][0]["shape"][1] = "64";
  EXPECT_EQ(error_of([&] { AotPlan::from_json(j.dump(), "p.json"); }),
            "p.json: field 'buffers[0].shape[1]': expected a non-negative integer");
  EXPECT_NE(error_of([&] { AotPlan::from_json("{", "p.json"); }).find("p.json: not valid JSON"), std::string::npos);
}

TEST(AotPlan, ValidateRefusesInconsistentPlans) {
  AotPlan p = tiny_plan();
  p.buffers[1].offset = 256;  // overlaps h while both are live (group 1)
  EXPECT_EQ(error_of([&] { p.validate("p"); }), "p: field 'buffers[1].offset': 'y' overlaps 'h' while both are live");
  p = tiny_plan();
  p.weights[0].bytes = 128;
  EXPECT_NE(error_of([&] { p.validate("p"); }).find("field 'weights[0].bytes'"), std::string::npos);
  p = tiny_plan();
  p.groups[0].inputs[1] = "nope";
  EXPECT_NE(error_of([&] { p.validate("p"); }).find("field 'groups[0].inputs[1]': 'nope' has no storage"),
            std::string::npos);
}

TEST(AotPlan, KernelTableHashFollowsArgumentShapes) {
  AotPlan p = tiny_plan();
  const std::string hash = p.kernel_table_hash();
  p.inputs[0].shape = {4, 64};  // another batch: the kernels were compiled for [2, 64]
  EXPECT_NE(p.kernel_table_hash(), hash);
  EXPECT_NE(error_of([&] { p.validate("p"); }).find("field 'kernel_table_hash'"), std::string::npos);
  AotPlan q = tiny_plan();
  q.groups[0].label = "renamed";  // labels are not part of the contract
  EXPECT_EQ(q.kernel_table_hash(), hash);
}

// A group's index checks and the KV caches round-trip, and validate names what does not fit.
TEST(AotPlan, IndexChecksAndKvCachesRoundTripAndAreChecked) {
  AotPlan p = tiny_plan();
  p.groups[0].index_checks.push_back(AotIndexCheck{"gather", "Gather", "x", "w", 0});
  p.kv_caches.push_back(AotKvCache{"y", "x", 1, 128, true});
  p.kernel_table_hash_recorded = p.kernel_table_hash();
  AotPlan q = AotPlan::from_json(p.to_json(), "p.json");
  EXPECT_EQ(q.to_json(), p.to_json());
  EXPECT_EQ(q.kv_caches.at(0).capacity, 128);
  EXPECT_TRUE(q.kv_caches.at(0).append);
  EXPECT_EQ(q.groups.at(0).index_checks.at(0).data, "w");
  EXPECT_NO_THROW(q.validate("p"));
  EXPECT_NE(p.kernel_table_hash(), tiny_plan().kernel_table_hash()) << "cache windows change the kernels' contract";
  q.groups[0].index_checks[0].data = "h";
  EXPECT_NE(
      error_of([&] { q.validate("p"); }).find("field 'groups[0].index_checks[0]': 'h' is not an input of the group"),
      std::string::npos);
  q = AotPlan::from_json(p.to_json(), "p.json");
  q.kv_caches[0].present = "h";
  EXPECT_NE(error_of([&] { q.validate("p"); }).find("field 'kv_caches[0].present': 'h' is not an output"),
            std::string::npos);
}
