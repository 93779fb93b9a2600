// engine_options.hpp — turns the public Options into the launcher's options
// through the same flag parser as the command line, so code and flags are
// checked by the same rules. Startup only.
#pragma once

#include <boost/program_options/options_description.hpp>

#include "process/launcher.hpp"
#include "tokenspeed/metrics/options.hpp"

namespace tokenspeed::metrics {

// Every metrics flag of every command: selection, plugins, delivery, Prometheus.
boost::program_options::options_description all_metrics_flags();

// Throws StartupError naming the flag for anything the command line rejects.
LauncherOptions launcher_options_from(const Options& options);

}  // namespace tokenspeed::metrics
