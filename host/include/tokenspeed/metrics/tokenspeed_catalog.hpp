// tokenspeed_catalog.hpp — the metrics a TokenSpeed engine records, as a
// ready-made set of definitions (docs/metric-catalog.md). An engine with
// metrics of its own names defines them itself; this is one such set.
#pragma once

#include <string_view>
#include <vector>

#include "tokenspeed/metrics/metric_definition.hpp"

namespace tokenspeed::metrics {

// Scheduler metrics (labels model_name, app_key, dp_rank) and frontend
// request metrics (labels model_name, app_key; func_latency_seconds adds
// name). Lives for the whole process.
const std::vector<MetricDefinition>& tokenspeed_catalog();

// The catalog entry called name ("tokenspeed:num_requests_running");
// throws std::out_of_range when absent.
const MetricDefinition& tokenspeed_metric(std::string_view name);

}  // namespace tokenspeed::metrics
