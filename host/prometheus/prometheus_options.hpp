// prometheus_options.hpp — what the checked settings (config/metrics_flags.hpp)
// say of the built-in Prometheus output's endpoint and run directory, where
// their defaults apply (the flags themselves are rows of
// config/metrics_flag_table.hpp). Startup only.
#pragma once

#include <filesystem>

#include "config/metrics_flags.hpp"
#include "prometheus/server/prometheus_endpoint.hpp"

namespace tokenspeed::metrics {

// The endpoint's options: the settings' host and port, the endpoint's own
// defaults (PrometheusEndpointOptions) for those not given.
PrometheusEndpointOptions endpoint_options(const MetricsSettings& settings);

// The base directory of the run directories: --metrics-multiproc-dir, or
// default_multiprocess_base_dir() when not given.
std::filesystem::path multiproc_base_dir(const MetricsSettings& settings);

}  // namespace tokenspeed::metrics
