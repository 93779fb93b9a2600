// metrics_flags.hpp — the metrics options of a node, one model for the
// command line, the environment and an engine's Options: the flags of the
// table (metrics_flag_table.hpp) declared for Boost.Program_options and
// parsed into Options, the one check of every range with every default
// applied (check_options, giving MetricsSettings), and command-line mistakes
// turned into StartupError. Parses and checks; never loads anything.
// Tested in test/unit/config/reporter_config_test.cpp,
// test/unit/config/metrics_flag_table_test.cpp and
// test/unit/api/engine_options_test.cpp.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>

#include "config/metrics_flag_table.hpp"
#include "core/delivery_defaults.hpp"
#include "core/series_bound.hpp"

namespace tokenspeed::metrics {

// The metrics options of a node, checked, with their defaults: what the
// commands, the launcher and the engine API use. Each field below is the
// field of Options of its name in the type its users need, its row's default
// applied (metrics_flag_table.hpp) when the row has one.
struct MetricsSettings {
  // The options as given. The selection, the configuration file and the
  // plugin directories are checked against the loaded plugins at startup
  // (load_metrics_startup); the fields below are the others, checked.
  Options given;
  std::size_t queue_size = kDefaultQueueSize;  // events per ring (collector thread x output)
  std::chrono::nanoseconds shutdown_timeout = kDefaultShutdownTimeout;  // the node's budget
  // The Prometheus endpoint's address and the base of the run directories.
  // Not given: the endpoint's and the run directory's own defaults
  // (prometheus/prometheus_options.hpp applies them).
  std::optional<std::string> host;
  std::optional<unsigned short> port;
  std::optional<std::filesystem::path> multiproc_dir;
  std::size_t max_series_per_family = kDefaultMaxSeriesPerFamily;  // series_bound.hpp
  // The endpoint's web configuration file; read (and checked) when the
  // endpoint starts, and by check.
  std::optional<std::string> web_config;
  // The node's name in the outputs' process identity (--metrics-node-name);
  // "" means the host name.
  std::string node_name;
  // The views file (--metrics-views), read and checked at startup
  // (read_metric_views); producers get its content through the handoff.
  std::optional<std::string> metric_views;
};

// The one check of the metrics options, from the flags and from code alike:
// every given value against its row of the table (a number's range, a text
// that must not be empty, the row's own rule such as the node name's), then
// the rows' defaults. Throws StartupError naming the flag. The selection,
// the configuration file and the plugin directories are carried over as
// given; they are checked with the plugins loaded, at startup
// (load_metrics_startup).
MetricsSettings check_options(const Options& given);

// Declares the flags of groups (every flag of the table by default), with
// their defaults and help.
void add_metrics_flags(boost::program_options::options_description& description,
                       std::span<const FlagGroup> groups = kAllFlagGroups);

// Every metrics flag, as an engine's --help and the flags command show them.
boost::program_options::options_description all_metrics_flags();

// The metrics flags of a parsed command line, as given: every flag of the
// table the description declared and the command line gave; a flag left at
// its default is not given. A number outside its range throws StartupError
// naming the flag; check_options does the rest.
Options options_from_flags(const boost::program_options::variables_map& values);

// The metrics options the environment gives, each flag's variable
// (flag_variable) read by its row: a switch is 1, true, yes or on (0, false,
// no, off or empty: off; any case), a list is split at the row's separator,
// a number must be whole (seconds may have a fraction), text is taken as it
// is; then checked as check_options checks them. Errors are keyed by the
// variable. lookup gives a variable's value, null when it is not set.
Options options_from_environment(const std::function<const char*(const std::string&)>& lookup);

// Parses argv (argv[0] is the command name) against description. Unknown
// flags, missing values and stray arguments throw StartupError naming the flag.
boost::program_options::variables_map parse_command_line(
    int argc, char** argv, const boost::program_options::options_description& description);

// Takes the flags of description out of args (the arguments after the
// program name) and returns the others in their order. An unknown flag that
// begins with --metrics- or --enable-metrics, a missing value or a value of
// the wrong type throws StartupError naming the flag.
struct ExtractedFlags {
  boost::program_options::variables_map values;
  std::vector<std::string> rest;
};
ExtractedFlags extract_flags(const std::vector<std::string>& args,
                             const boost::program_options::options_description& description);

// "usage: tokenspeed-metrics <command> <synopsis>" followed by the options.
std::string usage(const std::string& command, const std::string& synopsis,
                  const boost::program_options::options_description& description);

}  // namespace tokenspeed::metrics
