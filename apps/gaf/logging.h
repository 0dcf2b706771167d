// Log levels for the gaf CLI (spdlog, to stderr): GAF_LOG_LEVEL=error|warn|info|debug sets the
// base (default warn), each -v raises it one step, -q keeps errors only. Library code logs with
// spdlog::debug (the planner's decisions); commands log their steps at info.
#pragma once

#include <string>

namespace gaf::cli {

// Throws GafError for an unknown GAF_LOG_LEVEL value.
void configure_logging(int verbose, bool quiet);
// True when messages at info level are shown (progress lines off a TTY use it).
bool info_enabled();

}  // namespace gaf::cli
