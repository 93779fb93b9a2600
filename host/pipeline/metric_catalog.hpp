// metric_catalog.hpp — what a metric family is (name, kind, help, unit, label
// names, histogram buckets, multi-process gauge mode) and the engine's own
// catalog. Pure data: built at startup, never touched on the hot path.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <tokenspeed/metric_reporter.h>

namespace tokenspeed::metrics {

enum class MetricKind {
  counter = TSM_KIND_COUNTER,
  gauge = TSM_KIND_GAUGE,
  histogram = TSM_KIND_HISTOGRAM
};

// How the launcher merges one gauge's per-process values at scrape time, as
// prometheus_client's multiprocess_mode does. "live" modes forget processes
// that have exited.
enum class GaugeMode { livemax, livesum, max, min, sum, all, liveall };

std::string_view to_string(MetricKind kind) noexcept;
std::string_view to_string(GaugeMode mode) noexcept;

struct MetricDefinition {
  std::string name;  // family name; counters without _total
  MetricKind kind = MetricKind::counter;
  std::string help;
  std::string unit;  // "seconds", "tokens", "" if none
  std::vector<std::string> label_names;
  std::vector<double> buckets;  // histograms: ascending, no +Inf
  GaugeMode gauge_mode = GaugeMode::livemax;

  // The name events and the exposition use: counters end in _total.
  std::string sample_name() const;
};

// Histogram bucket helpers, as prometheus_client offers them.
std::vector<double> exponential_buckets(double start, double factor, int count);

// The catalog an engine of this kind records (see docs/metric-catalog.md):
// scheduler metrics (labels model_name, app_key, dp_rank) and frontend request
// metrics (labels model_name, app_key; func_latency_seconds adds name).
const std::vector<MetricDefinition>& tokenspeed_catalog();

}  // namespace tokenspeed::metrics
