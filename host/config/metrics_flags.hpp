// metrics_flags.hpp — the Boost.Program_options description of the metrics
// flags shared by every command that starts metrics, and the parse helper that
// turns command-line mistakes into StartupError. Parses; never loads anything.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>

#include "config/reporter_config.hpp"

namespace tokenspeed::metrics::cli {

// Adds --enable-metrics, --metrics-reporters (repeatable, comma lists),
// --metrics-reporter-config, --metrics-plugin-dir (repeatable) and
// --metrics-allow-insecure-plugins.
void add_metrics_options(boost::program_options::options_description& description);

// Adds only --metrics-plugin-dir and --metrics-allow-insecure-plugins (the
// plugin search flags, for commands that list plugins).
void add_plugin_search_options(boost::program_options::options_description& description);

// How every process delivers and shuts down: --metrics-reporter-queue-size
// and --metrics-shutdown-timeout.
struct DeliveryOptions {
  std::size_t queue_size = 0;              // events per ring (collector thread x output)
  std::chrono::nanoseconds shutdown_timeout{0};  // the node's shutdown budget
};

// Adds --metrics-reporter-queue-size and --metrics-shutdown-timeout, with
// the event router's and the launcher's defaults.
void add_delivery_options(boost::program_options::options_description& description);

// Reads them; throws StartupError naming the flag for a value out of range
// (queue size 2 - 16777216, timeout 0 - 3600 s).
DeliveryOptions delivery_options_from(const boost::program_options::variables_map& values);

// The metrics flags of a parsed command line (absent flags keep defaults).
MetricsOptions metrics_options_from(const boost::program_options::variables_map& values);

// Parses argv (argv[0] is the command name) against description. Unknown
// flags, missing values and stray arguments throw StartupError naming the flag.
boost::program_options::variables_map parse_command_line(
    int argc, char** argv, const boost::program_options::options_description& description);

// Takes the flags of description out of args (the arguments after the
// program name) and returns the others in their order. An unknown flag that
// begins with --metrics- or --enable-metrics, a missing value or a bad value
// throws StartupError naming the flag.
struct ExtractedFlags {
  boost::program_options::variables_map values;
  std::vector<std::string> rest;
};
ExtractedFlags extract_flags(const std::vector<std::string>& args,
                             const boost::program_options::options_description& description);

// "usage: tokenspeed-metrics <command> <synopsis>" followed by the options.
std::string usage(const std::string& command, const std::string& synopsis,
                  const boost::program_options::options_description& description);

}  // namespace tokenspeed::metrics::cli
