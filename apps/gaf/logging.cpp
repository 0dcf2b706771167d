#include "apps/gaf/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>

#include "runtime/tensor.h"

namespace gaf::cli {

namespace {

// Ordered from quietest to loudest; -v moves one step right.
const std::pair<const char*, spdlog::level::level_enum> kLevels[] = {{"error", spdlog::level::err},
                                                                     {"warn", spdlog::level::warn},
                                                                     {"info", spdlog::level::info},
                                                                     {"debug", spdlog::level::debug}};

int base_level() {
  const char* env = std::getenv("GAF_LOG_LEVEL");
  if (!env || !*env) return 1;
  for (int i = 0; i < 4; ++i)
    if (std::string(env) == kLevels[i].first) return i;
  throw GafError("GAF_LOG_LEVEL: unknown level '" + std::string(env) + "' (valid: error, warn, info, debug)");
}

}  // namespace

void configure_logging(int verbose, bool quiet) {
  int level = quiet ? 0 : std::min(3, base_level() + verbose);
  auto logger = spdlog::get("gaf");
  if (!logger) logger = spdlog::stderr_color_mt("gaf");
  logger->set_pattern("gaf: %^%l%$: %v");
  logger->set_level(kLevels[level].second);
  spdlog::set_default_logger(logger);
}

bool info_enabled() { return spdlog::default_logger()->should_log(spdlog::level::info); }

}  // namespace gaf::cli
