// What gaf-tune's host and npu-tile searches share: the plan's distinct group signatures, each
// group's share of the time budget, and the search itself (random legal points for about half
// the trials, then hill-climbing from the best until no neighbour improves).
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "fusion/planner/plan.h"

namespace gaf::tune {

struct DistinctGroup {
  const FusionGroup* group = nullptr;  // the first group with the signature
  int count = 0;                       // groups sharing it
};

// Signatures in plan order (only `only_signature` when given) and their groups.
std::vector<std::string> distinct_groups(const FusionPlan& plan, const std::string& only_signature,
                                         std::map<std::string, DistinctGroup>& out);

// "YYYY-MM-DD" (UTC), the date of a database entry.
std::string today();

// Splits what is left of the budget among the groups still to tune, in proportion to their weight
// (default time x groups sharing the signature).
class BudgetShares {
 public:
  explicit BudgetShares(double weight_total) : weight_left_(weight_total) {}
  // Seconds for the next group of `weight` when `seconds_left` remain.
  double next(double weight, double seconds_left) {
    double share = std::max(0.0, seconds_left) * (weight_left_ > 0 ? weight / weight_left_ : 1.0);
    weight_left_ -= weight;
    return share;
  }

 private:
  double weight_left_;
};

// Searches `space` from `best` (already measured: `best_cost`). `measure(p)` returns p's cost, or
// nothing when p was rejected; each point is measured at most once. `more()` says whether trials
// and time remain. `Space` has random(rng), neighbours(p) and size(); `Point` has operator==.
template <typename Space, typename Point, typename Measure, typename More>
void search_points(const Space& space, Point& best, double& best_cost, int trials, std::mt19937& rng, Measure measure,
                   More more) {
  std::vector<Point> tried{best};
  auto try_point = [&](const Point& p) {
    if (std::find(tried.begin(), tried.end(), p) != tried.end()) return;
    tried.push_back(p);
    std::optional<double> cost = measure(p);
    if (cost && *cost < best_cost) {
      best_cost = *cost;
      best = p;
    }
  };
  // Random exploration for half the trials (the space of a row group may be smaller), then
  // hill-climbing from the best point until no neighbour improves.
  size_t explore = std::min(space.size(), static_cast<size_t>(std::max(1, trials / 2)));
  for (size_t i = 0; i < explore * 4 && tried.size() <= explore && more(); ++i) try_point(space.random(rng));
  for (bool improved = true; improved && more();) {
    Point from = best;
    for (const Point& n : space.neighbours(from)) {
      if (!more()) break;
      try_point(n);
    }
    improved = !(best == from);
  }
}

}  // namespace gaf::tune
