// Tensor parallelism without MPI: the sharding rewrite (each rank's weight slices put back
// together are the original weights; regions, AllReduces and comm_compute groups per layer; a
// head count the ranks do not divide leaves attention replicated with its reason), the refusals
// (dynamic dims, running without the other ranks), and the NPU tile model's collectives over the
// target's links. Running under mpirun is tensor_parallel_test.py (label mpi).
#include <gtest/gtest.h>

#include <cstring>

#include "engine/engine.h"
#include "generators/npu_profiler.h"

using namespace gaf;

namespace {

EngineOptions bert_options(int layers, int tp, int rank) {
  EngineOptions o;
  o.model.layers = layers;
  o.model.seq = 32;
  o.tp = TensorParallel{tp, rank};
  return o;
}

const Node& node_named(const Graph& g, const std::string& suffix) {
  for (const Node& n : g.nodes())
    if (n.name.size() >= suffix.size() && n.name.compare(n.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return n;
  throw GafError("no node named *" + suffix);
}

int count_op(const Graph& g, const std::string& op) {
  int k = 0;
  for (const Node& n : g.nodes()) k += n.op_type == op;
  return k;
}

TEST(TensorParallelShard, RanksSlicesMakeTheOriginalWeights) {
  Engine whole("builtin:bert-base", bert_options(1, 1, 0));
  Engine r0("builtin:bert-base", bert_options(1, 2, 0)), r1("builtin:bert-base", bert_options(1, 2, 1));
  // Attention (Q, K, V -> output) and the FFN: two regions, one AllReduce each.
  EXPECT_EQ(r0.sharding().applied.size(), 2u);
  EXPECT_TRUE(r0.sharding().refused.empty()) << r0.sharding().refused.front().message;
  EXPECT_EQ(r0.sharding().all_reduces, 2);
  EXPECT_EQ(count_op(r0.graph(), "AllReduce"), 2);
  // FFN up: columns split (rank 0 the first half, rank 1 the second); FFN down: rows split.
  for (const auto& [suffix, axis] : {std::pair<std::string, int>{"intermediate.dense/MatMul_44", 1},
                                     std::pair<std::string, int>{"output.dense/MatMul_54", 0}}) {
    const Tensor& full = *whole.graph().value(node_named(whole.graph(), suffix).inputs[1]).constant;
    const Tensor& a = *r0.graph().value(node_named(r0.graph(), suffix).inputs[1]).constant;
    const Tensor& b = *r1.graph().value(node_named(r1.graph(), suffix).inputs[1]).constant;
    ASSERT_EQ(a.shape()[static_cast<size_t>(axis)] * 2, full.shape()[static_cast<size_t>(axis)]) << suffix;
    const int64_t rows = full.shape()[0], cols = full.shape()[1];
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const bool first = (axis == 1 ? j : i) < (axis == 1 ? cols : rows) / 2;
        const Tensor& part = first ? a : b;
        const int64_t li = axis == 0 && !first ? i - rows / 2 : i, lj = axis == 1 && !first ? j - cols / 2 : j;
        ASSERT_EQ(full.data<float>()[i * cols + j], part.data<float>()[li * part.shape()[1] + lj]) << suffix;
      }
  }
  // The planner fuses each AllReduce with its bias, residual and LayerNorm.
  int comm_groups = 0;
  for (const FusionGroup& grp : r0.plan().groups) comm_groups += grp.kind == FusionKind::CommCompute;
  EXPECT_EQ(comm_groups, 2);
}

TEST(TensorParallelShard, HeadsTheRanksDoNotDivideStayReplicated) {
  Engine e("builtin:bert-base", bert_options(1, 8, 0));  // 12 heads, 8 ranks; the FFN's 3072 divides
  ASSERT_EQ(e.sharding().applied.size(), 1u);
  // Attention's Q/K/V, and its output projection tried on its own afterwards, stay replicated.
  ASSERT_GE(e.sharding().refused.size(), 1u);
  EXPECT_NE(e.sharding().refused[0].message.find("does not map onto an output axis that 8 ranks divide"),
            std::string::npos)
      << e.sharding().refused[0].message;
  EXPECT_EQ(e.sharding().refused[0].code, ReasonCode::Replicated);
  bool in_plan = false;  // the plan's refusals carry it, with its code
  for (const RefusedMerge& r : e.plan().refused) in_plan = in_plan || r.code == ReasonCode::Replicated;
  EXPECT_TRUE(in_plan);
}

TEST(TensorParallelShard, RefusesDynamicDimsAndRunningAlone) {
  EngineOptions dynamic = bert_options(1, 2, 0);
  dynamic.model.dim_ranges["seq"] = {1, 64};
  try {
    Engine e("builtin:bert-base", dynamic);
    FAIL() << "dynamic dims with --tp were accepted";
  } catch (const GafError& err) {
    EXPECT_NE(std::string(err.what()).find("--tp with dynamic dims"), std::string::npos) << err.what();
  }
  Engine alone("builtin:bert-base", bert_options(1, 2, 0));
  try {
    alone.compile();
    FAIL() << "a 2-rank plan compiled without the other rank";
  } catch (const GafError& err) {
    EXPECT_NE(std::string(err.what()).find("mpirun -np 2"), std::string::npos) << err.what();
  }
}

TEST(TensorParallelNpu, CollectivesCostTheSameOnTheLinksAndTheNormRunsOnAQuarter) {
  EngineOptions o = bert_options(1, 4, 0);
  o.npu = default_npu_target();
  Engine e("builtin:bert-base", o);
  const FusionPlan& plan = e.plan();
  TensorMap inputs{{"hidden_states", Tensor(DType::Float32, {1, 32, 768})},
                   {"attention_mask", Tensor(DType::Float32, {1, 32})}};
  for (int64_t i = 0; i < 32 * 768; ++i) inputs["hidden_states"].data<float>()[i] = static_cast<float>(i % 7) - 3;
  for (int64_t i = 0; i < 32; ++i) inputs["attention_mask"].data<float>()[i] = 1;
  const NpuPlanModel m = model_plan_on_npu(e.graph(), plan, inputs, *o.npu);
  EXPECT_EQ(m.ranks, 4);
  int comm_groups = 0;
  for (const FusionGroup& grp : plan.groups) {
    if (grp.kind != FusionKind::CommCompute) continue;
    ++comm_groups;
    const NpuGroupModel& gm = m.groups.at(grp.id);
    // Ring: reduce-scatter + all-gather send what one all-reduce sends, in as many steps.
    EXPECT_GT(gm.fused.link_steps, 0);
    EXPECT_EQ(gm.fused.link_bytes, gm.unfused.link_bytes);
    EXPECT_EQ(gm.fused.link_steps, gm.unfused.link_steps);
    EXPECT_LT(gm.fused.gm_read_bytes, gm.unfused.gm_read_bytes);  // the norm reads a quarter of the rows
    EXPECT_LT(gm.fused_us, gm.unfused_us);
  }
  EXPECT_EQ(comm_groups, 2);
  EXPECT_GT(m.fused_pipes.link_us, 0);

  NpuTarget no_links = *o.npu;
  no_links.link_bandwidth_gbps = 0;
  try {
    model_plan_on_npu(e.graph(), plan, inputs, no_links);
    FAIL() << "a target without an interconnect modeled collectives";
  } catch (const GafError& err) {
    EXPECT_NE(std::string(err.what()).find("describes no interconnect"), std::string::npos) << err.what();
  }
}

}  // namespace
