// Every op family built once with symbolic (runtime) extents and run at several sizes, against
// the same op built statically at each size (the reference executor).
//
// A case is a function from a size s to the node's inputs. The symbolic build uses a
// Halide::Param<int32_t> S: every input/output extent and every value-input element that changes
// with s is written as a*S + b (found by evaluating the case at the representative size and one
// more, and checked at a third), the rest stay constants. The build sees the representative's
// concrete shapes, like a real dynamic-shape kernel does.
//
// Tolerance: layout, indexing, constant and integer results must be equal; float results within
// 1e-6 relative (+1e-7 absolute, for values near 0) — the algorithms are the same, only a count
// becomes a runtime value.
#include <cctype>
#include <functional>
#include <limits>

#include "fusion/ops/op_builder.h"
#include "generators/halide_buffers.h"
#include "schedules/reference_schedule.h"
#include "test/op_test_util.h"
#include "test/tensor_compare.h"

using namespace gaf;
using namespace gaf::testing;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

struct Case {
  std::string name, op;
  Attributes attrs;
  std::function<std::vector<Tensor>(int64_t s)> inputs;  // a default Tensor = absent input
  int num_outputs = 1;
  int64_t rep = 8;                          // the representative size the symbolic build sees
  std::vector<int64_t> sizes = {1, 3, 17};  // run sizes besides rep
};

// Deterministic float data of a shape: small distinct values, some negative.
Tensor data_f32(Shape s, int seed = 0) {
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(static_cast<int>((i * 37 + seed * 11) % 41) - 20) / 8.0f;
  return f32(s, v);
}

Tensor bools(Shape s) {
  Tensor t(DType::Bool, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<uint8_t>()[i] = (i * 7) % 3 == 0;
  return t;
}

Tensor i64s(std::vector<int64_t> v) { return i64({static_cast<int64_t>(v.size())}, v); }
Tensor scalar_i64(int64_t v) { return i64({}, {v}); }

Attributes ints(const std::string& name, std::vector<int64_t> v) {
  Attributes a;
  a.set(name, std::move(v));
  return a;
}
Attributes with(Attributes a, const std::string& name, AttrValue v) {
  a.set(name, std::move(v));
  return a;
}

Node make_node(const Case& c, const std::vector<Tensor>& ins) {
  Node n;
  n.name = "sym_" + c.op;
  n.op_type = c.op;
  n.attrs = c.attrs;
  for (size_t i = 0; i < ins.size(); ++i) {
    bool present = ins[i].rank() > 0 || ins[i].raw() != nullptr;
    n.inputs.push_back(present ? "in" + std::to_string(i) : "");
  }
  for (int k = 0; k < c.num_outputs; ++k) n.outputs.push_back("out" + std::to_string(k));
  return n;
}

// a*S + b through the values x0 at rep and x1 at rep + 1; undefined when constant. Checks the
// form at `check_s`, where the value is x2.
Halide::Expr affine(const Halide::Param<int32_t>& S, int64_t rep, int64_t x0, int64_t x1, int64_t check_s, int64_t x2,
                    const std::string& what) {
  int64_t a = x1 - x0, b = x0 - a * rep;
  EXPECT_EQ(a * check_s + b, x2) << what << " is not affine in s";
  if (a == 0) return Halide::Expr();
  return fold(static_cast<int32_t>(a) * S + static_cast<int32_t>(b));
}

std::vector<Halide::Expr> affine_shape(const Halide::Param<int32_t>& S, int64_t rep, const Shape& s0, const Shape& s1,
                                       const Shape& s2, int64_t check_s, const std::string& what) {
  EXPECT_EQ(s0.size(), s1.size());
  std::vector<Halide::Expr> e;
  bool any = false;
  for (size_t d = 0; d < s0.size(); ++d) {
    e.push_back(affine(S, rep, s0[d], s1[d], check_s, s2[d], what + " dim " + std::to_string(d)));
    any = any || e.back().defined();
  }
  return any ? e : std::vector<Halide::Expr>{};
}

struct Descs {
  std::vector<Tensor> ins;
  std::vector<TensorDesc> descs;
  std::vector<const TensorDesc*> types;
  std::vector<const Tensor*> values;
  Node node;
  std::vector<TensorDesc> outs;

  Descs(const Case& c, int64_t s) : ins(c.inputs(s)), descs(ins.size()), node(make_node(c, ins)) {
    for (size_t i = 0; i < ins.size(); ++i) {
      bool present = !node.inputs[i].empty();
      descs[i] = TensorDesc{ins[i].dtype(), ins[i].shape()};
      types.push_back(present ? &descs[i] : nullptr);
      values.push_back(present ? &ins[i] : nullptr);
    }
    outs = infer_node(OpRegistry::global().get(node), node, types, values);
  }
};

// The op built once with S symbolic, compiled for the JIT.
struct SymbolicKernel {
  Halide::Param<int32_t> S{"S"};
  std::vector<Halide::ImageParam> params;
  std::vector<int> computed;
  Halide::Pipeline pipeline;
  std::vector<std::vector<Halide::Expr>> out_extents;
  std::vector<TensorFunc> outputs;  // as the BuildContext left them

  explicit SymbolicKernel(const Case& c) {
    const int64_t check_s = 17;
    Descs d0(c, c.rep), d1(c, c.rep + 1), d2(c, check_s);
    const OpSchema& schema = OpRegistry::global().get(d0.node);
    InferContext ictx(d0.node, d0.types, d0.values);
    std::vector<TensorFunc> ins(d0.ins.size());
    std::vector<std::vector<Halide::Expr>> value_exprs(d0.ins.size());
    params.resize(d0.ins.size());
    for (size_t i = 0; i < d0.ins.size(); ++i) {
      if (!d0.types[i]) continue;
      const std::string what = "input " + std::to_string(i);
      ins[i].dtype = d0.ins[i].dtype();
      ins[i].shape = d0.ins[i].shape();
      ins[i].extents = affine_shape(S, c.rep, d0.ins[i].shape(), d1.ins[i].shape(), d2.ins[i].shape(), check_s, what);
      if (schema.is_value_input(static_cast<int>(i)) && d0.ins[i].dtype() == DType::Int64) {
        std::vector<Halide::Expr> e;
        bool any = false;
        for (int64_t k = 0; k < d0.ins[i].numel(); ++k) {
          int64_t x0 = d0.ins[i].as_int(k), x1 = d1.ins[i].as_int(k);
          if (x0 == x1) {
            e.push_back(Halide::Expr(x0));  // unchanged (may not fit int32: INT64_MAX ends)
          } else {
            e.push_back(affine(S, c.rep, x0, x1, check_s, d2.ins[i].as_int(k), what + " element " + std::to_string(k)));
            any = true;
          }
        }
        if (any) value_exprs[i] = e;
      }
      if (schema.is_shape_only_input(static_cast<int>(i))) continue;
      Halide::ImageParam p(halide_type(ins[i].dtype), ins[i].rank(), "in" + std::to_string(i));
      params[i] = p;
      ins[i].func = Halide::Func(p);
    }
    for (size_t k = 0; k < d0.outs.size(); ++k)
      out_extents.push_back(affine_shape(S, c.rep, d0.outs[k].shape, d1.outs[k].shape, d2.outs[k].shape, check_s,
                                         "output " + std::to_string(k)));
    BuildContext b(ictx, ins, d0.outs, out_extents, value_exprs);
    schema.build(b);
    std::vector<Halide::Func> funcs;
    for (int k = 0; k < b.num_outputs(); ++k) {
      funcs.push_back(b.outputs()[k].func);
      computed.push_back(k);
    }
    outputs = b.outputs();
    apply_reference_schedule(b.outputs(), b.stages());
    pipeline = Halide::Pipeline(funcs);
    pipeline.compile_jit(Halide::get_jit_target_from_environment());
  }

  // The outputs at size s (shapes from static inference at s).
  std::vector<Tensor> run(const Case& c, int64_t s) {
    Descs d(c, s);
    std::vector<Tensor> outs;
    bool empty = false;
    for (const TensorDesc& o : d.outs) {
      outs.emplace_back(o.dtype, o.shape);
      empty = empty || shape_numel(o.shape) == 0;
    }
    if (empty) return outs;  // a zero-extent buffer cannot be passed (null host = bounds query)
    S.set(static_cast<int32_t>(s));
    realize_into(pipeline, params, d.values, computed, outs, c.name);
    return outs;
  }
};

bool is_float_op(const Tensor& t) { return t.dtype() == DType::Float32; }

void check_case(const Case& c) {
  SCOPED_TRACE(c.name);
  SymbolicKernel k(c);
  std::vector<int64_t> sizes = c.sizes;
  sizes.push_back(c.rep);
  for (int64_t s : sizes) {
    SCOPED_TRACE("s = " + std::to_string(s));
    std::vector<Tensor> want = run_op(c.op, c.inputs(s), c.attrs, c.num_outputs);
    std::vector<Tensor> got = k.run(c, s);
    ASSERT_EQ(got.size(), want.size());
    for (size_t o = 0; o < got.size(); ++o) {
      Tolerance tol = is_float_op(want[o]) ? Tolerance{1e-6, 1e-7} : Tolerance{0, 0};
      EXPECT_EQ(compare_tensors(got[o], want[o], tol), "") << "output " << o;
    }
  }
}

std::vector<Case> cases() {
  std::vector<Case> cs;
  auto add = [&](Case c) { cs.push_back(std::move(c)); };
  // ---- elementwise / broadcast
  add({"Add broadcast against S", "Add", {}, [](int64_t s) {
         return std::vector<Tensor>{data_f32({2, s, 4}), data_f32({s, 1}, 1)};
       }});
  add({"Add broadcast static operand", "Add", {}, [](int64_t s) {
         return std::vector<Tensor>{data_f32({1, s, 4}), data_f32({4}, 2)};
       }});
  add({"Where", "Where", {}, [](int64_t s) {
         return std::vector<Tensor>{bools({s, 1}), data_f32({1, 4}), data_f32({s, 4}, 3)};
       }});
  add({"Cast to int64", "Cast", with({}, "to", int64_t{7}), [](int64_t s) {  // 7 = INT64
         return std::vector<Tensor>{data_f32({s, 3})};
       }});
  add({"Tanh", "Tanh", {}, [](int64_t s) { return std::vector<Tensor>{data_f32({s, 3})}; }});
  // ---- normalisation / reduction
  add({"Softmax over S", "Softmax", {}, [](int64_t s) { return std::vector<Tensor>{data_f32({3, s})}; }});
  add({"LogSoftmax over S", "LogSoftmax", {}, [](int64_t s) { return std::vector<Tensor>{data_f32({2, 2, s})}; }});
  add({"Softmax legacy over [S, 4]", "Softmax", with(with({}, "axis", int64_t{1}), "_opset", int64_t{11}),
       [](int64_t s) {
         return std::vector<Tensor>{data_f32({3, s, 4})};
       }});
  Case ln{"LayerNorm with S rows", "LayerNormalization", {}, [](int64_t s) {
            return std::vector<Tensor>{data_f32({s, 16}), data_f32({16}, 1), data_f32({16}, 2)};
          }};
  ln.num_outputs = 3;
  add(ln);
  add({"LayerNorm over [S, 8]", "LayerNormalization", with({}, "axis", int64_t{1}), [](int64_t s) {
         return std::vector<Tensor>{data_f32({2, s, 8}), data_f32({8}, 1)};
       }});
  add({"ReduceMean over S", "ReduceMean", {}, [](int64_t s) {
         return std::vector<Tensor>{data_f32({3, s, 4}), i64s({1})};
       }});
  add({"ReduceSum over S, no keepdims", "ReduceSum", with({}, "keepdims", int64_t{0}), [](int64_t s) {
         return std::vector<Tensor>{data_f32({2, s}), i64s({-1})};
       }});
  add({"ReduceMax over all", "ReduceMax", {}, [](int64_t s) { return std::vector<Tensor>{data_f32({s, 3})}; }});
  add({"ReduceMean int64 over S", "ReduceMean", ints("axes", {0}), [](int64_t s) {
         std::vector<int64_t> v(static_cast<size_t>(s * 3));
         for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i * 5 % 7) - 3;
         return std::vector<Tensor>{i64({s, 3}, v)};
       }});
  Case bn{"BatchNorm training over [N, C, S]", "BatchNormalization", with({}, "training_mode", int64_t{1}),
          [](int64_t s) {
            return std::vector<Tensor>{data_f32({2, 3, s}), data_f32({3}, 1), data_f32({3}, 2), data_f32({3}, 3),
                                       f32({3}, {1, 2, 3})};
          }};
  bn.num_outputs = 3;
  add(bn);
  // ---- matmul
  add({"MatMul probs x V (K = S)", "MatMul", {}, [](int64_t s) {
         return std::vector<Tensor>{data_f32({1, 2, 3, s}), data_f32({1, 2, s, 5}, 1)};
       }});
  add({"MatMul M = S", "MatMul", {}, [](int64_t s) {
         return std::vector<Tensor>{data_f32({1, 2, s, 6}), data_f32({6, 5}, 1)};
       }});
  add({"MatMul Q x K^T (M = N = S)", "MatMul", {}, [](int64_t s) {
         return std::vector<Tensor>{data_f32({2, s, 4}), data_f32({2, 4, s}, 1)};
       }});
  add({"MatMul batch = S", "MatMul", {}, [](int64_t s) {
         return std::vector<Tensor>{data_f32({s, 3, 4}), data_f32({s, 4, 2}, 1)};
       }});
  add({"MatMul vector x [S, 3]", "MatMul", {}, [](int64_t s) {
         return std::vector<Tensor>{data_f32({s}), data_f32({s, 3}, 1)};
       }});
  add({"Gemm M = S, transB", "Gemm", with(with({}, "transB", int64_t{1}), "alpha", 0.5f), [](int64_t s) {
         return std::vector<Tensor>{data_f32({s, 6}), data_f32({5, 6}, 1), data_f32({5}, 2)};
       }});
  add({"Gemm K = S, transA", "Gemm", with({}, "transA", int64_t{1}), [](int64_t s) {
         return std::vector<Tensor>{data_f32({s, 4}), data_f32({s, 3}, 1)};
       }});
  // ---- layout
  add({"Reshape 0, 0, 3, 4", "Reshape", {}, [](int64_t s) {
         return std::vector<Tensor>{data_f32({2, s, 12}), i64s({0, 0, 3, 4})};
       }});
  add({"Reshape 0, -1", "Reshape", {}, [](int64_t s) {
         return std::vector<Tensor>{data_f32({2, s, 12}), i64s({0, -1})};
       }});
  add({"Reshape -1, 12", "Reshape", {}, [](int64_t s) {
         return std::vector<Tensor>{data_f32({2, s, 12}), i64s({-1, 12})};
       }});
  add({"Reshape to symbolic contents [2, S, 3, -1]", "Reshape", {}, [](int64_t s) {
         return std::vector<Tensor>{data_f32({2, s, 12}), i64s({2, s, 3, -1})};
       }});
  add({"Reshape to symbolic contents [2S, 6]", "Reshape", {}, [](int64_t s) {
         return std::vector<Tensor>{data_f32({s, 12}), i64s({2 * s, 6})};
       }});
  // Built at S = 4, where [S, 4] and [4, S] look alike: the groups must not pair S with 4.
  Case rs{"Reshape [S, 4] to [4, S] built at S = 4", "Reshape", {}, [](int64_t s) {
            return std::vector<Tensor>{data_f32({s, 4}), i64s({4, s})};
          }};
  rs.rep = 4;
  add(rs);
  add({"Transpose", "Transpose", ints("perm", {1, 2, 0}), [](int64_t s) {
         return std::vector<Tensor>{data_f32({2, s, 3})};
       }});
  add({"Unsqueeze", "Unsqueeze", {}, [](int64_t s) { return std::vector<Tensor>{data_f32({s, 3}), i64s({0, 2})}; }});
  add({"Squeeze", "Squeeze", {}, [](int64_t s) { return std::vector<Tensor>{data_f32({1, s, 1, 3}), i64s({0, 2})}; }});
  add({"Flatten", "Flatten", with({}, "axis", int64_t{2}), [](int64_t s) {
         return std::vector<Tensor>{data_f32({2, s, 3})};
       }});
  add({"Expand to [2, S, 4]", "Expand", {}, [](int64_t s) {
         return std::vector<Tensor>{data_f32({1, 1, 4}), i64s({2, s, 4})};
       }});
  // ---- indexing
  add({"Concat KV cache", "Concat", with({}, "axis", int64_t{2}), [](int64_t s) {
         return std::vector<Tensor>{data_f32({1, 2, s, 4}), data_f32({1, 2, 1, 4}, 1)};
       }});
  add({"Concat two symbolic parts", "Concat", with({}, "axis", int64_t{-1}), [](int64_t s) {
         return std::vector<Tensor>{data_f32({2, s}), data_f32({2, 3}, 1), data_f32({2, 2 * s}, 2)};
       }});
  Case sp{"Split in halves of 2S", "Split", with({}, "axis", int64_t{1}), [](int64_t s) {
            return std::vector<Tensor>{data_f32({3, 2 * s})};
          }};
  sp.num_outputs = 2;
  add(sp);
  Case sp2{"Split sizes [S, 2]", "Split", {}, [](int64_t s) {
             return std::vector<Tensor>{data_f32({s + 2, 3}), i64s({s, 2})};
           }};
  sp2.num_outputs = 2;
  add(sp2);
  add({"Slice symbolic end", "Slice", {}, [](int64_t s) {
         return std::vector<Tensor>{data_f32({s, 6}), i64s({1}), i64s({s - 1}), i64s({0})};
       }});
  add({"Slice start -1", "Slice", {}, [](int64_t s) {
         return std::vector<Tensor>{data_f32({2, s}), i64s({-1}), i64s({kMax}), i64s({1})};
       }});
  add({"Slice reversed, step -2", "Slice", {}, [](int64_t s) {
         return std::vector<Tensor>{data_f32({2, 2 * s}), i64s({-1}), i64s({kMin}), i64s({1}), i64s({-2})};
       }});
  add({"Slice symbolic start", "Slice", {}, [](int64_t s) {
         return std::vector<Tensor>{data_f32({s + 3, 2}), i64s({s}), i64s({kMax})};
       }});
  add({"Gather over S with -1", "Gather", {}, [](int64_t s) {
         return std::vector<Tensor>{data_f32({s, 5}), i64s({0, -1})};
       }});
  add({"Gather axis 1 over S", "Gather", with({}, "axis", int64_t{1}), [](int64_t s) {
         return std::vector<Tensor>{data_f32({3, s}), i64({2, 1}, {-1, 0})};
       }});
  add({"Gather of S indices", "Gather", {}, [](int64_t s) {
         std::vector<int64_t> idx;
         for (int64_t k = 0; k < s; ++k) idx.push_back(k * 3 % 10 - (k % 2 ? 10 : 0));
         return std::vector<Tensor>{data_f32({10, 4}), i64s(idx)};
       }});
  // ---- constants
  add({"Range 0..S", "Range", {}, [](int64_t s) {
         return std::vector<Tensor>{scalar_i64(0), scalar_i64(s), scalar_i64(1)};
       }});
  add({"Range S..2S+5", "Range", {}, [](int64_t s) {
         return std::vector<Tensor>{scalar_i64(s), scalar_i64(2 * s + 5), scalar_i64(1)};
       }});
  add({"ConstantOfShape [2, S]", "ConstantOfShape", with({}, "value", f32({1}, {1.5f})), [](int64_t s) {
         return std::vector<Tensor>{i64s({2, s})};
       }});
  add({"Shape of [2, S, 3]", "Shape", {}, [](int64_t s) { return std::vector<Tensor>{data_f32({2, s, 3})}; }});
  add({"Shape of [2, S, 3] start 1", "Shape", with({}, "start", int64_t{1}), [](int64_t s) {
         return std::vector<Tensor>{data_f32({2, s, 3})};
       }});
  add({"Size of [2, S]", "Size", {}, [](int64_t s) { return std::vector<Tensor>{data_f32({2, s})}; }});
  return cs;
}

}  // namespace

class SymbolicOp : public ::testing::TestWithParam<size_t> {};

TEST_P(SymbolicOp, MatchesStaticBuildAtEverySize) { check_case(cases().at(GetParam())); }

std::string case_test_name(const ::testing::TestParamInfo<size_t>& info) {
  std::string n;
  std::string name = cases().at(info.param).name;
  for (char ch : name) n += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return n + "_" + std::to_string(info.param);
}

INSTANTIATE_TEST_SUITE_P(AllFamilies, SymbolicOp, ::testing::Range<size_t>(0, cases().size()), case_test_name);

// The output TensorFuncs carry the caller's extents, so the next member of a group sees them.
TEST(SymbolicOps, OutputsCarryTheirExtents) {
  Case c{"Add", "Add", {}, [](int64_t s) { return std::vector<Tensor>{data_f32({2, s}), data_f32({1, s})}; }};
  SymbolicKernel k(c);
  ASSERT_EQ(k.outputs.size(), 1u);
  ASSERT_EQ(k.outputs[0].extents.size(), 2u);
  EXPECT_FALSE(k.outputs[0].is_static());
  EXPECT_TRUE(Halide::Internal::equal(k.outputs[0].dim(1), k.S));
  EXPECT_EQ(const_value(k.outputs[0].dim(0)), std::optional<int64_t>(2));
}

// Statically built ops keep constant RDom extents: the schedules read them (as_const_int).
TEST(SymbolicOps, StaticBuildKeepsConstantReductionExtents) {
  for (const char* op : {"MatMul", "Softmax"}) {
    SCOPED_TRACE(op);
    Case c{op, op, {}, [&](int64_t) {
             return std::string(op) == "MatMul" ? std::vector<Tensor>{data_f32({4, 6}), data_f32({6, 3})}
                                                : std::vector<Tensor>{data_f32({4, 6})};
           }};
    Descs d(c, 8);
    InferContext ictx(d.node, d.types, d.values);
    std::vector<TensorFunc> ins;
    for (const Tensor& t : d.ins) {
      Halide::ImageParam p(halide_type(t.dtype()), t.rank());
      ins.push_back(TensorFunc{Halide::Func(p), t.dtype(), t.shape()});
    }
    BuildContext b(ictx, ins, d.outs);
    OpRegistry::global().get(d.node).build(b);
    int reductions = 0;
    for (const Stage& st : b.stages())
      for (const Halide::RVar& r : st.reduction) {
        ++reductions;
        EXPECT_NE(Halide::Internal::as_const_int(r.extent()), nullptr) << st.func.name();
      }
    EXPECT_GT(reductions, 0);
  }
}
