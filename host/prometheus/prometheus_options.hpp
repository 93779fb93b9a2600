// prometheus_options.hpp — the built-in Prometheus output's command-line
// flags (--metrics-host, --metrics-port, --metrics-multiproc-dir,
// --metrics-max-series-per-family): declaring them and reading them back.
// Startup only.
#pragma once

#include <filesystem>

#include <boost/program_options.hpp>

#include "core/series_bound.hpp"
#include "prometheus/prometheus_endpoint.hpp"

namespace tokenspeed::metrics {

struct PrometheusOptions {
  PrometheusEndpointOptions endpoint;  // host and port from the flags
  // Base directory under which each run creates its own private directory.
  std::filesystem::path multiproc_base_dir;
  // Series one family may hold in each process; a new label set past it is
  // refused (series_bound.hpp).
  std::size_t max_series_per_family = kDefaultMaxSeriesPerFamily;
};

// Adds --metrics-host, --metrics-port, --metrics-multiproc-dir and
// --metrics-max-series-per-family.
void add_prometheus_options(boost::program_options::options_description& description);

// Reads the flags (defaults when absent). Throws StartupError naming the
// flag for an empty host, a port outside 0-65535 or a bound on series outside
// 1-16777216.
PrometheusOptions read_prometheus_options(const boost::program_options::variables_map& values);

}  // namespace tokenspeed::metrics
