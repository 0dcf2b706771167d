#include "apps/gaf-tune/search_loop.h"

#include <ctime>

namespace gaf::tune {

std::vector<std::string> distinct_groups(const FusionPlan& plan, const std::string& only_signature,
                                         std::map<std::string, DistinctGroup>& out) {
  std::vector<std::string> order;
  for (const FusionGroup& grp : plan.groups) {
    if (!only_signature.empty() && grp.signature != only_signature) continue;
    auto [it, fresh] = out.try_emplace(grp.signature, DistinctGroup{&grp, 0});
    ++it->second.count;
    if (fresh) order.push_back(grp.signature);
  }
  return order;
}

std::string today() {
  std::time_t t = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

}  // namespace gaf::tune
