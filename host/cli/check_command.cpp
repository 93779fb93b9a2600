// check_command.cpp — `tokenspeed-metrics check`: the complete startup validation
// (flags, plugins, configuration file, validate) and a print of the result.
// Never creates a sink or a node resource.
// Tested in test/cli/test_config_file.py, test/cli/test_selection.py,
// test/cli/test_secrets.py and test/cli/test_views.py.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/json/serialize.hpp>
#include <boost/program_options/options_description.hpp>

#include "config/exposition_families.hpp"
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
    "[--metrics-multiproc-dir DIR] [--metrics-views FILE] [--engine-metrics FILE]";

constexpr const char* kEngineMetricsFlag = "--engine-metrics";

void warn(const std::string& line) {
  std::fprintf(stderr, "tokenspeed-metrics: warning: %s\n", line.c_str());
}

// The families of the engine's exposition that check prints: the host's own
// (tokenspeed_metrics_*) left out, and with views the catalog's, which are
// printed with the catalog.
struct EngineFamilies {
  std::vector<MetricDefinition> printed;
  std::size_t catalog = 0;
  std::size_t host = 0;
};

EngineFamilies engine_families(const ExpositionFamilies& exposition, bool with_catalog) {
  EngineFamilies out;
  std::set<std::string> catalog;
  for (const MetricDefinition& definition : tokenspeed_catalog())
    catalog.insert(family_name(definition));
  for (const MetricDefinition& definition : exposition.families) {
    if (definition.name.starts_with(kHostFamilyPrefix)) {
      ++out.host;
    } else if (with_catalog && catalog.count(family_name(definition)) != 0) {
      ++out.catalog;
    } else {
      out.printed.push_back(definition);
    }
  }
  return out;
}

// The TokenSpeed catalog's families as the views leave them, and a warning
// for each view that selects none of them nor, when given, of the engine's
// exposition.
void print_views(const MetricViews& views, const ExpositionFamilies* exposition) {
  std::vector<MetricDefinition> known = tokenspeed_catalog();
  if (exposition != nullptr)
    known.insert(known.end(), exposition->families.begin(), exposition->families.end());
  for (const std::string& line :
       unused_view_warnings(views, known, exposition != nullptr ? exposition->file : "")) {
    warn(line);
  }
  for (const std::string& line : rename_clash_warnings(views, known)) warn(line);
  std::cout << "views " << views.file << ": " << views.views.size() << " view"
            << (views.views.size() == 1 ? "" : "s") << "; the TokenSpeed catalog's families:\n";
  for (const MetricDefinition& definition : tokenspeed_catalog()) {
    std::cout << "  " << describe_viewed(apply_views(views, definition)) << '\n';
  }
}

// The engine's families of its exposition: as the views leave them (those
// of the catalog already printed above), or as they are without views.
void print_engine_families(const ExpositionFamilies& exposition, const MetricViews* views) {
  for (const std::string& line : exposition.notes)
    std::fprintf(stderr, "tokenspeed-metrics: note: %s\n", line.c_str());
  const EngineFamilies families = engine_families(exposition, views != nullptr);
  std::cout << "engine metrics " << exposition.file << ": " << families.printed.size() << " famil"
            << (families.printed.size() == 1 ? "y" : "ies");
  std::string besides;
  if (families.catalog != 0)
    besides = std::to_string(families.catalog) + " more of the catalog, above";
  if (families.host != 0) {
    besides += (besides.empty() ? "" : "; ") + std::to_string(families.host) +
               " of the host's own left out";
  }
  if (!besides.empty()) std::cout << " (" << besides << ')';
  std::cout << (views != nullptr ? "; the engine's own, as the views leave them:\n"
                                 : "; as the engine defines them (no views):\n");
  const MetricViews none;
  for (const MetricDefinition& definition : families.printed) {
    std::cout << "  " << describe_viewed(apply_views(views != nullptr ? *views : none, definition))
              << '\n';
  }
}

// The exposition --engine-metrics names, read and checked; none without the flag.
std::optional<ExpositionFamilies> read_engine_metrics(const po::variables_map& values) {
  if (values.count("engine-metrics") == 0) return std::nullopt;
  const std::string path = values["engine-metrics"].as<std::string>();
  if (path.empty()) {
    throw StartupError({"", "", kEngineMetricsFlag},
                       "must name a file (the engine's /metrics, saved as text)");
  }
  return read_exposition_families(path, kEngineMetricsFlag);
}

}  // namespace

int run_check(int argc, char** argv) {
  po::options_description description("options");
  description.add_options()("help,h", "show this help")(
      "engine-metrics", po::value<std::string>()->value_name("FILE"),
      "a text exposition saved from the engine's /metrics (curl -s ENGINE/metrics > FILE): "
      "its families are printed, as the views leave them, and a view that selects one of "
      "them is not warned of");
  add_metrics_flags(description);
  const po::variables_map values = parse_command_line(argc, argv, description);
  if (values.count("help") != 0) {
    std::cout << usage("check", kSynopsis, description)
              << "\nRuns the complete startup validation of the metrics flags without creating "
                 "any sink\nor node resource, and prints each selected output with its "
                 "normalized configuration\n(a setting the output describes as secret reads "
                 "\"<secret>\").\nWith Prometheus selected it also binds "
                 "--metrics-host:--metrics-port for a moment\n(a port in use is the same error "
                 "as at startup) and checks --metrics-multiproc-dir.\nWith --metrics-views it "
                 "prints the TokenSpeed catalog's families as the views leave them;\nwith "
                 "--engine-metrics FILE also the engine's own families read from FILE.\nExit "
                 "status 0 when valid, 2 with a one-line error otherwise.\n";
    return 0;
  }
  const MetricsSettings settings = check_options(options_from_flags(values));
  const MetricsStartup startup = load_metrics_startup(settings.given, warn);
  const ReporterSelection& selection = startup.selection;
  if (!selection.enabled) {
    if (values.count("engine-metrics") != 0)
      warn(std::string(kEngineMetricsFlag) + " is ignored without --enable-metrics");
    std::cout << "metrics disabled: no output selected\n";
    return 0;
  }
  const std::optional<ExpositionFamilies> engine = read_engine_metrics(values);
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
  if (startup.views) print_views(*startup.views, engine ? &*engine : nullptr);
  if (engine) print_engine_families(*engine, startup.views.get());
  std::cout.flush();
  return std::cout ? 0 : 1;
}

}  // namespace tokenspeed::metrics::cli
