// prometheus_options.cpp — flag declarations and validation for the
// Prometheus output. Never starts anything.
#include "prometheus/prometheus_options.hpp"

#include <string>

#include "prometheus/multiprocess_run_dir.hpp"
#include "core/startup_error.hpp"

namespace tokenspeed::metrics {

namespace po = boost::program_options;

void add_prometheus_options(po::options_description& description) {
  const PrometheusEndpointOptions defaults;
  description.add_options()("metrics-host", po::value<std::string>()->default_value(defaults.host),
                            "address the Prometheus /metrics endpoint listens on")(
      "metrics-port", po::value<long long>()->default_value(defaults.port),
      "port of the Prometheus /metrics endpoint; 0 picks a free port and prints it")(
      "metrics-multiproc-dir", po::value<std::string>(),
      "base directory for the per-run directory of producer metric files "
      "(default $TMPDIR/tokenspeed-metrics-<uid>)")(
      "metrics-max-series-per-family",
      po::value<long long>()->default_value(static_cast<long long>(kDefaultMaxSeriesPerFamily)),
      "series one metric family may hold in each process (1-16777216); a new label set past "
      "it records nothing and is counted in tokenspeed_metrics_series_refused_total");
}

PrometheusOptions read_prometheus_options(const po::variables_map& values) {
  PrometheusOptions options;
  if (values.count("metrics-host") != 0) {
    options.endpoint.host = values["metrics-host"].as<std::string>();
  }
  if (options.endpoint.host.empty()) {
    throw StartupError({"prometheus", "", "--metrics-host"}, "the host must not be empty");
  }
  if (values.count("metrics-port") != 0) {
    const long long port = values["metrics-port"].as<long long>();
    if (port < 0 || port > 65535) {
      throw StartupError({"prometheus", "", "--metrics-port"},
                         "port " + std::to_string(port) + " is outside 0-65535");
    }
    options.endpoint.port = static_cast<unsigned short>(port);
  }
  if (values.count("metrics-multiproc-dir") != 0) {
    options.multiproc_base_dir = values["metrics-multiproc-dir"].as<std::string>();
    if (options.multiproc_base_dir.empty()) {
      throw StartupError({"prometheus", "", "--metrics-multiproc-dir"},
                         "the directory must not be empty");
    }
  } else {
    options.multiproc_base_dir = default_multiprocess_base_dir();
  }
  if (values.count("metrics-max-series-per-family") != 0) {
    const long long bound = values["metrics-max-series-per-family"].as<long long>();
    if (bound < 1 || bound > static_cast<long long>(kMaxSeriesPerFamilyLimit)) {
      throw StartupError({"prometheus", "", "--metrics-max-series-per-family"},
                         std::to_string(bound) + " is outside 1-" +
                             std::to_string(kMaxSeriesPerFamilyLimit));
    }
    options.max_series_per_family = static_cast<std::size_t>(bound);
  }
  return options;
}

}  // namespace tokenspeed::metrics
