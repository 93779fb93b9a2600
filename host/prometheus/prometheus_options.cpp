// prometheus_options.cpp — the Prometheus flags' declarations and the
// endpoint and run directory defaults applied to the checked settings.
// Never starts anything.
#include "prometheus/prometheus_options.hpp"

#include <string>

#include <boost/program_options/value_semantic.hpp>

#include "prometheus/multiprocess_run_dir.hpp"

namespace tokenspeed::metrics {

namespace po = boost::program_options;

// The value types are the ones given_options reads them with.
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
      "it records nothing and is counted in tokenspeed_metrics_series_refused_total")(
      "metrics-web-config", po::value<std::string>(),
      "web configuration file of the /metrics endpoint (TLS, client certificates, basic-auth "
      "users, response headers), in the format of Prometheus exporters' --web.config.file; "
      "reloaded when it changes");
}

PrometheusEndpointOptions endpoint_options(const MetricsSettings& settings) {
  PrometheusEndpointOptions endpoint;
  if (settings.host) endpoint.host = *settings.host;
  if (settings.port) endpoint.port = *settings.port;
  if (settings.web_config_file) endpoint.web_config_file = *settings.web_config_file;
  return endpoint;
}

std::filesystem::path multiproc_base_dir(const MetricsSettings& settings) {
  return settings.multiproc_base_dir ? *settings.multiproc_base_dir
                                     : default_multiprocess_base_dir();
}

}  // namespace tokenspeed::metrics
