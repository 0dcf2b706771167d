#include "fusion/report/repeats.h"

#include <map>
#include <string>
#include <vector>

namespace gaf {

RepeatedBlock find_repeated_block(const FusionPlan& plan, size_t min_period) {
  const auto& gs = plan.groups;
  size_t n = gs.size();
  RepeatedBlock best;
  std::map<std::string, int> ids;  // signatures as small integers: the search compares many pairs
  std::vector<int> sig;
  for (const FusionGroup& grp : gs)
    sig.push_back(ids.emplace(grp.signature, static_cast<int>(ids.size())).first->second);
  auto same = [&](size_t a, size_t b) { return sig[a] == sig[b]; };
  for (size_t period = min_period; period * 2 <= n; ++period)
    for (size_t first = 0; first + 2 * period <= n; ++first) {
      // Count how many blocks after the first one equal it, group by group.
      size_t count = 1;
      while (first + (count + 1) * period <= n) {
        bool equal = true;
        for (size_t k = 0; k < period && equal; ++k) equal = same(first + k, first + count * period + k);
        if (!equal) break;
        ++count;
      }
      if (count >= 2 && count * period > best.count * best.period) best = {first, period, count};
    }
  return best;
}

}  // namespace gaf
