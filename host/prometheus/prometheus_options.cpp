// prometheus_options.cpp — the endpoint and run directory defaults applied
// to the checked settings. Never starts anything.
#include "prometheus/prometheus_options.hpp"

#include "prometheus/store/multiprocess_run_dir.hpp"

namespace tokenspeed::metrics {

PrometheusEndpointOptions endpoint_options(const MetricsSettings& settings) {
  PrometheusEndpointOptions endpoint;
  if (settings.host) endpoint.host = *settings.host;
  if (settings.port) endpoint.port = *settings.port;
  if (settings.web_config) endpoint.web_config_file = *settings.web_config;
  return endpoint;
}

std::filesystem::path multiproc_base_dir(const MetricsSettings& settings) {
  return settings.multiproc_dir ? *settings.multiproc_dir : default_multiprocess_base_dir();
}

}  // namespace tokenspeed::metrics
