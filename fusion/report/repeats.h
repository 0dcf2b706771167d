// Repeated layers in a plan: the longest run of consecutive, identical blocks of groups (equal
// group signatures in the same order), e.g. BERT's 12 encoder layers. The picture and the HTML
// tables draw the first block in full and fold the others, so large graphs stay readable.
#pragma once

#include <cstddef>

#include "fusion/planner/plan.h"

namespace gaf {

struct RepeatedBlock {
  size_t first = 0;   // plan index of the first group of the first block
  size_t period = 0;  // groups per block
  size_t count = 0;   // identical blocks in a row (< 2: nothing repeats)
  bool repeats() const { return count >= 2; }
  // Plan index i lies in a folded block (the second or a later one).
  bool folded(size_t i) const { return repeats() && i >= first + period && i < first + period * count; }
};

// Blocks of at least `min_period` groups; the one covering the most groups wins.
RepeatedBlock find_repeated_block(const FusionPlan& plan, size_t min_period = 2);

}  // namespace gaf
