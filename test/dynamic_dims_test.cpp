// Dynamic dims: symbolic extents as polynomials in the symbols (runtime/sym_expr.h), fitted
// through shape inference and folding (fusion/ops/symbolic_dims.h).
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/model_source.h"
#include "planner_test_util.h"
#include "tensor_compare.h"
#include "fusion/ir/builder.h"
#include "fusion/models/bert.h"
#include "cli_util.h"
#include "error_text.h"
#include "runtime/tensor_io.h"

#include <filesystem>

using gaf::testing::error_of;

using namespace gaf;
using gaf::testing::evaluator;

TEST(SymExpr, TextRoundTripAndEvaluation) {
  SymExpr e;
  e.add_term({"seq"}, 12);
  e.add_term({"seq", "batch"}, 1);
  e.add_term({}, -1);
  EXPECT_EQ(e.str(), "batch*seq+12*seq-1");
  EXPECT_EQ(SymExpr::parse(e.str()), e);
  EXPECT_EQ(e.eval({{"batch", 2}, {"seq", 5}}), 2 * 5 + 60 - 1);
  EXPECT_EQ(SymExpr::symbol("seq").as_symbol(), "seq");
  EXPECT_FALSE(e.as_symbol());
  EXPECT_TRUE(SymExpr::constant(768).is_constant());
  EXPECT_EQ(SymExpr::parse("768")->constant_term(), 768);
  EXPECT_FALSE(SymExpr::parse("seq**2"));
  EXPECT_FALSE(SymExpr::parse(""));
  EXPECT_EQ(max_over(e, {{"batch", {1, 8}}, {"seq", {1, 512}}}), 8 * 512 + 12 * 512 - 1);
}

TEST(SymSampler, FitsPolynomialsAndRefusesTheRest) {
  SymSampler s({{"batch", {1, 8}}, {"seq", {1, 512}}});
  auto fit = [&](auto f) {
    std::vector<int64_t> seen;
    for (const SymBindings& p : s.points()) seen.push_back(f(p.at("batch"), p.at("seq")));
    return s.fit(seen);
  };
  EXPECT_EQ(fit([](int64_t b, int64_t q) { return b * q; })->str(), "batch*seq");
  EXPECT_EQ(fit([](int64_t, int64_t q) { return q + 1; })->str(), "seq+1");
  EXPECT_EQ(fit([](int64_t, int64_t) { return 64; })->str(), "64");
  EXPECT_FALSE(fit([](int64_t, int64_t q) { return q / 2; }));
  EXPECT_FALSE(fit([](int64_t, int64_t q) { return std::min<int64_t>(q, 64); }));
  EXPECT_FALSE(fit([](int64_t, int64_t q) { return q * q; }));
}

// BERT with seq dynamic: every activation's dims are polynomials in seq; nothing that depends on
// seq is folded into a constant.
TEST(DynamicDims, BertActivationsCarrySeq) {
  ReferenceExecutor ex;
  Graph g = build_bert(BertConfig{.layers = 1});
  prepare_graph(g, {{"batch", 1}}, evaluator(ex), {{"seq", {1, 512}}});
  ASSERT_EQ(g.dynamic.size(), 1u);
  const Value& out = g.value("last_hidden_state");
  EXPECT_EQ(sym_shape_str(out.sym_dims), "[1,seq,768]");
  EXPECT_EQ(out.type.shape(), (Shape{1, 512, 768}));
  int scores = 0;
  for (const Node& n : g.nodes())
    if (n.op_type == "Softmax") {
      EXPECT_EQ(sym_shape_str(g.value(n.outputs[0]).sym_dims), "[1,12,seq,seq]");
      ++scores;
    }
  EXPECT_EQ(scores, 1);
}

// A PyTorch-style shape chain (Shape -> Gather -> Concat -> Reshape) folds into a shape whose
// elements are symbolic, and a Range over seq stays a node.
TEST(DynamicDims, ShapeChainsFoldIntoSymbolicContents) {
  GraphBuilder b("chain");
  auto x = b.input("x", DType::Float32, {Dim::sym("seq"), 6});
  // target = Shape(x)[0] * 2 then 3: [2*seq, 3].
  Attributes at0;
  at0.set("axis", int64_t{0});
  auto first = b.op1("Gather", {b.op1("Shape", {x}), b.ints({0})}, at0);
  auto target = b.op1("Concat", {b.op1("Mul", {first, b.ints({2})}), b.ints({3})}, at0);
  b.output(b.op1("Reshape", {x, target}), "y");
  Graph g = b.finish();
  ReferenceExecutor ex;
  prepare_graph(g, {}, evaluator(ex), {{"seq", {1, 100}}});
  EXPECT_EQ(sym_shape_str(g.value("y").sym_dims), "[2*seq,3]");
}

TEST(DynamicDims, ADimTheModelFixesIsAClearError) {
  GraphBuilder b("fixed");
  auto x = b.input("x", DType::Float32, {Dim::sym("seq"), 6});
  b.output(b.op1("Reshape", {x, b.ints({64, 6})}), "y");
  Graph g = b.finish();
  ReferenceExecutor ex;
  std::string e = error_of([&] { prepare_graph(g, {}, evaluator(ex), {{"seq", {1, 64}}}); });
  EXPECT_NE(e.find("fixes a dim that is declared dynamic"), std::string::npos) << e;
}

TEST(DynamicDims, DimBindingsParseRanges) {
  DimBinding b = parse_dim_binding("seq=1..512");
  EXPECT_EQ(b.name, "seq");
  EXPECT_EQ(b.range.lo, 1);
  EXPECT_EQ(b.range.hi, 512);
  EXPECT_EQ(parse_dim_binding("batch=4").range.hi, 4);
  EXPECT_NE(error_of([] { parse_dim_binding("seq=9..3"); }).find("empty"), std::string::npos);
  EXPECT_NE(error_of([] { parse_dim_binding("seq=0..3"); }).find("positive"), std::string::npos);
  EXPECT_EQ(parse_dim_binding("past=0").range.hi, 0);  // a zero-size dim: a cache with no positions yet
  EXPECT_NE(error_of([] { parse_dim_binding("past=-1"); }).find("non-negative"), std::string::npos);
}

// One engine prepared for seq 1..512 runs every length: each equals an engine specialised to
// that length (tolerance 1e-4 relative + 1e-5 absolute: the fp32 sums of different tile shapes)
// and the unfused reference; lengths outside the range are refused naming the input and dim.
class DynamicBert : public ::testing::Test {
 protected:
  static EngineOptions options(const ModelOptions& m) {
    EngineOptions o;
    o.model = m;
    o.model.layers = 1;
    return o;
  }
  static TensorMap inputs(int64_t seq) {
    Tensor mask(DType::Float32, {1, seq});
    for (int64_t i = 0; i < seq; ++i) mask.data<float>()[i] = i + 1 < seq || seq == 1 ? 1.0f : 0.0f;  // last one padded
    return {{"hidden_states", gaf::testing::random_uniform({1, seq, 768}, static_cast<uint32_t>(seq))},
            {"attention_mask", mask}};
  }
};

TEST_F(DynamicBert, OneEngineRunsEverySeqInItsRange) {
  ModelOptions dynamic;
  dynamic.dim_ranges["seq"] = {1, 512};
  Engine engine("builtin:bert-base", options(dynamic));
  engine.compile();
  for (int64_t seq : {1, 7, 128, 300, 512, 5}) {
    SCOPED_TRACE("seq " + std::to_string(seq));
    TensorMap in = inputs(seq);
    TensorMap got = engine.run(in);
    ModelOptions fixed;
    fixed.seq = seq;
    Engine specialised("builtin:bert-base", options(fixed));
    TensorMap want = specialised.run(in);
    EXPECT_EQ(gaf::testing::compare_tensors(got.at("last_hidden_state"), want.at("last_hidden_state")), "");
    if (seq == 7 || seq == 300) {
      TensorMap ref = engine.reference().run(engine.graph(), in);
      EXPECT_EQ(gaf::testing::compare_tensors(got.at("last_hidden_state"), ref.at("last_hidden_state")), "");
    }
  }
  std::string e = error_of([&] { engine.run(inputs(513)); });
  EXPECT_NE(e.find("input 'hidden_states' dim 1 ('seq') is 513, outside the range 1..512"), std::string::npos) << e;
}

// The AOT library bert_dyn, compiled once for seq 1..256 (test/CMakeLists.txt), run by the plan
// runtime alone at several lengths: each equals the dynamic engine's result (tolerance as
// above), and a length outside the range is one line naming the input, the dim and the range.
TEST_F(DynamicBert, OneAotLibraryRunsEverySeqInItsRange) {
  ModelOptions dynamic;
  dynamic.dim_ranges["seq"] = {1, 256};
  Engine engine("builtin:bert-base", options(dynamic));
  const std::string dir = gaf::testing::scratch_dir("aot_dynamic");
  for (int64_t seq : {1, 9, 100, 256, 257}) {
    SCOPED_TRACE("seq " + std::to_string(seq));
    const std::string in_dir = dir + "/in" + std::to_string(seq), out_dir = dir + "/out" + std::to_string(seq);
    std::filesystem::create_directories(in_dir);
    std::filesystem::create_directories(out_dir);
    TensorMap in = inputs(seq);
    for (const auto& [name, t] : in) write_npy(in_dir + "/" + name + ".npy", t);
    gaf::testing::CommandResult r =
        gaf::testing::run_command(std::string(AOT_DYNAMIC_RUN) + " " + in_dir + " " + out_dir, dir);
    if (seq > 256) {
      EXPECT_EQ(r.exit_code, 1);
      EXPECT_NE(r.err.find("input 'hidden_states' dim 1 ('seq') is 257, outside the compiled range 1..256"),
                std::string::npos)
          << r.err;
      continue;
    }
    ASSERT_EQ(r.exit_code, 0) << r.err;
    Tensor got = read_npy(out_dir + "/last_hidden_state.npy");
    EXPECT_EQ(gaf::testing::compare_tensors(got, engine.run(in).at("last_hidden_state")), "");
  }
}

// Position ids arange(past, past + 1) feeding a Gather (a decoder step's learned position
// embedding): the Range's contents vary with the dims, and the Gather reads them as data, so they
// are not folded into one fixed tensor: the Range runs in a kernel, its start an expression in
// the dims. One engine then gathers the right row at every past length.
TEST(DynamicDims, ContentsReadAsDataRunInKernels) {
  GraphBuilder b("positions");
  auto x = b.input("x", DType::Float32, {Dim::sym("past"), 4});
  Tensor zero(DType::Int64, {}), one(DType::Int64, {});
  zero.data<int64_t>()[0] = 0;
  one.data<int64_t>()[0] = 1;
  Tensor table(DType::Float32, {128, 4});
  for (int64_t i = 0; i < table.numel(); ++i) table.data<float>()[i] = static_cast<float>(i / 4);  // row r holds r
  Attributes axis0;
  axis0.set("axis", int64_t{0});
  auto past = b.op1("Gather", {b.op1("Shape", {x}), b.weight("zero", zero)}, axis0);
  auto one_v = b.weight("one", one);
  auto pos = b.op1("Range", {past, b.add(past, one_v), one_v});
  b.output(b.op1("Gather", {b.weight("table", table), pos}, axis0), "y");
  Graph g = b.finish();
  ReferenceExecutor ex;
  prepare_graph(g, {}, evaluator(ex), {{"past", {1, 100}}});
  Engine engine(std::move(g), EngineOptions{});
  for (int64_t p : {7, 1, 100, 16}) {
    Tensor in(DType::Float32, {p, 4});
    Tensor y = engine.run({{"x", in}}).at("y");
    ASSERT_EQ(y.shape(), (Shape{1, 4}));
    EXPECT_EQ(y.data<float>()[0], static_cast<float>(p)) << "past " << p;
  }
}

// Two dynamic dims (batch 1..4, seq 1..64): one engine, size classes for both, runs that equal
// engines specialised to each (batch, seq) (tolerance as above).
TEST_F(DynamicBert, BatchAndSeqBothDynamic) {
  ModelOptions dynamic;
  dynamic.dim_ranges["batch"] = {1, 4};
  dynamic.dim_ranges["seq"] = {1, 64};
  Engine engine("builtin:bert-base", options(dynamic));
  EXPECT_EQ(engine.compile().stats.schedule_fallbacks, std::vector<std::string>{});
  for (auto [batch, seq] : {std::pair<int64_t, int64_t>{3, 9}, {1, 64}, {4, 1}}) {
    SCOPED_TRACE("batch " + std::to_string(batch) + ", seq " + std::to_string(seq));
    TensorMap in{{"hidden_states", gaf::testing::random_uniform({batch, seq, 768}, 7)},
                 {"attention_mask", Tensor(DType::Float32, {batch, seq})}};
    for (int64_t i = 0; i < batch * seq; ++i) in["attention_mask"].data<float>()[i] = 1.0f;
    ModelOptions fixed;
    fixed.seq = seq;
    fixed.batch = batch;
    Engine specialised("builtin:bert-base", options(fixed));
    EXPECT_EQ(gaf::testing::compare_tensors(engine.run(in).at("last_hidden_state"),
                                            specialised.run(in).at("last_hidden_state")),
              "");
  }
}
