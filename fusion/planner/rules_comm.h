// The comm_compute rule (rules_comm.cpp) and the row split its kernel uses.
#pragma once

#include <memory>

#include "fusion/planner/rule.h"

namespace gaf {

std::shared_ptr<const FusionRule> make_comm_compute_rule();

// The axis along which a comm_compute group's ranks split the reduced tensor's rows: the
// outermost axis with extent > 1 other than the last (rows stay contiguous blocks of memory);
// -1 when there is none or `ranks` does not divide it (the rule then does not match).
int comm_row_split_axis(const Shape& reduced, int64_t ranks);

}  // namespace gaf
