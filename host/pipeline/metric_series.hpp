// metric_series.hpp — the interned family metadata and series shared by the
// collector (creates them) and the delivery threads (build ABI events from
// them). Immutable once published, except the gauge de-duplication state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <tokenspeed/metric_reporter.h>

#include "pipeline/gauge_dedup.hpp"
#include "core/metric_catalog.hpp"

namespace tokenspeed::metrics {

class EventRouter;

inline tsm_operation operation_of(MetricKind kind) noexcept {
  switch (kind) {
    case MetricKind::counter:
      return TSM_OP_INC;
    case MetricKind::gauge:
      return TSM_OP_SET;
    case MetricKind::histogram:
    case MetricKind::summary:
      return TSM_OP_OBSERVE;
  }
  return TSM_OP_INC;
}

// The kind plugins see: a summary is a histogram without bucket bounds.
inline tsm_metric_kind abi_kind_of(MetricKind kind) noexcept {
  return kind == MetricKind::summary ? TSM_KIND_HISTOGRAM : static_cast<tsm_metric_kind>(kind);
}

// The metadata of one family as plugins see it. info points into this object,
// so it is neither copied nor moved once built; it lives as long as the
// Collector that owns it (which outlives every sink: see collector.hpp).
struct SeriesFamily {
  explicit SeriesFamily(const MetricDefinition& definition);
  SeriesFamily(const SeriesFamily&) = delete;
  SeriesFamily& operator=(const SeriesFamily&) = delete;

  const MetricDefinition& definition;
  const std::string sample_name;               // counters end in _total
  const std::vector<const char*> label_names;  // point into definition
  tsm_metric_info info{};                      // built once, read by plugins
  // What an event of this family is (counter: inc, gauge: set, histogram:
  // observe), kept beside info so the delivery thread reads no definition per event.
  const tsm_operation operation;
};

// One series: a family and one label-value set, interned once. The address
// is stable for the life of the Collector. Threading: immutable after
// publication except slots (std::atomic_ref) and dedup (its own atomics).
struct MetricSeries {
  const SeriesFamily* family = nullptr;
  double* slots = nullptr;        // Prometheus aggregate, see metric_store.hpp
  EventRouter* router = nullptr;  // null: no external output selected
  // Non-null when the store kept this series' slots where /metrics does not
  // read them (a full file system): each event adds one to it.
  double* unstored_events = nullptr;
  std::uint32_t number = 0;  // the router's number for it (series_table.hpp)
  // Bit i set: the router's output i receives its events (a view's outputs;
  // outputs past the 64th always do). Read beside number, so a family every
  // output receives costs one predictable branch per output.
  std::uint64_t output_mask = ~std::uint64_t{0};
  bool stamps_sets = false;  // a mostrecent gauge: slots[1] takes each set's time
  bool overflow = false;     // the overflow series of a capped family (metric_views.hpp)
  std::uint64_t hash = 0;    // hash of the label values (lookup table)
  std::vector<std::string> label_values;
  std::vector<const char*> label_value_ptrs;  // c_str() of label_values
  // Gauges only. On a cache line of its own: collector threads write it,
  // delivery threads read the fields above.
  alignas(64) GaugeDedup dedup;
};

// What a collector thread hands to the router per event (in registers: the
// ring stores it as a 16-byte slot, see event_ring.hpp), no strings. The
// operation follows from the family's kind; raw_time is an EventClock raw
// reading converted to Unix nanoseconds by the delivery thread.
struct EventSlot {
  const MetricSeries* series;
  double value;
  std::uint64_t weight;
  std::int64_t raw_time;
};

}  // namespace tokenspeed::metrics
