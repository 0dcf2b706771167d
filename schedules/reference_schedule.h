// The reference schedule: every stage of an op's algorithm computed at root, outputs vectorised
// and parallelised along their natural axes. Simple on purpose: it is what every faster schedule
// is checked against, and it is the "every op its own compute_root pipeline" unfused reference.
#pragma once

#include <vector>

#include "fusion/ops/op_builder.h"

namespace gaf {

// A MatMul accumulator stage: k outside the vectorised output columns, so each step is a
// row-wide FMA on contiguous memory rather than a strided dot product. Returns false (and does
// nothing) for a stage without an update over a reduction. Shared by the fused schedule.
bool schedule_accumulator(const Stage& s);

void apply_reference_schedule(const std::vector<TensorFunc>& outputs, const std::vector<Stage>& stages);

}  // namespace gaf
