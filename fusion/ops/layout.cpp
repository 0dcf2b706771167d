#include "fusion/ops/elementwise_util.h"
#include "fusion/ops/families.h"

namespace gaf {

void register_layout_ops(OpRegistry&) {}

}  // namespace gaf
