// endpoint_defaults.hpp — the defaults of the /metrics endpoint's address
// (--metrics-host, --metrics-port), in one place for the endpoint and the
// table of the metrics flags. Constants only.
// Tested in test/unit/prometheus/prometheus_options_test.cpp (the endpoint's
// options when the flags are not given).
#pragma once

#include <string_view>

namespace tokenspeed::metrics {

// Loopback: an endpoint reachable from other machines is the operator's choice.
inline constexpr std::string_view kDefaultMetricsHost = "127.0.0.1";

// The default port. Unassigned in Prometheus's port allocation list and
// clear of the exporters usually found on GPU nodes (node_exporter 9100,
// DCGM 9400, Prometheus 9090).
inline constexpr unsigned short kDefaultMetricsPort = 9431;

}  // namespace tokenspeed::metrics
