// Graph IR: builder API, validation errors that name the node, symbolic dims, dump, shape
// inference failures, folding and dead-node removal.
#include <gtest/gtest.h>

#include <algorithm>

#include "error_text.h"

#include "fusion/frontend/passes.h"
#include "fusion/ir/builder.h"
#include "generators/reference_executor.h"
#include "planner_test_util.h"

using namespace gaf;

namespace {

Tensor ones(Shape s) {
  Tensor t(DType::Float32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 1.0f;
  return t;
}

using gaf::testing::error_of;

Graph small_mlp() {
  GraphBuilder g("mlp");
  auto x = g.input("x", DType::Float32, {Dim::sym("batch"), 4});
  auto y = g.add(g.matmul(x, g.weight("w", ones({4, 3}))), g.weight("b", ones({3})));
  g.output(g.relu(y), "y");
  return g.finish();
}

}  // namespace

TEST(GraphIR, BuilderReadsLikeModelCodeAndKeepsSymbols) {
  Graph g = small_mlp();
  EXPECT_EQ(g.nodes().size(), 3u);
  EXPECT_EQ(g.inputs(), std::vector<std::string>{"x"});
  EXPECT_EQ(g.outputs(), std::vector<std::string>{"y"});
  EXPECT_EQ(g.value("x").type.dims[0].symbol, "batch");
  EXPECT_EQ(g.unbound_symbols(), std::vector<std::string>{"batch"});
  g.bind_dims({{"batch", 5}});
  infer_shapes(g);
  EXPECT_EQ(g.value("y").type.shape(), (Shape{5, 3}));
  // The symbol's name survives binding.
  EXPECT_EQ(g.value("x").type.dims[0].str(), "batch=5");
  std::string dump = g.dump();
  EXPECT_NE(dump.find("MatMul(%x, %w)"), std::string::npos) << dump;
  EXPECT_NE(dump.find("float32[5,3]"), std::string::npos) << dump;
}

TEST(GraphIR, ScopesPrefixNodeNames) {
  GraphBuilder g("s");
  auto x = g.input("x", DType::Float32, {2});
  ValueRef y;
  {
    GraphBuilder::Scope s(g, "layer0");
    GraphBuilder::Scope t(g, "ffn");
    y = g.relu(x);
  }
  g.output(y);
  Graph graph = g.finish();
  EXPECT_EQ(graph.nodes()[0].name.rfind("layer0/ffn/Relu", 0), 0u) << graph.nodes()[0].name;
}

TEST(GraphIR, DanglingInputNamesTheNode) {
  Graph g;
  g.add_value("x", TensorType(DType::Float32, {2}));
  g.inputs().push_back("x");
  g.add_value("y", TensorType(DType::Float32, {2}));
  g.add_node(Node{"add_1", "Add", {}, {"x", "ghost"}, {"y"}});
  g.outputs().push_back("y");
  std::string e = error_of([&] { g.validate(); });
  EXPECT_NE(e.find("node 'add_1'"), std::string::npos) << e;
  EXPECT_NE(e.find("'ghost' is dangling"), std::string::npos) << e;
}

TEST(GraphIR, CycleNamesANode) {
  Graph g;
  g.add_value("a", TensorType(DType::Float32, {2}));
  g.add_value("b", TensorType(DType::Float32, {2}));
  g.add_node(Node{"n1", "Relu", {}, {"b"}, {"a"}});
  g.add_node(Node{"n2", "Relu", {}, {"a"}, {"b"}});
  g.outputs().push_back("b");
  std::string e = error_of([&] { g.validate(); });
  EXPECT_NE(e.find("cycle"), std::string::npos) << e;
  EXPECT_NE(e.find("node 'n"), std::string::npos) << e;
}

TEST(GraphIR, DuplicateNamesAreRefused) {
  Graph g;
  g.add_value("a", TensorType(DType::Float32, {2}));
  EXPECT_NE(error_of([&] { g.add_value("a", TensorType(DType::Float32, {2})); }).find("duplicate value name 'a'"),
            std::string::npos);
  g.add_node(Node{"n", "Relu", {}, {"a"}, {}});
  EXPECT_NE(error_of([&] {
              g.add_node(Node{"n", "Relu", {}, {"a"}, {}});
            }).find("node 'n': duplicate node name"),
            std::string::npos);
}

TEST(GraphIR, ShapeInferenceFailureNamesTheNode) {
  GraphBuilder b("bad");
  auto x = b.input("x", DType::Float32, {2, 3});
  auto y = b.input("y", DType::Float32, {4, 5});
  b.output(b.matmul(x, y), "z");
  Graph g = b.finish();
  std::string e = error_of([&] { infer_shapes(g); });
  EXPECT_NE(e.find("MatMul"), std::string::npos) << e;
  EXPECT_NE(e.find("node '"), std::string::npos) << e;
}

TEST(GraphIR, UnboundSymbolIsAClearError) {
  Graph g = small_mlp();
  ReferenceExecutor ex;
  NodeEvaluator eval = gaf::testing::evaluator(ex);
  std::string e = error_of([&] { prepare_graph(g, {}, eval); });
  EXPECT_NE(e.find("unbound symbolic dim(s): batch"), std::string::npos) << e;
}

TEST(Passes, FoldsConstantSubgraphsAndRemovesDeadNodes) {
  GraphBuilder b("fold");
  auto x = b.input("x", DType::Float32, {Dim::sym("n"), 3});
  // shape = Shape(x) -> folded to a constant once n is bound; Reshape then has a static target.
  auto shape = b.op1("Shape", {x});
  auto r = b.op1("Reshape", {x, shape});
  auto c = b.add(b.scalar(1.0f), b.scalar(2.0f));  // constant subexpression
  b.relu(x);                                       // dead: nothing uses it
  b.output(b.mul(r, c), "y");
  Graph g = b.finish();
  ReferenceExecutor ex;
  NodeEvaluator eval = gaf::testing::evaluator(ex);
  PassStats s = prepare_graph(g, {{"n", 2}}, eval);
  EXPECT_EQ(s.folded_nodes, 2);     // Shape and Add
  ASSERT_EQ(g.nodes().size(), 2u);  // Reshape, Mul
  EXPECT_EQ(g.nodes()[0].op_type, "Reshape");
  EXPECT_EQ(g.nodes()[1].op_type, "Mul");
  Tensor in(DType::Float32, {2, 3});
  for (int i = 0; i < 6; ++i) in.data<float>()[i] = static_cast<float>(i);
  TensorMap out = ex.run(g, {{"x", in}});
  EXPECT_EQ(out.at("y").data<float>()[5], 15.0f);
}

// Gemm(A, B, C) with B constant, A not transposed and alpha = beta = 1 becomes MatMul(A, B^T) and
// Add(., C) (nn.Linear's export, transB = 1), computing the same; a Gemm with alpha 0.5 stays.
TEST(Passes, CanonicalizeLinearGemmAsMatMulAndAdd) {
  GraphBuilder b("linear");
  auto x = b.input("x", DType::Float32, {3, 4});
  Tensor w(DType::Float32, {5, 4}), c(DType::Float32, {5});
  for (int i = 0; i < 20; ++i) w.data<float>()[i] = 0.1f * static_cast<float>(i) - 1.0f;
  for (int i = 0; i < 5; ++i) c.data<float>()[i] = static_cast<float>(i);
  Attributes trans_b, half;
  trans_b.set("transB", int64_t{1});
  half.set("transB", int64_t{1});
  half.set("alpha", 0.5f);
  auto wv = b.weight("w", w), cv = b.weight("c", c);
  b.output(b.op1("Gemm", {x, wv, cv}, trans_b), "y");
  b.output(b.op1("Gemm", {x, wv, cv}, half), "z");
  Graph g = b.finish();
  ReferenceExecutor ex;
  NodeEvaluator eval = gaf::testing::evaluator(ex);
  prepare_graph(g, {}, eval);
  std::vector<std::string> ops;
  for (const Node& n : g.nodes()) ops.push_back(n.op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{"MatMul", "Add", "Gemm"}));
  Tensor in(DType::Float32, {3, 4});
  for (int i = 0; i < 12; ++i) in.data<float>()[i] = 0.25f * static_cast<float>(i) - 1.0f;
  TensorMap out = ex.run(g, {{"x", in}});
  for (int r = 0; r < 3; ++r)
    for (int o = 0; o < 5; ++o) {
      float want = c.data<float>()[o];
      for (int k = 0; k < 4; ++k) want += in.data<float>()[r * 4 + k] * w.data<float>()[o * 4 + k];
      EXPECT_NEAR(out.at("y").data<float>()[r * 5 + o], want, 1e-5f) << r << "," << o;
      EXPECT_NEAR(out.at("z").data<float>()[r * 5 + o], want - 0.5f * (want - c.data<float>()[o]), 1e-5f);
    }
}

// MatMul(W, Transpose(x)) with a constant W and the last two axes swapped (K^T computed as
// W_k x^T) becomes Transpose(MatMul(x, W^T)), computing the same; with a Transpose that also
// moves the batch axis it stays.
TEST(Passes, CanonicalizeConstantTimesTransposedAsProjection) {
  GraphBuilder b("kt");
  auto x = b.input("x", DType::Float32, {2, 3, 4});
  Tensor w(DType::Float32, {5, 4});
  for (int i = 0; i < 20; ++i) w.data<float>()[i] = 0.1f * static_cast<float>(i) - 1.0f;
  auto wv = b.weight("w", w);
  Attributes swap, rotate;
  swap.set("perm", std::vector<int64_t>{0, 2, 1});
  rotate.set("perm", std::vector<int64_t>{1, 2, 0});
  b.output(b.op1("MatMul", {wv, b.op1("Transpose", {x}, swap)}), "kt");
  b.output(b.op1("MatMul", {wv, b.op1("Transpose", {x}, rotate)}), "other");
  Graph g = b.finish();
  ReferenceExecutor ex;
  NodeEvaluator eval = gaf::testing::evaluator(ex);
  prepare_graph(g, {}, eval);
  std::vector<std::string> ops;
  for (const Node& n : g.nodes()) ops.push_back(n.op_type);
  std::sort(ops.begin(), ops.end());
  EXPECT_EQ(ops, (std::vector<std::string>{"MatMul", "MatMul", "Transpose", "Transpose"}));
  int projections = 0;
  for (const Node& n : g.nodes()) projections += n.op_type == "MatMul" && n.inputs[0] == "x";
  EXPECT_EQ(projections, 1);
  Tensor in(DType::Float32, {2, 3, 4});
  for (int i = 0; i < 24; ++i) in.data<float>()[i] = 0.25f * static_cast<float>(i) - 1.0f;
  TensorMap out = ex.run(g, {{"x", in}});
  ASSERT_EQ(out.at("kt").shape(), (Shape{2, 5, 3}));
  for (int bt = 0; bt < 2; ++bt)
    for (int o = 0; o < 5; ++o)
      for (int s = 0; s < 3; ++s) {
        float want = 0;
        for (int k = 0; k < 4; ++k) want += w.data<float>()[o * 4 + k] * in.data<float>()[(bt * 3 + s) * 4 + k];
        EXPECT_NEAR(out.at("kt").data<float>()[(bt * 5 + o) * 3 + s], want, 1e-5f) << bt << "," << o << "," << s;
      }
}

// A Cast to the dtype its input has is bypassed and dropped (T5 casts to float before its Softmax
// and norms), also a Cast of such a Cast; a Cast that changes the dtype, and a no-op Cast that is a
// graph output, stay.
TEST(Passes, CanonicalizeBypassesCastsToTheSameDtype) {
  GraphBuilder b("casts");
  auto x = b.input("x", DType::Float32, {2, 3});
  Attributes to_float, to_int;
  to_float.set("to", int64_t{1});
  to_int.set("to", int64_t{7});
  auto twice = b.op1("Cast", {b.op1("Cast", {x}, to_float)}, to_float);
  b.output(b.softmax(twice), "y");
  b.output(b.op1("Cast", {x}, to_int), "ids");
  b.output(b.op1("Cast", {x}, to_float), "same");
  Graph g = b.finish();
  ReferenceExecutor ex;
  NodeEvaluator eval = gaf::testing::evaluator(ex);
  PassStats s = prepare_graph(g, {}, eval);
  EXPECT_EQ(s.canonicalized_nodes, 2);
  int casts = 0;
  for (const Node& n : g.nodes()) {
    casts += n.op_type == "Cast";
    if (n.op_type == "Softmax") EXPECT_EQ(n.inputs, (std::vector<std::string>{x.name}));
  }
  EXPECT_EQ(casts, 2);  // to int64, and the graph output "same"
  Tensor in(DType::Float32, {2, 3});
  for (int i = 0; i < 6; ++i) in.data<float>()[i] = static_cast<float>(i);
  TensorMap out = ex.run(g, {{"x", in}});
  EXPECT_EQ(out.at("same").data<float>()[4], 4.0f);
  EXPECT_EQ(out.at("ids").data<int64_t>()[5], 5);
}

// Work repeated per layer is done once: two layers each turning the same mask into a bias with
// constants of their own (equal contents) share one chain; a chain reading other constants, and a
// duplicate that is a graph output, stay.
TEST(Passes, DuplicateNodesAreMerged) {
  GraphBuilder b("dups");
  auto x = b.input("x", DType::Float32, {2, 3});
  auto m = b.input("m", DType::Float32, {2, 3});
  auto bias = [&](float fill) { return b.mul(b.sub(b.scalar(1.0f), m), b.scalar(fill)); };
  auto l0 = b.softmax(b.add(x, bias(-1e9f)));
  auto l1 = b.softmax(b.add(l0, bias(-1e9f)));  // the same bias: merged
  auto l2 = b.softmax(b.add(l1, bias(-1e4f)));  // another fill: kept
  b.output(l2, "y");
  b.output(b.mul(b.sub(b.scalar(1.0f), m), b.scalar(-1e9f)), "bias");  // a graph output: kept
  Graph g = b.finish();
  ReferenceExecutor ex;
  NodeEvaluator eval = gaf::testing::evaluator(ex);
  PassStats s = prepare_graph(g, {}, eval);
  // l1's Sub and Mul duplicate l0's; l2's Sub and the output's too, their Muls not (another fill;
  // a graph output).
  EXPECT_EQ(s.merged_nodes, 4);
  int subs = 0, muls = 0;
  for (const Node& n : g.nodes()) subs += n.op_type == "Sub", muls += n.op_type == "Mul";
  EXPECT_EQ(subs, 1);
  EXPECT_EQ(muls, 3);  // -1e9 (l0 and l1), -1e4 (l2), the graph output's
  Tensor xi(DType::Float32, {2, 3}), mi(DType::Float32, {2, 3});
  for (int i = 0; i < 6; ++i) xi.data<float>()[i] = 0.1f * static_cast<float>(i), mi.data<float>()[i] = i % 4 ? 1.0f : 0.0f;
  TensorMap out = ex.run(g, {{"x", xi}, {"m", mi}});
  EXPECT_EQ(out.at("bias").data<float>()[0], -1e9f);
  EXPECT_EQ(out.at("bias").data<float>()[1], 0.0f);
  EXPECT_EQ(out.at("y").data<float>()[0], 0.0f) << "masked position";
}

// Pow(x, 2) with a constant exponent becomes x * x (same name, same result); a Pow whose
// exponent is a graph input or another constant stays.
TEST(Passes, CanonicalizeSquaresWrittenAsPow) {
  GraphBuilder b("pow");
  auto x = b.input("x", DType::Float32, {2, 3});
  auto e = b.input("e", DType::Float32, {1});
  auto sq = b.pow(x, b.scalar(2.0f));
  auto cube = b.pow(x, b.scalar(3.0f));
  auto any = b.pow(x, e);
  b.output(b.add(b.add(sq, cube), any), "y");
  Graph g = b.finish();
  const std::string sq_name = g.nodes()[g.value(sq.name).producer].name;
  ReferenceExecutor ex;
  NodeEvaluator eval = gaf::testing::evaluator(ex);
  PassStats s = prepare_graph(g, {}, eval);
  EXPECT_EQ(s.canonicalized_nodes, 1);
  int pows = 0;
  for (const Node& n : g.nodes()) {
    pows += n.op_type == "Pow";
    if (n.name == sq_name) {
      EXPECT_EQ(n.op_type, "Mul");
      EXPECT_EQ(n.inputs, (std::vector<std::string>{x.name, x.name}));
    }
  }
  EXPECT_EQ(pows, 2);
  Tensor in(DType::Float32, {2, 3}), one(DType::Float32, {1});
  for (int i = 0; i < 6; ++i) in.data<float>()[i] = 0.5f * static_cast<float>(i) - 1.0f;
  one.data<float>()[0] = 1.0f;
  TensorMap out = ex.run(g, {{"x", in}, {"e", one}});
  for (int i = 0; i < 6; ++i) {
    const float v = in.data<float>()[i];
    EXPECT_NEAR(out.at("y").data<float>()[i], v * v + v * v * v + v, 1e-5f) << i;
  }
}

// Windows of a block (a KV cache): strides over the block, rows addressed in block coordinates,
// copies in and out whatever the layouts.
TEST(TensorWindow, RowsOfABlockShareItsStorage) {
  Tensor w = Tensor::with_capacity(DType::Float32, {2, 3, 4}, 1, 5);  // 2 x [5 rows] x 4, rows 0..2 in view
  ASSERT_TRUE(w.is_window());
  EXPECT_EQ(w.strides(), (std::vector<int64_t>{20, 4, 1}));
  Tensor dense = Tensor::from_values<float>(DType::Float32, {2, 3, 4}, std::vector<float>(24, 0.f));
  for (int i = 0; i < 24; ++i) dense.data<float>()[i] = static_cast<float>(i);
  w.copy_from(dense);
  EXPECT_EQ(w.data<float>()[20 + 4], 16.f);  // [1, 1, 0]: the second block row 1
  Tensor more = w.window(3, 5);              // rows 3..4, appended after the three
  EXPECT_TRUE(more.same_block(w));
  EXPECT_EQ(more.window_begin(), 3);
  EXPECT_EQ(more.data<float>() - w.data<float>(), 12);
  Tensor all = w.window(0, 5);
  EXPECT_EQ(all.shape(), (Shape{2, 5, 4}));
  const Tensor back = all.window(0, 3).clone();  // dense again
  EXPECT_FALSE(back.is_window());
  for (int i = 0; i < 24; ++i) EXPECT_EQ(back.data<float>()[i], static_cast<float>(i));
  EXPECT_THROW(w.window(2, 6), GafError);  // beyond the block
  EXPECT_THROW(w.reshaped({24}), GafError);
  EXPECT_FALSE(Tensor::with_capacity(DType::Float32, {2, 3, 4}, 1, 5).same_block(w));
}
