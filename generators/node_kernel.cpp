#include "generators/node_kernel.h"

#include <sstream>

#include "fusion/ops/op_builder.h"
#include "generators/halide_buffers.h"
#include "schedules/host_target.h"
#include "schedules/reference_schedule.h"

namespace gaf {

using namespace Halide;

std::string node_kernel_key(const OpSchema& schema, const Node& node, const std::vector<const TensorDesc*>& types,
                            const std::vector<const Tensor*>& values) {
  std::ostringstream os;
  os << node.op_type << '|' << node.attrs.fingerprint() << '|' << node.outputs.size() << '|';
  for (size_t i = 0; i < types.size(); ++i) {
    if (!types[i]) {
      os << "_;";
      continue;
    }
    os << dtype_name(types[i]->dtype) << shape_str(types[i]->shape);
    if (schema.is_value_input(static_cast<int>(i)) && values[i]) {
      os << '=';
      for (int64_t k = 0; k < values[i]->numel(); ++k) os << values[i]->as_double(k) << ',';
    }
    os << ';';
  }
  return os.str();
}

namespace {

class JitNodeKernel : public NodeKernel {
 public:
  JitNodeKernel(const OpSchema& schema, const Node& node, const std::vector<const TensorDesc*>& types,
                const std::vector<const Tensor*>& values) {
    InferContext ictx(node, types, values);
    outs_ = infer_node(schema, node, types, values);
    std::vector<TensorFunc> ins(types.size());
    params_.resize(types.size());
    for (size_t i = 0; i < types.size(); ++i) {
      if (!types[i]) continue;
      ins[i].dtype = types[i]->dtype;
      ins[i].shape = types[i]->shape;
      if (schema.is_shape_only_input(static_cast<int>(i))) continue;
      ImageParam p(halide_type(types[i]->dtype), static_cast<int>(types[i]->shape.size()), "in" + std::to_string(i));
      params_[i] = p;
      ins[i].func = Func(p);
    }
    BuildContext b(ictx, ins, outs_);
    schema.build(b);
    std::vector<Func> funcs;
    for (int k = 0; k < b.num_outputs(); ++k) {
      if (!b.outputs()[k].defined()) ictx.fail("internal: algorithm did not define output " + std::to_string(k));
      // Zero-sized outputs are left out of the pipeline (e.g. an empty part of a Split).
      if (shape_numel(outs_[k].shape) == 0) continue;
      funcs.push_back(b.outputs()[k].func);
      computed_.push_back(k);
    }
    if (funcs.empty()) return;  // nothing to compute
    apply_reference_schedule(b.outputs(), b.stages());
    pipeline_ = Pipeline(funcs);
    pipeline_.compile_jit(host_target());
  }

  const std::vector<TensorDesc>& output_descs() const override { return outs_; }

  void run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) override {
    realize_into(pipeline_, params_, inputs, computed_, outputs, "kernel");
  }

 private:
  std::vector<TensorDesc> outs_;
  std::vector<ImageParam> params_;
  std::vector<int> computed_;  // the outputs the pipeline realizes (the non-empty ones)
  Pipeline pipeline_;
};

}  // namespace

std::unique_ptr<NodeKernel> compile_node_kernel(const OpSchema& schema, const Node& node,
                                                const std::vector<const TensorDesc*>& types,
                                                const std::vector<const Tensor*>& values) {
  try {
    return std::make_unique<JitNodeKernel>(schema, node, types, values);
  } catch (const Halide::CompileError& e) {
    throw GafError("node '" + node.name + "' (" + node.op_type + "): Halide compile error: " + std::string(e.what()));
  }
}

}  // namespace gaf
