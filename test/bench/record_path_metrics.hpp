// record_path_metrics.hpp — the two families the record-path benchmarks
// (pipeline-bench, growth-outputs-bench) record into: a counter and a
// 20-bucket latency histogram of the engine, both labelled model and rank.
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

}  // namespace tokenspeed::metrics::bench
