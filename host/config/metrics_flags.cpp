// metrics_flags.cpp — the one check of the metrics options, and the flag
// definitions and command-line parsing with Boost.Program_options that fill
// them. Never reads files or loads plugins.
#include "config/metrics_flags.hpp"

#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <boost/program_options/parsers.hpp>
#include <boost/program_options/value_semantic.hpp>

#include "core/startup_error.hpp"

namespace tokenspeed::metrics {
namespace {

constexpr std::size_t kMinQueueSize = 2;
constexpr std::size_t kMaxQueueSize = std::size_t{1} << 24;
constexpr double kMaxShutdownSeconds = 3600;

std::size_t checked_queue_size(const std::optional<std::size_t>& given) {
  const std::size_t size = given.value_or(kDefaultQueueSize);
  if (size < kMinQueueSize || size > kMaxQueueSize) {
    throw StartupError({"", "", "--metrics-reporter-queue-size"}, "must be between 2 and 16777216");
  }
  return size;
}

std::chrono::nanoseconds checked_shutdown_timeout(const std::optional<double>& given) {
  if (!given) return kDefaultShutdownTimeout;
  const double seconds = *given;
  if (!(seconds >= 0) || seconds > kMaxShutdownSeconds) {
    throw StartupError({"", "", "--metrics-shutdown-timeout"},
                       "must be between 0 and 3600 seconds");
  }
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(seconds));
}

// The Prometheus flags' errors name the built-in output.
StartupError prometheus_error(const char* flag, const std::string& message) {
  return StartupError({"prometheus", "", flag}, message);
}

void check_endpoint(const GivenOptions& given, MetricsSettings& settings) {
  if (given.host && given.host->empty()) {
    throw prometheus_error("--metrics-host", "the host must not be empty");
  }
  settings.host = given.host;
  if (given.port) {
    const long long port = *given.port;
    if (port < 0 || port > 65535) {
      throw prometheus_error("--metrics-port",
                             "port " + std::to_string(port) + " is outside 0-65535");
    }
    settings.port = static_cast<unsigned short>(port);
  }
}

void check_multiproc_dir(const GivenOptions& given, MetricsSettings& settings) {
  if (!given.multiproc_dir) return;
  if (given.multiproc_dir->empty()) {
    throw prometheus_error("--metrics-multiproc-dir", "the directory must not be empty");
  }
  settings.multiproc_base_dir = *given.multiproc_dir;
}

// A label value, a resource attribute and a tag alike: printable ASCII,
// none of the characters that a back end's syntax would take apart.
std::string checked_node_name(const std::string& name) {
  if (name.empty() || name.size() > 253) {
    throw StartupError({"", "", "--metrics-node-name"},
                       "must be 1-253 characters, got " + std::to_string(name.size()));
  }
  for (const char c : name) {
    if (c <= ' ' || c > '~' || c == '/' || c == ',' || c == '"' || c == '\'' || c == '\\') {
      throw StartupError({"", "", "--metrics-node-name"},
                         "may hold printable ASCII characters but no space, '/', ',', quote or "
                         "backslash");
    }
  }
  return name;
}

void check_series_bound(const GivenOptions& given, MetricsSettings& settings) {
  if (!given.max_series_per_family) return;
  const long long bound = *given.max_series_per_family;
  if (bound < 1 || bound > static_cast<long long>(kMaxSeriesPerFamilyLimit)) {
    throw prometheus_error(
        "--metrics-max-series-per-family",
        std::to_string(bound) + " is outside 1-" + std::to_string(kMaxSeriesPerFamilyLimit));
  }
  settings.max_series_per_family = static_cast<std::size_t>(bound);
}

}  // namespace

MetricsSettings check_options(const GivenOptions& given) {
  MetricsSettings settings;
  settings.metrics = given.metrics;
  settings.queue_size = checked_queue_size(given.queue_size);
  settings.shutdown_timeout = checked_shutdown_timeout(given.shutdown_seconds);
  check_endpoint(given, settings);
  check_multiproc_dir(given, settings);
  check_series_bound(given, settings);
  if (given.web_config) {
    if (given.web_config->empty())
      throw prometheus_error("--metrics-web-config", "the file name must not be empty");
    settings.web_config_file = *given.web_config;
  }
  if (given.node_name) settings.node_name = checked_node_name(*given.node_name);
  return settings;
}

namespace po = boost::program_options;

constexpr double kDefaultShutdownSeconds =
    std::chrono::duration<double>(kDefaultShutdownTimeout).count();

void add_plugin_search_options(po::options_description& description) {
  description.add_options()(
      "metrics-plugin-dir", po::value<std::vector<std::string>>()->composing(),
      "search DIR for plugin files before TOKENSPEED_PLUGIN_PATH and the installed "
      "directory (repeatable)")(
      "metrics-allow-insecure-plugins", po::bool_switch(),
      "load plugins from files or directories that other users can write to (development only)");
}

void add_metrics_options(po::options_description& description) {
  description.add_options()("enable-metrics", po::bool_switch(),
                            "enable metrics (Prometheus only unless "
                            "--metrics-reporters selects outputs)")(
      "metrics-reporters", po::value<std::vector<std::string>>()->composing(),
      "select an output by name (repeatable; a comma-separated list is accepted); "
      "'prometheus' is the built-in output")(
      "metrics-reporter-config", po::value<std::string>(),
      "JSON file mapping external output names to their settings");
  add_plugin_search_options(description);
}

void add_delivery_options(po::options_description& description) {
  description.add_options()(
      "metrics-reporter-queue-size", po::value<std::size_t>()->default_value(kDefaultQueueSize),
      "events each collector thread may queue per output before dropping (and counting) them")(
      "metrics-shutdown-timeout", po::value<double>()->default_value(kDefaultShutdownSeconds),
      "seconds the whole node has to drain and close its outputs at shutdown")(
      "metrics-node-name", po::value<std::string>(),
      "the node's name in what the outputs push (remote_write's node label, OTLP's "
      "service.instance.id); default: the host name");
}

namespace {

// The value of a flag the command line gave; empty when it was not declared,
// not given, or left at its default. T is the type the flag was declared with.
template <typename T>
std::optional<T> given_value(const po::variables_map& values, const char* flag) {
  const auto found = values.find(flag);
  if (found == values.end() || found->second.defaulted()) return std::nullopt;
  return found->second.as<T>();
}

MetricsOptions given_selection(const po::variables_map& values) {
  using Strings = std::vector<std::string>;
  MetricsOptions options;
  options.enable_metrics = given_value<bool>(values, "enable-metrics").value_or(false);
  options.reporters = given_value<Strings>(values, "metrics-reporters").value_or(Strings{});
  options.reporter_config_file =
      given_value<std::string>(values, "metrics-reporter-config").value_or("");
  options.plugin_dirs = given_value<Strings>(values, "metrics-plugin-dir").value_or(Strings{});
  options.allow_insecure_plugins =
      given_value<bool>(values, "metrics-allow-insecure-plugins").value_or(false);
  return options;
}

}  // namespace

GivenOptions given_options(const po::variables_map& values) {
  GivenOptions given;
  given.metrics = given_selection(values);
  given.queue_size = given_value<std::size_t>(values, "metrics-reporter-queue-size");
  given.shutdown_seconds = given_value<double>(values, "metrics-shutdown-timeout");
  // Declared in prometheus/prometheus_options.cpp, with these types.
  given.host = given_value<std::string>(values, "metrics-host");
  given.port = given_value<long long>(values, "metrics-port");
  given.multiproc_dir = given_value<std::string>(values, "metrics-multiproc-dir");
  given.max_series_per_family = given_value<long long>(values, "metrics-max-series-per-family");
  given.web_config = given_value<std::string>(values, "metrics-web-config");
  given.node_name = given_value<std::string>(values, "metrics-node-name");
  return given;
}

namespace {

// The one-line message of a flag error. Boost.Program_options formats it by
// replacing placeholders such as "%value%" until none is left, which never
// ends when the value the operator typed contains one: a line of our own then.
template <typename Args>
std::string flag_error_message(const po::error_with_option_name& error, const Args& args) {
  for (const auto& arg : args) {
    if (std::string_view(arg).find('%') != std::string_view::npos)
      return "the flag or its value is not valid";
  }
  return error.what();
}

}  // namespace

po::variables_map parse_command_line(int argc, char** argv,
                                     const po::options_description& description) {
  po::variables_map values;
  try {
    po::store(
        po::command_line_parser(argc, argv)
            .options(description)
            .positional(po::positional_options_description())
            .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
            .run(),
        values);
    po::notify(values);
  } catch (const po::error_with_option_name& error) {
    throw StartupError(
        {{}, {}, error.get_option_name()},
        flag_error_message(error, std::span<char*>(argv, static_cast<std::size_t>(argc))));
  } catch (const po::error& error) {
    throw StartupError({}, error.what());
  }
  return values;
}

ExtractedFlags extract_flags(const std::vector<std::string>& args,
                             const po::options_description& description) {
  ExtractedFlags result;
  try {
    const po::parsed_options parsed =
        po::command_line_parser(args)
            .options(description)
            .allow_unregistered()
            .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
            .run();
    for (const po::option& option : parsed.options) {
      if (!option.unregistered) continue;
      const std::string& flag =
          option.original_tokens.empty() ? option.string_key : option.original_tokens.front();
      const std::string name = flag.substr(0, flag.find('='));
      if (name.starts_with("--metrics-") || name.starts_with("--enable-metrics")) {
        throw StartupError({"", "", name}, "unknown metrics flag");
      }
    }
    po::store(parsed, result.values);
    po::notify(result.values);
    result.rest = po::collect_unrecognized(parsed.options, po::include_positional);
  } catch (const po::error_with_option_name& error) {
    throw StartupError({{}, {}, error.get_option_name()}, flag_error_message(error, args));
  } catch (const po::error& error) {
    throw StartupError({}, error.what());
  }
  return result;
}

std::string usage(const std::string& command, const std::string& synopsis,
                  const po::options_description& description) {
  std::ostringstream out;
  out << "usage: tokenspeed-metrics " << command << ' ' << synopsis << "\n\n" << description;
  return out.str();
}

}  // namespace tokenspeed::metrics
