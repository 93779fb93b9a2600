// options.hpp — the metrics options of an engine: built in code, or taken out
// of the engine's own command line (--enable-metrics and every --metrics-*
// flag) so the rest goes to the engine's parser. Startup only.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace tokenspeed::metrics {

// One field per metrics flag. An empty optional is a flag not given: the
// host's default applies (the same default as the command line's).
struct Options {
  bool enable_metrics = false;            // --enable-metrics
  std::vector<std::string> reporters;     // --metrics-reporters (each value; commas allowed)
  std::string reporter_config;            // --metrics-reporter-config, "" if none
  std::vector<std::string> plugin_dirs;   // --metrics-plugin-dir, in order
  bool allow_insecure_plugins = false;    // --metrics-allow-insecure-plugins
  std::optional<std::size_t> queue_size;  // --metrics-reporter-queue-size
  std::optional<std::chrono::duration<double>> shutdown_timeout;  // --metrics-shutdown-timeout
  std::optional<std::string> host;                                // --metrics-host
  std::optional<int> port;                                        // --metrics-port
  std::optional<std::string> multiproc_dir;                       // --metrics-multiproc-dir
  // --metrics-max-series-per-family (default 10000, 1-16777216): series one
  // family may hold in each process; labels() past it returns an empty handle.
  std::optional<std::size_t> max_series_per_family;
  // --metrics-web-config: the /metrics endpoint's TLS, basic-auth users and
  // headers, in exporter-toolkit's web configuration format.
  std::optional<std::string> web_config;
  // --metrics-node-name: the node's name in what the outputs push (the node
  // label of remote_write, OTLP's service.instance.id); default the host name.
  std::optional<std::string> node_name;
  // --metrics-views: a JSON or YAML file of views, changing families'
  // buckets, names, help, labels and outputs without touching the engine
  // (docs/views.md).
  std::optional<std::string> metric_views;

  // The command-line flags that say the same (what check would be given).
  std::vector<std::string> to_flags() const;
};

// Takes every metrics flag out of args (the arguments after the program
// name) and returns the others untouched, in their order. Flags are
// recognised as "--flag value" and "--flag=value". Throws StartupError for
// an unknown flag that begins with --metrics- or --enable-metrics, a
// missing value, or a value out of range (the key names the flag).
struct ExtractedOptions {
  Options options;
  std::vector<std::string> rest;
};
ExtractedOptions extract_metrics_options(const std::vector<std::string>& args);

// The same on main's argc/argv: the metrics flags are removed from argv in
// place (argv[0] stays; argc shrinks; argv[argc] becomes null).
Options extract_metrics_options(int& argc, char** argv);

// The metrics options an operator set in the environment, for an engine
// whose command line is its own: TOKENSPEED_METRICS_ENABLE stands for
// --enable-metrics and TOKENSPEED_METRICS_<NAME> for --metrics-<name>
// (upper case, '-' as '_'; metrics_flag_variable gives it). A switch takes
// 1, true, yes or on (0, false, no, off or empty: not given); the plugin
// directories are a list separated by ':', as PATH is. Checked as the flags
// are: StartupError, its key the variable. An unset variable is a flag not
// given.
Options metrics_options_from_environment();
std::string metrics_flag_variable(const std::string& flag);

// The metrics flags with their defaults and descriptions, for an engine's
// own --help.
std::string metrics_options_help();

}  // namespace tokenspeed::metrics
