// gaf verify: each fused group against the unfused reference on the same inputs. The reference
// executor runs the graph op by op; before each group, the group's kernel is run on the
// reference's values of the group's inputs, so every group's error is its own (errors of earlier
// groups do not flow in) and "which fusion changed my result" has an answer.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "generators/executable.h"

namespace gaf {

// numpy.allclose's rule: |got - want| <= atol + rtol * |want| for every element.
struct Tolerance {
  double rtol = 1e-4;
  double atol = 1e-5;
};

struct TensorError {
  std::string value;  // the compared tensor (for a group: its worst output)
  int64_t elements = 0;
  double max_abs = 0;     // max |got - want|
  double max_rel = 0;     // max |got - want| / |want| over elements with |want| > atol
  int64_t max_ulps = -1;  // float32 only, over elements with |want| > atol: max distance in units
                          // in the last place; -1 for other dtypes
  double rel_l2 = 0;      // ||got - want||_2 / ||want||_2 over the finite elements (0 when want is 0)
  int64_t outside = 0;    // elements outside the tolerance (NaN/Inf mismatches included)
  bool ok() const { return outside == 0; }
};

// Compares `got` with `want` (same dtype and shape, else GafError naming `value`).
TensorError compare_tensors(const std::string& value, const Tensor& got, const Tensor& want, const Tolerance& tol);
// The worse of two comparisons (more elements outside, then larger max_abs); counts add up.
TensorError worse_of(const TensorError& a, const TensorError& b);

struct GroupCheck {
  int group = -1;
  TensorError error;  // over all the group's outputs
};

using VerifyProgress = std::function<void(size_t done, const FusionGroup& grp)>;

// `fused` must have been built for `g` and `plan`, or for `kernel_graph`: the same graph with
// weights packed (--precision bf16, whose groups are checked against the fp32 reference of `g`);
// a group input whose constant is packed there is fed to the kernel from it. One GroupCheck per
// plan group, in plan order.
std::vector<GroupCheck> verify_groups(const Graph& g, const FusionPlan& plan, PlanRunner& fused, ReferenceExecutor& ref,
                                      const TensorMap& inputs, const Tolerance& tol,
                                      const VerifyProgress& progress = {}, const Graph* kernel_graph = nullptr);

}  // namespace gaf
