// prometheus_options.hpp — the built-in Prometheus output's command-line
// flags (--metrics-host, --metrics-port, --metrics-multiproc-dir): declaring
// them and reading them back. Startup only.
#pragma once

#include <filesystem>

#include <boost/program_options.hpp>

#include "prometheus/prometheus_endpoint.hpp"

namespace tokenspeed::metrics {

struct PrometheusOptions {
  PrometheusEndpointOptions endpoint;  // host and port from the flags
  // Base directory under which each run creates its own private directory.
  std::filesystem::path multiproc_base_dir;
};

// Adds --metrics-host, --metrics-port and --metrics-multiproc-dir.
void add_prometheus_options(boost::program_options::options_description& description);

// Reads the flags (defaults when absent). Throws StartupError naming the
// flag for an empty host or a port outside 0-65535.
PrometheusOptions read_prometheus_options(const boost::program_options::variables_map& values);

}  // namespace tokenspeed::metrics
