// Helpers for op-level tests: run one node through the reference executor.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "generators/reference_executor.h"

namespace gaf::testing {

inline ReferenceExecutor& shared_executor() {
  static ReferenceExecutor ex;
  return ex;
}

// Runs `op_type` with `attrs` on `inputs` (a default Tensor = absent optional input) and returns
// `num_outputs` outputs.
inline std::vector<Tensor> run_op(const std::string& op_type, const std::vector<Tensor>& inputs, Attributes attrs = {},
                                  int num_outputs = 1) {
  Node n;
  n.name = "test_" + op_type;
  n.op_type = op_type;
  n.attrs = std::move(attrs);
  std::vector<const Tensor*> ins;
  std::vector<TensorDesc> descs(inputs.size());
  std::vector<const TensorDesc*> types;
  for (size_t i = 0; i < inputs.size(); ++i) {
    bool present = inputs[i].rank() > 0 || inputs[i].raw() != nullptr;
    n.inputs.push_back(present ? "in" + std::to_string(i) : "");
    descs[i] = TensorDesc{inputs[i].dtype(), inputs[i].shape()};
    ins.push_back(present ? &inputs[i] : nullptr);
    types.push_back(present ? &descs[i] : nullptr);
  }
  for (int k = 0; k < num_outputs; ++k) n.outputs.push_back("out" + std::to_string(k));
  return shared_executor().run_node(n, ins, types);
}

inline Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_values(DType::Float32, s, v); }
inline Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_values(DType::Int64, s, v); }

inline std::vector<float> values_f32(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}
inline std::vector<int64_t> values_i64(const Tensor& t) {
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.numel());
}

}  // namespace gaf::testing
