// metric_catalog.cpp — the TokenSpeed catalog as data, reproducing the names,
// kinds, labels and buckets of the TokenSpeed engine's collectors.
#include "core/metric_catalog.hpp"

#include <stdexcept>

namespace tokenspeed::metrics {

namespace {

std::vector<MetricDefinition> build_catalog() {
  const std::vector<std::string> engine_labels{"model_name", "app_key", "dp_rank"};
  const std::vector<std::string> request_labels{"model_name", "app_key"};
  std::vector<double> iteration_token_buckets{0};
  for (double b = 1; b <= 8192; b *= 2) iteration_token_buckets.push_back(b);

  auto gauge = [&](std::string name, std::string help, std::string unit) {
    return MetricDefinition{std::move(name),   MetricKind::gauge, std::move(help),
                            std::move(unit),   engine_labels,     {},
                            GaugeMode::livemax};
  };
  auto counter = [](std::string name, std::string help, std::string unit,
                    const std::vector<std::string>& labels) {
    return MetricDefinition{
        std::move(name),   MetricKind::counter, std::move(help), std::move(unit), labels, {},
        GaugeMode::livemax};
  };
  auto histogram = [](std::string name, std::string help, std::string unit,
                      std::vector<std::string> labels, std::vector<double> buckets) {
    return MetricDefinition{std::move(name),   MetricKind::histogram, std::move(help),
                            std::move(unit),   std::move(labels),     std::move(buckets),
                            GaugeMode::livemax};
  };

  std::vector<std::string> func_labels = request_labels;
  func_labels.emplace_back("name");

  return {
      // Scheduler, once per iteration, per data-parallel rank.
      gauge("tokenspeed:num_requests_running", "Number of requests currently running.", "requests"),
      gauge("tokenspeed:num_requests_waiting", "Number of requests waiting to be scheduled.",
            "requests"),
      gauge("tokenspeed:kv_cache_usage_perc", "KV-cache usage as a 0-1 ratio.", "ratio"),
      histogram("tokenspeed:iteration_tokens_total", "Tokens processed in one forward step.",
                "tokens", engine_labels, iteration_token_buckets),
      counter("tokenspeed:spec_decode_num_accepted_tokens", "Speculative tokens accepted.",
              "tokens", engine_labels),
      counter("tokenspeed:spec_decode_num_draft_tokens", "Speculative draft tokens proposed.",
              "tokens", engine_labels),
      counter("tokenspeed:spec_decode_num_drafts", "Speculative decoding drafts.", "drafts",
              engine_labels),
      counter("tokenspeed:num_nan_aborted_requests", "Requests aborted because of NaN outputs.",
              "requests", engine_labels),
      // Frontend, per finished request and per streamed chunk.
      counter("tokenspeed:prompt_tokens", "Prefill tokens processed.", "tokens", request_labels),
      counter("tokenspeed:generation_tokens", "Generation tokens produced.", "tokens",
              request_labels),
      counter("tokenspeed:num_requests", "Requests received.", "requests", request_labels),
      counter("tokenspeed:request_success", "Requests finished successfully.", "requests",
              request_labels),
      counter("tokenspeed:prefix_cache_hits", "Prompt tokens served from the prefix cache.",
              "tokens", request_labels),
      histogram("tokenspeed:time_to_first_token_seconds", "Time to first token.", "seconds",
                request_labels,
                {0.1, 0.3, 0.5, 0.7, 0.9, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 120, 160}),
      histogram("tokenspeed:request_time_per_output_token_seconds",
                "Time per output token of a request.", "seconds", request_labels,
                {0.002, 0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08,
                 0.09,  0.1,   0.15, 0.2,  0.3,  0.4,  0.6,  0.8,  1,    2}),
      histogram("tokenspeed:inter_token_latency_seconds",
                "Latency between streamed tokens (one weighted observation per chunk).", "seconds",
                request_labels,
                {0.002, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04,
                 0.05,  0.075, 0.1,   0.15,  0.2,  0.3,   0.4,  0.5,   0.75, 1,     2}),
      histogram("tokenspeed:e2e_request_latency_seconds", "End-to-end request latency.", "seconds",
                request_labels, {0.1, 0.2, 0.4, 0.8, 1,   2,   5,   10,  20,  40,
                                 60,  80,  100, 150, 200, 250, 300, 350, 500, 1000}),
      histogram("tokenspeed:func_latency_seconds", "Latency of instrumented engine functions.",
                "seconds", func_labels, exponential_buckets(0.05, 1.5, 18)),
  };
}

}  // namespace

const std::vector<MetricDefinition>& tokenspeed_catalog() {
  static const std::vector<MetricDefinition> catalog = build_catalog();
  return catalog;
}

const MetricDefinition& tokenspeed_metric(std::string_view name) {
  for (const MetricDefinition& metric : tokenspeed_catalog()) {
    if (metric.name == name) return metric;
  }
  throw std::out_of_range("no metric named " + std::string(name) + " in the TokenSpeed catalog");
}

}  // namespace tokenspeed::metrics
