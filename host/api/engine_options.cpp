// engine_options.cpp — the public Options, flag extraction and their
// mapping onto the launcher's options, by the one check of config/. Never
// loads or starts anything.
#include "api/engine_options.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <limits>
#include <map>
#include <string_view>
#include <sstream>

#include "prometheus/prometheus_options.hpp"
#include "tokenspeed/metrics/startup_error.hpp"

namespace tokenspeed::metrics {
namespace {

namespace po = boost::program_options;

// What extraction returns: the flags' values, once check_options accepted
// them (so each fits its field).
Options options_from(const GivenOptions& given) {
  Options options;
  options.enable_metrics = given.metrics.enable_metrics;
  options.reporters = given.metrics.reporters;
  options.reporter_config = given.metrics.reporter_config_file;
  options.plugin_dirs = given.metrics.plugin_dirs;
  options.allow_insecure_plugins = given.metrics.allow_insecure_plugins;
  options.queue_size = given.queue_size;
  if (given.shutdown_seconds) {
    options.shutdown_timeout = std::chrono::duration<double>(*given.shutdown_seconds);
  }
  options.host = given.host;
  if (given.port) options.port = static_cast<int>(*given.port);
  options.multiproc_dir = given.multiproc_dir;
  options.web_config = given.web_config;
  options.node_name = given.node_name;
  if (given.max_series_per_family) {
    options.max_series_per_family = static_cast<std::size_t>(*given.max_series_per_family);
  }
  return options;
}

// The options as given, field by field (nothing checked).
GivenOptions given_options(const Options& options) {
  GivenOptions given;
  given.metrics.enable_metrics = options.enable_metrics;
  given.metrics.reporters = options.reporters;
  given.metrics.reporter_config_file = options.reporter_config;
  given.metrics.plugin_dirs = options.plugin_dirs;
  given.metrics.allow_insecure_plugins = options.allow_insecure_plugins;
  given.queue_size = options.queue_size;
  if (options.shutdown_timeout) given.shutdown_seconds = options.shutdown_timeout->count();
  given.host = options.host;
  if (options.port) given.port = *options.port;
  given.multiproc_dir = options.multiproc_dir;
  given.web_config = options.web_config;
  given.node_name = options.node_name;
  if (options.max_series_per_family) {
    // Past what a long long holds it is out of range all the same.
    constexpr auto kLargest = static_cast<std::size_t>(std::numeric_limits<long long>::max());
    given.max_series_per_family =
        static_cast<long long>(std::min(*options.max_series_per_family, kLargest));
  }
  return given;
}

std::string format_double(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

}  // namespace

po::options_description all_metrics_flags() {
  po::options_description description("metrics options");
  add_metrics_options(description);
  add_delivery_options(description);
  add_prometheus_options(description);
  return description;
}

// A convenience for engines that pass their options on to processes of
// their own; the host never goes through flags for its own options.
std::vector<std::string> Options::to_flags() const {
  std::vector<std::string> flags;
  if (enable_metrics) flags.emplace_back("--enable-metrics");
  for (const std::string& reporter : reporters) {
    flags.emplace_back("--metrics-reporters");
    flags.push_back(reporter);
  }
  if (!reporter_config.empty()) {
    flags.emplace_back("--metrics-reporter-config");
    flags.push_back(reporter_config);
  }
  for (const std::string& dir : plugin_dirs) {
    flags.emplace_back("--metrics-plugin-dir");
    flags.push_back(dir);
  }
  if (allow_insecure_plugins) flags.emplace_back("--metrics-allow-insecure-plugins");
  if (queue_size) {
    flags.emplace_back("--metrics-reporter-queue-size");
    flags.push_back(std::to_string(*queue_size));
  }
  if (shutdown_timeout) {
    flags.emplace_back("--metrics-shutdown-timeout");
    flags.push_back(format_double(shutdown_timeout->count()));
  }
  if (host) {
    flags.emplace_back("--metrics-host");
    flags.push_back(*host);
  }
  if (port) {
    flags.emplace_back("--metrics-port");
    flags.push_back(std::to_string(*port));
  }
  if (multiproc_dir) {
    flags.emplace_back("--metrics-multiproc-dir");
    flags.push_back(*multiproc_dir);
  }
  if (max_series_per_family) {
    flags.emplace_back("--metrics-max-series-per-family");
    flags.push_back(std::to_string(*max_series_per_family));
  }
  if (web_config) {
    flags.emplace_back("--metrics-web-config");
    flags.push_back(*web_config);
  }
  if (node_name) {
    flags.emplace_back("--metrics-node-name");
    flags.push_back(*node_name);
  }
  return flags;
}

ExtractedOptions extract_metrics_options(const std::vector<std::string>& args) {
  ExtractedFlags flags = extract_flags(args, all_metrics_flags());
  const GivenOptions given = given_options(flags.values);
  check_options(given);  // a value out of range is an error here, as on the command line
  return ExtractedOptions{options_from(given), std::move(flags.rest)};
}

Options extract_metrics_options(int& argc, char** argv) {
  if (argc < 1 || argv == nullptr) return {};
  const std::vector<std::string> args(argv + 1, argv + argc);
  ExtractedOptions extracted = extract_metrics_options(args);
  // Keep the engine's own arguments, as the same char* pointers, in order:
  // each remaining argument is the next unused argv entry equal to it.
  int out = 1;
  int next = 1;
  for (const std::string& kept : extracted.rest) {
    while (next < argc && kept != argv[next]) ++next;
    if (next >= argc) break;
    argv[out++] = argv[next++];
  }
  argc = out;
  argv[argc] = nullptr;
  return std::move(extracted.options);
}

std::string metrics_flag_variable(const std::string& flag) {
  if (flag == "--enable-metrics") return "TOKENSPEED_METRICS_ENABLE";
  std::string variable = "TOKENSPEED_METRICS_";
  for (const char c : std::string_view(flag).substr(flag.starts_with("--metrics-") ? 10 : 2)) {
    variable += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return variable;
}

namespace {

// A switch's variable: what a shell user writes for yes and for no.
bool switch_value(const std::string& variable, const std::string& value) {
  std::string lower;
  for (const char c : value)
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "1" || lower == "true" || lower == "yes" || lower == "on") return true;
  if (lower.empty() || lower == "0" || lower == "false" || lower == "no" || lower == "off") {
    return false;
  }
  throw StartupError({"", "", variable}, "expected 1, true, yes or on (or 0, false, no, off)");
}

}  // namespace

Options metrics_options_from_environment() {
  std::vector<std::string> args;
  std::map<std::string, std::string> variable_of;  // flag -> its variable, for errors
  const po::options_description flags = all_metrics_flags();
  for (const auto& option : flags.options()) {
    const std::string flag = "--" + option->long_name();
    const std::string variable = metrics_flag_variable(flag);
    const char* value = std::getenv(variable.c_str());
    if (value == nullptr) continue;
    variable_of[flag] = variable;
    if (option->semantic()->max_tokens() == 0) {
      if (switch_value(variable, value)) args.push_back(flag);
      continue;
    }
    // The plugin directories are a list, as PATH is.
    std::vector<std::string> values{value};
    if (flag == "--metrics-plugin-dir") {
      values.clear();
      std::string_view rest(value);
      for (std::size_t colon; (colon = rest.find(':')) != std::string_view::npos;
           rest.remove_prefix(colon + 1)) {
        if (colon > 0) values.emplace_back(rest.substr(0, colon));
      }
      if (!rest.empty()) values.emplace_back(rest);
    }
    for (const std::string& each : values) args.push_back(flag + "=" + each);
  }
  try {
    return extract_metrics_options(args).options;
  } catch (const StartupError& error) {
    // Named as the operator set it: the variable, not the flag it stands for.
    const auto found = variable_of.find(error.key());
    if (found == variable_of.end()) throw;
    throw StartupError({error.reporter(), error.file(), found->second}, error.message());
  }
}

std::string metrics_options_help() {
  std::ostringstream out;
  out << all_metrics_flags();
  return out.str();
}

LauncherOptions launcher_options_from(const Options& options) {
  LauncherOptions launcher;
  launcher.settings = check_options(given_options(options));
  return launcher;
}

}  // namespace tokenspeed::metrics
