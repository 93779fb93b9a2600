// metrics_flags.cpp — metrics flag definitions and command-line parsing with
// Boost.Program_options. Never reads files or loads plugins.
#include "config/metrics_flags.hpp"

#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <boost/program_options/parsers.hpp>
#include <boost/program_options/value_semantic.hpp>

#include "core/delivery_defaults.hpp"
#include "core/startup_error.hpp"

namespace tokenspeed::metrics::cli {

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
      "seconds the whole node has to drain and close its outputs at shutdown");
}

DeliveryOptions delivery_options_from(const po::variables_map& values) {
  DeliveryOptions options;
  options.queue_size = values.count("metrics-reporter-queue-size") != 0
                           ? values["metrics-reporter-queue-size"].as<std::size_t>()
                           : kDefaultQueueSize;
  if (options.queue_size < 2 || options.queue_size > (std::size_t{1} << 24)) {
    throw StartupError({"", "", "--metrics-reporter-queue-size"}, "must be between 2 and 16777216");
  }
  const double seconds = values.count("metrics-shutdown-timeout") != 0
                             ? values["metrics-shutdown-timeout"].as<double>()
                             : kDefaultShutdownSeconds;
  if (!(seconds >= 0) || seconds > 3600) {
    throw StartupError({"", "", "--metrics-shutdown-timeout"}, "must be between 0 and 3600 seconds");
  }
  options.shutdown_timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(seconds));
  return options;
}

MetricsOptions metrics_options_from(const po::variables_map& values) {
  MetricsOptions options;
  if (values.count("enable-metrics") != 0)
    options.enable_metrics = values["enable-metrics"].as<bool>();
  if (values.count("metrics-reporters") != 0) {
    options.reporters = values["metrics-reporters"].as<std::vector<std::string>>();
  }
  if (values.count("metrics-reporter-config") != 0) {
    options.reporter_config_file = values["metrics-reporter-config"].as<std::string>();
  }
  if (values.count("metrics-plugin-dir") != 0) {
    options.plugin_dirs = values["metrics-plugin-dir"].as<std::vector<std::string>>();
  }
  if (values.count("metrics-allow-insecure-plugins") != 0) {
    options.allow_insecure_plugins = values["metrics-allow-insecure-plugins"].as<bool>();
  }
  return options;
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
    throw StartupError({{}, {}, error.get_option_name()},
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
      const std::string& flag = option.original_tokens.empty() ? option.string_key
                                                               : option.original_tokens.front();
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

}  // namespace tokenspeed::metrics::cli
