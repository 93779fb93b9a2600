// series_bound.hpp — the per-family bound on series of a process
// (--metrics-max-series-per-family): its default and range, the self-metric
// that counts the label sets refused past it, and the line that reports a
// family's first refusal. Never on the hot path. Tested in
// test/unit/pipeline/series_bound_test.cpp (with the collector that applies it).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "core/metric_catalog.hpp"
#include "core/fault_log.hpp"

namespace tokenspeed::metrics {

// Generous for an engine's metrics (a family is labelled by model, rank,
// finish reason...: tens to hundreds of series), small enough that one
// family fed a new value per call (a request id as a label) stays a few MB
// in each process and on /metrics rather than growing until the scrape times
// out: 10,000 counter series render as about 1 MB of exposition.
inline constexpr std::size_t kDefaultMaxSeriesPerFamily = 10'000;
// The largest bound accepted: what the series table numbers at most
// (series_table.hpp), in effect no bound.
inline constexpr std::size_t kMaxSeriesPerFamilyLimit = std::size_t{1} << 24;

// The bound the collector applies to every family of one process.
struct SeriesBound {
  std::size_t max_series_per_family = kDefaultMaxSeriesPerFamily;
  LogWriter log;  // the first refusal of each family; null: stderr
};

// Writes line where the bound's lines go: its log, else stderr.
void write_bound_log_line(const SeriesBound& bound, std::string_view line) noexcept;

// tokenspeed_metrics_series_refused_total{family}: calls that asked for a new
// label set of a family at its bound (labels() returned an empty handle).
const MetricDefinition& series_refused_definition();

// tokenspeed_metrics_series_overflowed_total{family}: calls that asked for a
// new label set of a family at its view's cardinality limit (they recorded
// into the family's overflow series).
const MetricDefinition& series_overflowed_definition();

// The one line written when a family's overflow series is made: the family,
// the limit, the views flag, and the first label set it took.
std::string series_overflowed_line(const MetricDefinition& family, std::size_t limit,
                                   std::span<const std::string_view> values);

// The one line written at a family's first refusal: the family, the bound,
// the flag, and the refused label set (each value cut to a few dozen bytes).
std::string series_refused_line(const MetricDefinition& family, std::size_t bound,
                                std::span<const std::string_view> values);

}  // namespace tokenspeed::metrics
