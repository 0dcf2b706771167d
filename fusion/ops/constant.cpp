#include "fusion/ops/elementwise_util.h"
#include "fusion/ops/families.h"

namespace gaf {

void register_constant_ops(OpRegistry&) {}

}  // namespace gaf
