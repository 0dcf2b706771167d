// A model quantized by onnxruntime's dynamic quantization (DynamicQuantizeLinear + MatMulInteger
// + Cast + scale Muls per MatMul, test/models/export_dynamic_quant.py) loads as ordinary MatMuls
// on its dequantized weights (fusion/frontend/dequantized_matmul.h), planned as MatMul + epilogue
// and packed int8 where the CPU has int8 dot products. Outside truth: the model's own integer
// semantics and its float32 counterpart, both computed in numpy by the export script.
// Skipped when python3-onnx is missing.
#include <gtest/gtest.h>

#include <fstream>

#include "engine/engine.h"
#include "generators/group_verifier.h"
#include "runtime/tensor_io.h"
#include "test/cli_util.h"
#include "test/low_precision_test_util.h"

using namespace gaf;
using namespace gaf::testing;

namespace {

std::string exported() {
  static const std::string dir = [] {
    const std::string d = scratch_dir("dynamic_quant");
    CommandResult r = run_command(
        std::string(python()) + " " + source_dir() + "/test/models/export_dynamic_quant.py " + d, d + "_gen");
    return r.exit_code == 0 ? d : std::string();
  }();
  return dir;
}

}  // namespace

// Stated tolerance: rel L2 <= 2e-2 against both truths. The kernels quantize activations per
// row (int8) or not at all (fp32) where the model quantizes them per tensor, so neither equals
// the model's integer math exactly. Measured (AMD EPYC Zen 5, int8 kernels): 1.2e-2 to the
// model's integer math and 8.7e-3 to float32 — the model's own math is 8.9e-3 from float32.
TEST(QuantizedModel, DynamicQuantizedMatMulsRunAsMatMuls) {
  const std::string dir = exported();
  if (dir.empty()) GTEST_SKIP() << "python3-onnx is missing (apt-get install python3-onnx)";
  const TensorMap in{{"x", read_npy(dir + "/x.npy")}};
  const Tensor model = read_npy(dir + "/expected.npy"), fp32 = read_npy(dir + "/expected_fp32.npy");
  for (bool fused : {true, false}) {
    EngineOptions o;
    o.fusion.enabled = fused;
    Engine e(dir + "/model.onnx", o);
    for (const Node& n : e.graph().nodes()) {
      EXPECT_NE(n.op_type, "MatMulInteger");
      EXPECT_NE(n.op_type, "DynamicQuantizeLinear");
    }
    int matmuls = 0;
    for (const Node& n : e.graph().nodes())
      matmuls += n.op_type == "MatMul" && n.attrs.get_int("_int8_weights", 0) == 1;
    EXPECT_EQ(matmuls, 2);
    if (fused) EXPECT_EQ(e.plan().groups.size(), 2u);  // MatMul + bias + Relu, MatMul + bias
    const Tensor got = e.run(in).at("y2");
    const double to_model = compare_tensors("y2", got, model, {1e-4, 1e-5}).rel_l2;
    const double to_fp32 = compare_tensors("y2", got, fp32, {1e-4, 1e-5}).rel_l2;
    std::printf("%s: rel L2 %.3g against the model's integer math, %.3g against fp32\n", fused ? "fused" : "unfused",
                to_model, to_fp32);
    EXPECT_LE(to_model, 2e-2);
    EXPECT_LE(to_fp32, 2e-2);
    bool int8 = false;
    for (const auto& [name, v] : e.kernel_graph().values())
      int8 = int8 || (v.constant && v.constant->dtype() == DType::Int8);
    EXPECT_EQ(int8, cpuinfo_has("avx512_vnni")) << "a model's int8 weights stay int8 where the CPU has VNNI";
  }
}
