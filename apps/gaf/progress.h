// Progress of a long step (compiling many groups, verify): a bar redrawn in place on a terminal,
// plain "step 3/19: ..." lines at info level otherwise (logs and CI). -q hides both.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "fusion/ir/graph.h"
#include "fusion/planner/plan.h"

namespace gaf::cli {

class Progress {
 public:
  Progress(std::string step, size_t total);
  ~Progress();  // finishes the bar's line
  // Item `done` (1-based) of `total` is finished; `what` names it.
  void update(size_t done, const std::string& what);

 private:
  std::string step_;
  size_t total_;
  bool tty_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point t0_;
};

// A callback for Engine::compile / verify_groups that moves `bar` on, naming groups "g3 Softmax".
std::function<void(size_t, const FusionGroup&)> group_progress(Progress& bar);

}  // namespace gaf::cli
