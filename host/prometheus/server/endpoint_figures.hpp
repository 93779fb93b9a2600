// endpoint_figures.hpp — the /metrics endpoint's own figures (connections
// accepted, closed to enforce a limit, requests, open connections) as
// Prometheus series under the tokenspeed_metrics_endpoint_ prefix. Scrape
// time only; these series are never turned into plugin events.
#pragma once

#include <vector>

#include "core/metric_catalog.hpp"
#include "prometheus/server/prometheus_endpoint.hpp"

namespace tokenspeed::metrics {

class PrometheusMerge;

// The families, in exposition order:
//   tokenspeed_metrics_endpoint_connections_accepted_total             counter
//   tokenspeed_metrics_endpoint_connections_closed_total{reason}       counter,
//       reason "rejected" (at max_connections, none could be evicted),
//       "evicted" (the longest-waiting one, to admit a new connection),
//       "idle_timeout", "timeout" (read or write), "oversized" (413/431),
//       "bad_request" (400) and "tls_handshake" (refused or broken off)
//   tokenspeed_metrics_endpoint_requests_total                         counter
//   tokenspeed_metrics_endpoint_requests_refused_total{reason}         counter,
//       reason "unauthorized" (401), "rate_limited" (429) and
//       "auth_queue_full" (503: too many credential checks waiting)
//   tokenspeed_metrics_endpoint_web_config_reloads_total{result}       counter,
//       result "success", "failure" (invalid) and "weaker" (valid, but it
//       would lower security: refused)
//   tokenspeed_metrics_endpoint_connections_open                       gauge
const std::vector<MetricDefinition>& endpoint_self_metric_definitions();

// Adds the endpoint's figures to a scrape's merge, as this (live) process's.
void add_endpoint_self_figures(PrometheusMerge& merge, const EndpointFigures& counters);

}  // namespace tokenspeed::metrics
