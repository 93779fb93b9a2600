// check_command.cpp — `tokenspeed-metrics check`: the complete startup validation
// (flags, plugins, configuration file, validate) and a print of the result.
// Never creates a sink or a node resource.
// Tested in test/cli/test_config_file.py, test/cli/test_selection.py and
// test/cli/test_secrets.py.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include <boost/json/serialize.hpp>
#include <boost/program_options/options_description.hpp>

#include "config/metrics_flags.hpp"
#include "config/metric_views.hpp"
#include "config/metrics_startup.hpp"
#include "core/metric_catalog.hpp"
#include "config/secret_redaction.hpp"
#include "prometheus/prometheus_output.hpp"

namespace tokenspeed::metrics::cli {
namespace {

namespace po = boost::program_options;

constexpr const char* kSynopsis =
    "[--enable-metrics] [--metrics-reporters NAME[,NAME...]]... "
    "[--metrics-reporter-config FILE] [--metrics-plugin-dir DIR]... "
    "[--metrics-allow-insecure-plugins] [--metrics-reporter-queue-size N] "
    "[--metrics-shutdown-timeout SECONDS] [--metrics-host ADDR] [--metrics-port PORT] "
    "[--metrics-multiproc-dir DIR] [--metrics-views FILE]";

// The TokenSpeed catalog's families as the views leave them, and a warning
// for each view that selects none of them.
void print_views(const MetricViews& views) {
  for (const std::string& line : unused_view_warnings(views, tokenspeed_catalog())) {
    std::fprintf(stderr, "tokenspeed-metrics: warning: %s\n", line.c_str());
  }
  std::cout << "views " << views.file << ": " << views.views.size() << " view"
            << (views.views.size() == 1 ? "" : "s") << "; the TokenSpeed catalog's families:\n";
  for (const MetricDefinition& definition : tokenspeed_catalog()) {
    std::cout << "  " << describe_viewed(apply_views(views, definition)) << '\n';
  }
}

}  // namespace

int run_check(int argc, char** argv) {
  po::options_description description("options");
  description.add_options()("help,h", "show this help");
  add_metrics_flags(description);
  const po::variables_map values = parse_command_line(argc, argv, description);
  if (values.count("help") != 0) {
    std::cout << usage("check", kSynopsis, description)
              << "\nRuns the complete startup validation of the metrics flags without creating "
                 "any sink\nor node resource, and prints each selected output with its "
                 "normalized configuration\n(a setting the output describes as secret reads "
                 "\"<secret>\").\nWith Prometheus selected it also binds "
                 "--metrics-host:--metrics-port for a moment\n(a port in use is the same error "
                 "as at startup) and checks --metrics-multiproc-dir.\nExit status 0 when valid, "
                 "2 with a one-line error otherwise.\n";
    return 0;
  }
  const MetricsSettings settings = check_options(options_from_flags(values));
  const MetricsStartup startup = load_metrics_startup(settings.given, [](const std::string& line) {
    std::fprintf(stderr, "tokenspeed-metrics: warning: %s\n", line.c_str());
  });
  const ReporterSelection& selection = startup.selection;
  if (!selection.enabled) {
    std::cout << "metrics disabled: no output selected\n";
    return 0;
  }
  std::string security;
  if (selection.prometheus) security = check_prometheus(settings);
  std::size_t next_output = 0;
  for (const std::string& name : selection.order) {
    if (name == kPrometheusReporterName) {
      std::cout << "prometheus: built-in";
      if (settings.web_config)
        std::cout << "; web configuration " << *settings.web_config << ": " << security;
      std::cout << '\n';
      continue;
    }
    const SelectedOutput& output = selection.outputs.at(next_output++);
    // A setting the reporter describes as secret reads "<secret>".
    const SecretSettings secrets(output.reporter->settings_description());
    std::cout << output.name << ": " << boost::json::serialize(secrets.redact(output.config))
              << '\n';
  }
  if (startup.views) print_views(*startup.views);
  std::cout.flush();
  return std::cout ? 0 : 1;
}

}  // namespace tokenspeed::metrics::cli
