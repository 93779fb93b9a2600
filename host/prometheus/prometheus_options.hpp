// prometheus_options.hpp — the built-in Prometheus output's command-line
// flags (--metrics-host, --metrics-port, --metrics-multiproc-dir,
// --metrics-max-series-per-family, --metrics-web-config), declared with the endpoint's defaults in
// their help, and what the checked settings (config/metrics_flags.hpp) say of
// the endpoint and the run directory, where those defaults apply. Startup
// only.
#pragma once

#include <filesystem>

#include <boost/program_options/options_description.hpp>

#include "config/metrics_flags.hpp"
#include "prometheus/prometheus_endpoint.hpp"

namespace tokenspeed::metrics {

// Adds --metrics-host, --metrics-port, --metrics-multiproc-dir,
// --metrics-max-series-per-family and --metrics-web-config; given_options reads them and
// check_options checks them.
void add_prometheus_options(boost::program_options::options_description& description);

// The endpoint's options: the settings' host and port, the endpoint's own
// defaults (PrometheusEndpointOptions) for those not given.
PrometheusEndpointOptions endpoint_options(const MetricsSettings& settings);

// The base directory of the run directories: --metrics-multiproc-dir, or
// default_multiprocess_base_dir() when not given.
std::filesystem::path multiproc_base_dir(const MetricsSettings& settings);

}  // namespace tokenspeed::metrics
