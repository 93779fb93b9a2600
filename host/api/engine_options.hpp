// engine_options.hpp — the public Options on the host's one options model:
// an engine's Options, its metrics flags and its TOKENSPEED_METRICS_*
// environment are all Options, parsed through the table of flags and
// checked by check_options (config/metrics_flags.hpp), so code and flags are
// checked by the same rules; the launcher's options come from the checked
// settings. Startup only.
#pragma once

#include "process/launcher_runtime.hpp"
#include "tokenspeed/metrics/options.hpp"

namespace tokenspeed::metrics {

// Checks options as the flags are checked; throws StartupError naming the
// flag for anything the command line rejects.
LauncherOptions launcher_options_from(const Options& options);

}  // namespace tokenspeed::metrics
