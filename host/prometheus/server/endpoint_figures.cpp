// endpoint_figures.cpp — endpoint counters as Prometheus series. Scrape
// time only; never reached from a plugin sink or the event channel.
#include "prometheus/server/endpoint_figures.hpp"

#include <span>
#include <string_view>

#include "prometheus/store/multiprocess_run_dir.hpp"
#include "prometheus/scrape/prometheus_merge.hpp"

namespace tokenspeed::metrics {
namespace {

std::vector<MetricDefinition> build_definitions() {
  return {
      MetricDefinition{"tokenspeed_metrics_endpoint_connections_accepted",
                       MetricKind::counter,
                       "Connections the /metrics endpoint admitted.",
                       "connections",
                       {},
                       {},
                       GaugeMode::livesum},
      MetricDefinition{"tokenspeed_metrics_endpoint_connections_closed",
                       MetricKind::counter,
                       "Connections the /metrics endpoint closed to enforce a limit, by reason "
                       "(rejected, evicted, idle_timeout, timeout, oversized, bad_request, "
                       "tls_handshake).",
                       "connections",
                       {"reason"},
                       {},
                       GaugeMode::livesum},
      MetricDefinition{"tokenspeed_metrics_endpoint_requests",
                       MetricKind::counter,
                       "Complete requests the /metrics endpoint received and answered.",
                       "requests",
                       {},
                       {},
                       GaugeMode::livesum},
      MetricDefinition{"tokenspeed_metrics_endpoint_requests_refused",
                       MetricKind::counter,
                       "Requests the /metrics endpoint refused by the web configuration, by "
                       "reason (unauthorized: 401, rate_limited: 429, auth_queue_full: 503).",
                       "requests",
                       {"reason"},
                       {},
                       GaugeMode::livesum},
      MetricDefinition{"tokenspeed_metrics_endpoint_web_config_reloads",
                       MetricKind::counter,
                       "Reloads of the /metrics endpoint's web configuration after a change, by "
                       "result (success; failure: invalid, and weaker: it would lower security, "
                       "the previous configuration stayed in force).",
                       "reloads",
                       {"result"},
                       {},
                       GaugeMode::livesum},
      MetricDefinition{"tokenspeed_metrics_endpoint_connections_open",
                       MetricKind::gauge,
                       "Connections open on the /metrics endpoint.",
                       "connections",
                       {},
                       {},
                       GaugeMode::livesum},
  };
}

}  // namespace

const std::vector<MetricDefinition>& endpoint_self_metric_definitions() {
  static const std::vector<MetricDefinition> definitions = build_definitions();
  return definitions;
}

void add_endpoint_self_figures(PrometheusMerge& merge, const EndpointFigures& counters) {
  const auto& defs = endpoint_self_metric_definitions();
  const ProcessInstance self = current_process_instance();
  auto add = [&](const MetricDefinition& def, std::span<const std::string_view> labels,
                 std::uint64_t v) {
    const double value[] = {static_cast<double>(v)};
    merge.add_series(def, labels, value, self, true);
  };
  add(defs[0], {}, counters.connections_accepted);
  const std::pair<std::string_view, std::uint64_t> closed[] = {
      {"rejected", counters.connections_rejected},        {"evicted", counters.connections_evicted},
      {"idle_timeout", counters.idle_timeouts},           {"timeout", counters.timeouts},
      {"oversized", counters.oversized_requests},         {"bad_request", counters.bad_requests},
      {"tls_handshake", counters.tls_handshake_failures},
  };
  for (const auto& [reason, count] : closed) {
    const std::string_view labels[] = {reason};
    add(defs[1], labels, count);
  }
  add(defs[2], {}, counters.requests);
  const std::pair<std::string_view, std::uint64_t> refused[] = {
      {"unauthorized", counters.unauthorized},
      {"rate_limited", counters.rate_limited},
      {"auth_queue_full", counters.credential_checks_refused}};
  for (const auto& [reason, count] : refused) {
    const std::string_view labels[] = {reason};
    add(defs[3], labels, count);
  }
  const std::pair<std::string_view, std::uint64_t> reloads[] = {
      {"success", counters.web_config_reloads},
      {"failure", counters.web_config_reload_failures},
      {"weaker", counters.web_config_reloads_refused_weaker}};
  for (const auto& [result, count] : reloads) {
    const std::string_view labels[] = {result};
    add(defs[4], labels, count);
  }
  add(defs[5], {}, counters.connections_open);
}

}  // namespace tokenspeed::metrics
