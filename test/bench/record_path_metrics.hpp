// record_path_metrics.hpp — the families the record-path benchmarks
// (pipeline-bench, growth-outputs-bench) record into: a counter, a 20-bucket
// latency histogram of the engine and the same histogram with exponential
// buckets (the default options), all labelled model and rank.
// Benchmark code only.
#pragma once

#include "tokenspeed/metrics/metric_definition.hpp"

namespace tokenspeed::metrics::bench {

inline const MetricDefinition kCounter{
    "tokenspeed:num_requests", MetricKind::counter, "", "", {"model", "rank"}, {}, {}};
inline const MetricDefinition kHistogram{
    "tokenspeed:request_time_per_output_token_seconds",
    MetricKind::histogram,
    "",
    "seconds",
    {"model", "rank"},
    {0.002, 0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08,
     0.09,  0.1,   0.15, 0.2,  0.3,  0.4,  0.6,  0.8,  1,    2},
    {}};

inline const MetricDefinition kExponentialHistogram = [] {
  MetricDefinition metric = kHistogram;
  metric.name = "tokenspeed:request_time_per_output_token_seconds_native";
  metric.exponential = ExponentialHistogramOptions{};
  return metric;
}();

}  // namespace tokenspeed::metrics::bench
