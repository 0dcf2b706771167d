// Einsum: the op's builder (through the reference executor) against a naive sum over every label's
// index space, for transposes, sums, products, implicit outputs, ellipses (broadcast too) and
// diagonals; the load-time rewrite of two-operand products into Transpose + MatMul (which
// equations become MatMul, which stay Einsum) with the fused and unfused engines against the same
// naive sum; and bad equations as one error naming the node.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "engine/engine.h"
#include "fusion/ir/builder.h"
#include "fusion/ops/einsum_equation.h"
#include "test/op_test_util.h"
#include "test/planner_test_util.h"
#include "test/tensor_compare.h"

using namespace gaf;
using namespace gaf::testing;

namespace {

Attributes equation(const std::string& eq) {
  Attributes a;
  a.set("equation", eq);
  return a;
}

// Sum over all labels of the operands' product, written to the output at its labels: every index
// of the label space in turn (float64 sums).
Tensor naive_einsum(const std::string& eq, const std::vector<Tensor>& xs) {
  std::vector<int> ranks;
  std::vector<Shape> shapes;
  for (const Tensor& x : xs) ranks.push_back(x.rank()), shapes.push_back(x.shape());
  const EinsumEquation e = EinsumEquation::parse(eq, ranks);
  const std::vector<int64_t> ext = e.extents(shapes);
  const Shape out_shape = e.output_shape(shapes);
  std::vector<double> out(static_cast<size_t>(shape_numel(out_shape)), 0.0);
  std::vector<int64_t> at(ext.size(), 0);
  auto offset = [&](const std::vector<int>& labels, const Shape& s) {
    int64_t o = 0;
    for (size_t d = 0; d < labels.size(); ++d) o = o * s[d] + (s[d] == 1 ? 0 : at[e.index_of(labels[d])]);
    return o;
  };
  const int64_t total = std::max<int64_t>(1, shape_numel(Shape(ext.begin(), ext.end())));
  for (int64_t i = 0; i < total; ++i) {
    int64_t r = i;
    for (size_t l = ext.size(); l-- > 0;) at[l] = r % ext[l], r /= ext[l];
    double p = 1;
    for (size_t k = 0; k < xs.size(); ++k) p *= xs[k].as_double(offset(e.inputs[k], shapes[k]));
    out[static_cast<size_t>(offset(e.output, out_shape))] += p;
  }
  std::vector<float> f(out.begin(), out.end());
  return Tensor::from_values(DType::Float32, out_shape, f);
}

Tensor random(Shape s, uint32_t seed) { return random_uniform(std::move(s), seed, 1.0f); }

struct Case {
  std::string eq;
  std::vector<Shape> in;
  Shape out;  // stated, so a parse that agrees with the naive sum's is still checked
};

}  // namespace

TEST(Einsum, BuilderMatchesANaiveSum) {
  const std::vector<Case> cases = {
      {"ij->ji", {{3, 4}}, {4, 3}},
      {"ij->i", {{3, 4}}, {3}},
      {"i,i", {{5}, {5}}, {}},                          // implicit: a scalar
      {"ij,jk", {{3, 4}, {4, 2}}, {3, 2}},              // implicit: "ik"
      {"bij, bjk -> bik", {{5, 2, 3}, {5, 3, 4}}, {5, 2, 4}},
      {"...ii ->...i", {{3, 5, 5}}, {3, 5}},            // a diagonal under an ellipsis
      {"ii", {{4, 4}}, {}},                             // the trace
      {"i,j->ij", {{3}, {4}}, {3, 4}},                  // outer product
      {"...j,j->...", {{2, 3, 4}, {4}}, {2, 3}},
      {"...ij,...jk->...ik", {{2, 1, 3, 4}, {5, 4, 2}}, {2, 5, 3, 2}},  // the ellipsis broadcast
      {"bqhd,bkhd->bhqk", {{2, 5, 3, 4}, {2, 6, 3, 4}}, {2, 3, 5, 6}},
      {"abc,cd,de->abe", {{2, 3, 4}, {4, 5}, {5, 2}}, {2, 3, 2}},  // three operands
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    std::vector<Tensor> xs;
    for (const Shape& s : c.in) xs.push_back(random(s, seed++));
    const Tensor want = naive_einsum(c.eq, xs);
    ASSERT_EQ(want.shape(), c.out) << c.eq;
    const Tensor got = run_op("Einsum", xs, equation(c.eq))[0];
    EXPECT_EQ(compare_tensors(got, want, {1e-5, 1e-6}), "") << c.eq;
  }
}

TEST(Einsum, IntegerOperandsSumExactly) {
  const Tensor a = Tensor::from_values(DType::Int64, {2, 3}, std::vector<int64_t>{1, 2, 3, 4, 5, 6});
  const Tensor b = Tensor::from_values(DType::Int64, {3}, std::vector<int64_t>{1000000007, -2, 1});
  const Tensor got = run_op("Einsum", {a, b}, equation("ij,j->i"))[0];
  ASSERT_EQ(got.shape(), Shape({2}));
  EXPECT_EQ(got.data<int64_t>()[0], 1000000007 - 4 + 3);
  EXPECT_EQ(got.data<int64_t>()[1], 4 * int64_t{1000000007} - 10 + 6);
}

TEST(Einsum, BadEquationsNameTheNode) {
  const Tensor a = random({3, 4}, 1), b = random({5, 2}, 2);
  auto message = [&](const std::string& eq, const std::vector<Tensor>& xs) {
    try {
      run_op("Einsum", xs, equation(eq));
    } catch (const GafError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("ij,jk->ik", {a, b}).find("label 'j' has extent 4 and 5"), std::string::npos);
  EXPECT_NE(message("ij,jk->ik", {a}).find("names 2 operand(s), the node has 1"), std::string::npos);
  EXPECT_NE(message("ijk->i", {a}).find("does not fit operand 0 of rank 2"), std::string::npos);
  EXPECT_NE(message("ij->iz", {a}).find("output label 'z' is in no operand"), std::string::npos);
  EXPECT_NE(message("i.j->i", {a}).find("'.' outside one '...'"), std::string::npos);
  EXPECT_NE(message("ij->i", {a}).find("no error"), std::string::npos);
  EXPECT_NE(message("ij,jk->ik", {a, b}).find("test_Einsum"), std::string::npos) << "the node is named";
}

namespace {

struct RewriteCase {
  std::string eq;
  std::vector<Shape> in;
  bool as_matmul;  // rewritten at load into Transpose + MatMul (no Einsum left)
};

}  // namespace

// Through the Engine (load, canonicalize, plan) fused and unfused, against the naive sum.
TEST(Einsum, TwoOperandProductsRunAsMatMulAtLoad) {
  const std::vector<RewriteCase> cases = {
      {"bqhd,bkhd->bhqk", {{2, 5, 3, 4}, {2, 6, 3, 4}}, true},  // attention's scores
      {"bhqk,bkhd->bqhd", {{2, 3, 5, 6}, {2, 6, 3, 4}}, true},  // its context
      {"ij,jk->ik", {{7, 9}, {9, 5}}, true},
      {"ik,jk->ij", {{7, 9}, {5, 9}}, true},                    // B transposed
      {"abc,cd->abd", {{2, 3, 4}, {4, 5}}, true},               // two free labels as one MatMul row axis
      {"i,i->", {{6}, {6}}, true},                              // no free label: [1, K] x [K, 1]
      {"i,j->ij", {{3}, {4}}, true},                            // nothing contracted: K = 1
      {"ii->i", {{4, 4}}, false},                               // a diagonal
      {"ij,jk->i", {{3, 4}, {4, 2}}, false},                    // k summed over one operand alone
      {"...ij,...jk->...ik", {{2, 1, 3, 4}, {5, 4, 2}}, false},  // the ellipsis broadcast
  };
  uint32_t seed = 11;
  for (const RewriteCase& c : cases) {
    GraphBuilder b("einsum");
    std::vector<ValueRef> ins;
    TensorMap inputs;
    std::vector<Tensor> xs;
    for (size_t i = 0; i < c.in.size(); ++i) {
      const std::string name = "x" + std::to_string(i);
      std::vector<Dim> dims(c.in[i].begin(), c.in[i].end());
      ins.push_back(b.input(name, DType::Float32, dims));
      xs.push_back(random(c.in[i], seed++));
      inputs[name] = xs.back();
    }
    b.output(b.op1("Einsum", ins, equation(c.eq)), "y");
    const Tensor want = naive_einsum(c.eq, xs);
    EngineOptions off;
    off.fusion.enabled = false;
    Engine fused(prepared(b.finish()), EngineOptions{});
    int einsums = 0, matmuls = 0;
    for (const Node& n : fused.graph().nodes()) einsums += n.op_type == "Einsum", matmuls += n.op_type == "MatMul";
    EXPECT_EQ(einsums, c.as_matmul ? 0 : 1) << c.eq;
    EXPECT_EQ(matmuls, c.as_matmul ? 1 : 0) << c.eq;
    Engine unfused(Graph(fused.graph()), off);
    for (Engine* e : {&fused, &unfused}) {
      const Tensor got = e->run(inputs).at("y");
      EXPECT_EQ(compare_tensors(got, want, {1e-5, 1e-6}), "") << c.eq << (e == &fused ? " fused" : " unfused");
    }
  }
}
