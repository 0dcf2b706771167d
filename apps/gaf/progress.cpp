#include "apps/gaf/progress.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>

#include "fusion/report/report.h"

namespace gaf::cli {

Progress::Progress(std::string step, size_t total)
    : step_(std::move(step)),
      total_(total),
      // A bar only where a person watches it, and not when errors only are wanted (-q).
      tty_(isatty(STDERR_FILENO) && spdlog::default_logger()->should_log(spdlog::level::warn)),
      t0_(std::chrono::steady_clock::now()) {}

Progress::~Progress() {
  if (tty_ && shown_) std::fputs("\n", stderr);
}

void Progress::update(size_t done, const std::string& what) {
  if (!tty_) {
    spdlog::info("{} {}/{}: {}", step_, done, total_, what);
    return;
  }
  const int width = 30;
  int filled = total_ ? static_cast<int>(width * done / total_) : width;
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  std::string bar(filled, '#');
  bar.resize(width, '.');
  std::string label = what.size() > 40 ? what.substr(0, 37) + "..." : what;
  std::fprintf(stderr, "\r\033[K%s [%s] %zu/%zu %.1fs %s", step_.c_str(), bar.c_str(), done, total_, s, label.c_str());
  std::fflush(stderr);
  shown_ = true;
}

std::function<void(size_t, const FusionGroup&)> group_progress(Progress& bar) {
  return [&bar](size_t done, const FusionGroup& grp) {
    bar.update(done, "g" + std::to_string(grp.id) + " " + grp.kernel.label);
  };
}

}  // namespace gaf::cli
