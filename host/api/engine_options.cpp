// engine_options.cpp — the public Options, flag extraction and their
// translation to the launcher's options. Never loads or starts anything.
#include "api/engine_options.hpp"

#include <sstream>

#include "config/metrics_flags.hpp"
#include "prometheus/prometheus_options.hpp"

namespace tokenspeed::metrics {
namespace {

namespace po = boost::program_options;

bool given(const po::variables_map& values, const char* flag) {
  const auto found = values.find(flag);
  return found != values.end() && !found->second.defaulted();
}

Options options_from(const po::variables_map& values) {
  Options options;
  const MetricsOptions metrics = cli::metrics_options_from(values);
  options.enable_metrics = metrics.enable_metrics;
  options.reporters = metrics.reporters;
  options.reporter_config = metrics.reporter_config_file;
  options.plugin_dirs = metrics.plugin_dirs;
  options.allow_insecure_plugins = metrics.allow_insecure_plugins;
  // Range checks happen here, as on the command line.
  const cli::DeliveryOptions delivery = cli::delivery_options_from(values);
  if (given(values, "metrics-reporter-queue-size")) {
    options.queue_size = delivery.queue_size;
  }
  if (given(values, "metrics-shutdown-timeout")) {
    options.shutdown_timeout = std::chrono::duration<double>(delivery.shutdown_timeout);
  }
  const PrometheusOptions prometheus = read_prometheus_options(values);
  if (given(values, "metrics-host")) options.host = prometheus.endpoint.host;
  if (given(values, "metrics-port")) options.port = prometheus.endpoint.port;
  if (given(values, "metrics-multiproc-dir")) {
    options.multiproc_dir = prometheus.multiproc_base_dir.string();
  }
  if (given(values, "metrics-max-series-per-family")) {
    options.max_series_per_family = prometheus.max_series_per_family;
  }
  return options;
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
  cli::add_metrics_options(description);
  cli::add_delivery_options(description);
  add_prometheus_options(description);
  return description;
}

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
  return flags;
}

ExtractedOptions extract_metrics_options(const std::vector<std::string>& args) {
  cli::ExtractedFlags flags = cli::extract_flags(args, all_metrics_flags());
  return ExtractedOptions{options_from(flags.values), std::move(flags.rest)};
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

std::string metrics_options_help() {
  std::ostringstream out;
  out << all_metrics_flags();
  return out.str();
}

LauncherOptions launcher_options_from(const Options& options) {
  const cli::ExtractedFlags flags = cli::extract_flags(options.to_flags(), all_metrics_flags());
  LauncherOptions launcher;
  launcher.metrics = cli::metrics_options_from(flags.values);
  launcher.prometheus = read_prometheus_options(flags.values);
  const cli::DeliveryOptions delivery = cli::delivery_options_from(flags.values);
  launcher.queue_size = delivery.queue_size;
  launcher.shutdown_timeout = delivery.shutdown_timeout;
  return launcher;
}

}  // namespace tokenspeed::metrics
