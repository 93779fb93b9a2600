// endpoint_figures_test.cpp — the /metrics endpoint's own figures under
// the tokenspeed_metrics_endpoint_ prefix, one closed-connection series per
// reason.
#include <catch2/catch.hpp>

#include "prometheus/server/endpoint_figures.hpp"
#include "prometheus/scrape/prometheus_exposition.hpp"
#include "prometheus/scrape/prometheus_merge.hpp"

using namespace tokenspeed::metrics;

TEST_CASE(
    "the endpoint's counters are exposed under tokenspeed_metrics_endpoint_, closes by reason") {
  EndpointFigures counters;
  counters.connections_accepted = 1000;
  counters.connections_rejected = 1;
  counters.connections_evicted = 936;
  counters.connections_open = 64;
  counters.requests = 150;
  counters.idle_timeouts = 2;
  counters.timeouts = 21;
  counters.oversized_requests = 3;
  counters.bad_requests = 6;
  counters.credential_checks_refused = 48;
  ScrapeSources sources;
  sources.extra = [&](PrometheusMerge& merge) { add_endpoint_self_figures(merge, counters); };
  const std::string text = render_exposition(merge_scrape(sources));
  const char* expected[] = {
      "# TYPE tokenspeed_metrics_endpoint_connections_accepted_total counter\n",
      "tokenspeed_metrics_endpoint_connections_accepted_total 1000\n",
      "tokenspeed_metrics_endpoint_connections_closed_total{reason=\"rejected\"} 1\n",
      "tokenspeed_metrics_endpoint_connections_closed_total{reason=\"evicted\"} 936\n",
      "tokenspeed_metrics_endpoint_connections_closed_total{reason=\"idle_timeout\"} 2\n",
      "tokenspeed_metrics_endpoint_connections_closed_total{reason=\"timeout\"} 21\n",
      "tokenspeed_metrics_endpoint_connections_closed_total{reason=\"oversized\"} 3\n",
      "tokenspeed_metrics_endpoint_connections_closed_total{reason=\"bad_request\"} 6\n",
      "tokenspeed_metrics_endpoint_requests_total 150\n",
      "tokenspeed_metrics_endpoint_requests_refused_total{reason=\"auth_queue_full\"} 48\n",
      "# TYPE tokenspeed_metrics_endpoint_connections_open gauge\n",
      "tokenspeed_metrics_endpoint_connections_open 64\n",
  };
  for (const char* line : expected) {
    INFO(line);
    CHECK(text.find(line) != std::string::npos);
  }
}
