// metric_store.hpp — where the Prometheus aggregate of every series lives: a
// run of double slots per series, updated lock-free by collector threads with
// std::atomic_ref and read at scrape time. Allocation happens when a series
// is interned, never on the hot path.
// Tested in test/unit/pipeline/collector_test.cpp (the interface as the
// collector records through it).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <utility>

#include "core/exponential_slots.hpp"
#include "core/metric_catalog.hpp"
#include "core/series_bound.hpp"

namespace tokenspeed::metrics {

// Slot layout of one series:
//   counter:   [0] running total
//   gauge:     [0] current value; in the mostrecent modes [1] the wall
//              clock of the last set (Unix ns), which the merge compares
//   histogram: [0, n) per-bucket counts for the n upper bounds (not
//              cumulative), [n] the +Inf bucket, [n + 1] the sum.
//              The count is the sum of the bucket slots.
//   summary:   a histogram's with n = 0: [0] the count, [1] the sum
//   exponential histogram: exponential_slots.hpp (no classic counts)
inline bool stamps_gauge_sets(const MetricDefinition& metric) noexcept {
  return metric.kind == MetricKind::gauge && (metric.gauge_mode == GaugeMode::mostrecent ||
                                              metric.gauge_mode == GaugeMode::livemostrecent);
}

inline std::size_t series_slot_count(const MetricDefinition& metric) noexcept {
  switch (metric.kind) {
    case MetricKind::histogram:
      return metric.exponential ? exponential_slot_count(*metric.exponential)
                                : metric.buckets.size() + 2;
    case MetricKind::summary:
      return 2;
    case MetricKind::gauge:
      return stamps_gauge_sets(metric) ? 2 : 1;
    case MetricKind::counter:
      break;
  }
  return 1;
}

// Threading: allocate_series may be called from any thread (it locks and
// allocates); the returned slots are touched only through std::atomic_ref.
class MetricStore {
 public:
  explicit MetricStore(SeriesBound bound = {}) : bound_(std::move(bound)) {}
  virtual ~MetricStore() = default;

  // Zeroed slots (series_slot_count(metric) of them, 8-byte aligned) for one
  // series, called once per series by the collector when it interns it. The
  // address stays valid for the life of the store. The metric outlives the store.
  virtual double* allocate_series(const MetricDefinition& metric,
                                  std::span<const std::string> label_values) = 0;

  // The slot that counts events recorded into the series at slots when the
  // store could not keep that series where it is read (a full file system:
  // multiprocess_metric_store.hpp); the collector adds one per such event.
  // Null for a series kept normally. Asked once per series, when interned.
  virtual double* unstored_events_slot(const double* /*slots*/) const noexcept { return nullptr; }

  // The bound on series per family of the built-in output, kept with its
  // aggregate: the collector consults it before interning a new label set
  // (collector.cpp) and refuses the label set past it. Series the host
  // allocates directly (its own figures) do not count against it.
  const SeriesBound& series_bound() const noexcept { return bound_; }

 private:
  SeriesBound bound_;
};

}  // namespace tokenspeed::metrics
