// One node lowered to its own Halide pipeline (the op's algorithm under the reference schedule)
// and JIT-compiled for the host. This header hides Halide so the executor and CLI compile fast.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fusion/ops/registry.h"

namespace gaf {

class NodeKernel {
 public:
  virtual ~NodeKernel() = default;
  // inputs[i] is null for absent optional inputs and for shape-only inputs;
  // outputs are preallocated with the inferred shapes.
  virtual void run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) = 0;
  virtual const std::vector<TensorDesc>& output_descs() const = 0;
};

// Key under which identical nodes (same op, attributes, input types and value-input contents)
// share one compiled kernel.
std::string node_kernel_key(const OpSchema& schema, const Node& node, const std::vector<const TensorDesc*>& types,
                            const std::vector<const Tensor*>& values);

std::unique_ptr<NodeKernel> compile_node_kernel(const OpSchema& schema, const Node& node,
                                                const std::vector<const TensorDesc*>& types,
                                                const std::vector<const Tensor*>& values);

}  // namespace gaf
