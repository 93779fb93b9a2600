// engine_options.hpp — the public Options on the host's one options model:
// an engine's Options and its metrics flags both become GivenOptions, checked
// by check_options (config/metrics_flags.hpp), so code and flags are checked
// by the same rules; the launcher's options come from the checked settings.
// Startup only.
#pragma once

#include <boost/program_options/options_description.hpp>

#include "process/launcher_runtime.hpp"
#include "tokenspeed/metrics/options.hpp"

namespace tokenspeed::metrics {

// Every metrics flag of every command: selection, plugins, delivery, Prometheus.
boost::program_options::options_description all_metrics_flags();

// Checks options as the flags are checked; throws StartupError naming the
// flag for anything the command line rejects.
LauncherOptions launcher_options_from(const Options& options);

}  // namespace tokenspeed::metrics
