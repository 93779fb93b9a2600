// metric_definition.hpp — what a metric family is: name, kind, help, unit,
// label names, histogram buckets and how a gauge merges across processes.
// Plain data of the engine's; built at startup, never touched on the hot path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tokenspeed::metrics {

// counter, gauge and histogram match the plugin ABI's tsm_metric_kind. A
// summary is prometheus_client's: a count and a sum, no quantiles; plugins
// receive it as a histogram without bucket bounds (the ABI has three kinds).
enum class MetricKind { counter = 1, gauge = 2, histogram = 3, summary = 4 };

// How the launcher merges one gauge's per-process values at scrape time, as
// prometheus_client's multiprocess_mode does. The "live" modes forget
// processes that have exited; mostrecent keeps the value set last (by the
// wall clock of the set) of any process.
enum class GaugeMode {
  livemax,
  livesum,
  max,
  min,
  sum,
  all,
  liveall,
  livemin,
  mostrecent,
  livemostrecent
};

std::string_view to_string(MetricKind kind) noexcept;
std::string_view to_string(GaugeMode mode) noexcept;
// "livesum" -> GaugeMode::livesum; false when text names no mode.
bool gauge_mode_from_string(std::string_view text, GaugeMode& mode) noexcept;

// A histogram whose buckets follow the values: base-2 exponential buckets
// (Prometheus' native histogram, OpenTelemetry's ExponentialHistogram). The
// fields are the plugin kit's ExponentialHistogramOptions, as an engine
// declares them (docs/exponential-histograms.md).
struct ExponentialHistogramOptions {
  std::uint32_t max_buckets = 160;  // per sign; 4 to kMaxExponentialBuckets
  std::int32_t max_scale = 20;      // the scale of an empty histogram, -10 to 20
  double zero_threshold = 0;        // |value| <= it counts as zero; finite, >= 0

  bool operator==(const ExponentialHistogramOptions&) const = default;
};
// The buckets per sign a family may keep: at scale -10, the lowest, every
// double fits in 3; the series hold them in the producer files, two runs of
// max_buckets slots.
inline constexpr std::uint32_t kMinExponentialBuckets = 4;
inline constexpr std::uint32_t kMaxExponentialBuckets = 4096;

struct MetricDefinition {
  std::string name;  // family name; a counter's without _total
  MetricKind kind = MetricKind::counter;
  std::string help;
  std::string unit;  // "seconds", "tokens", "" if none
  std::vector<std::string> label_names;
  std::vector<double> buckets;  // histograms: ascending upper bounds, no +Inf
  GaugeMode gauge_mode = GaugeMode::livemax;
  // Histograms: set, the buckets are exponential; the series keep no classic
  // counts, and plugins that aggregate classic buckets use `buckets` (by
  // default the powers of two from 2^-10 to 2^10).
  std::optional<ExponentialHistogramOptions> exponential = std::nullopt;

  // The name events and the exposition use: a counter's ends in _total.
  std::string sample_name() const;

  bool operator==(const MetricDefinition&) const = default;
};

// Checks a definition an engine makes and returns it normalized: a counter
// name given with _total loses the suffix (as prometheus_client does), a
// histogram without buckets gets prometheus_client's default buckets, a +Inf
// bucket is dropped. Throws std::invalid_argument naming the metric for a
// name or label name the exposition format does not allow, a reserved label
// name ("le" on a histogram, "quantile" on a summary, "pid" on an
// all/liveall gauge, "__" prefixes), buckets on a summary,
// duplicate label names, buckets that are not strictly ascending, or
// exponential options on another kind or out of their ranges. An exponential
// histogram without buckets gets the powers of two from 2^-10 to 2^10 as its
// classic bounds (for plugins that aggregate classic buckets).
MetricDefinition checked_definition(MetricDefinition definition);

// Histogram bucket helpers, as prometheus_client offers them.
std::vector<double> exponential_buckets(double start, double factor, int count);
std::vector<double> linear_buckets(double start, double width, int count);
// prometheus_client's default buckets (0.005 s to 10 s).
const std::vector<double>& default_buckets();

}  // namespace tokenspeed::metrics
