// recording.hpp — what an engine records with: metric families and the
// handles of their series. A handle is bound to one interned series; its
// methods never lock, allocate or make a system call.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

#include "tokenspeed/metrics/metric_definition.hpp"

namespace tokenspeed::metrics {

// The host's own types, opaque here.
struct MetricSeries;
struct CollectorOptions;
class FamilyCore;
class Collector;

// What every handle is: the series it is bound to, or none (an empty
// handle, which does nothing).
class SeriesHandle {
 public:
  explicit operator bool() const noexcept { return series_ != nullptr; }
  const MetricSeries* series() const noexcept { return series_; }
  // Whether this is the overflow series of a family an operator capped (a
  // view's cardinality_limit): labels() named a new label set past the cap.
  bool overflow() const noexcept;

 protected:
  SeriesHandle() = default;
  explicit SeriesHandle(MetricSeries* series) noexcept : series_(series) {}
  MetricSeries* series_ = nullptr;
};

// Handles are small values: copy them freely and keep them (they stay valid
// as long as the Launcher or Producer that made them). A default-constructed handle
// does nothing, as do the handles of a process with metrics disabled.
// Threading: any thread, any number of threads at once; every method is
// wait-free but for the compare-and-swap loop that adds to a double.
class Counter : public SeriesHandle {
 public:
  Counter() = default;

  // Adds delta (>= 0) to the Prometheus aggregate and emits an inc event to
  // every external output. A negative or NaN delta is ignored: a counter
  // never decreases.
  void inc(double delta = 1.0) const noexcept;
  // What this process has recorded (/metrics merges every process's); 0
  // for an empty handle.
  double value() const noexcept;

 private:
  template <class>
  friend class Family;
  explicit Counter(MetricSeries* series) noexcept : SeriesHandle(series) {}
};

class Gauge : public SeriesHandle {
 public:
  Gauge() = default;

  // Stores value (every update reaches Prometheus) and emits a set event
  // unless de-duplication suppresses it: outputs get the first value, every
  // change, and a fresh snapshot of an unchanged value at most once a second.
  void set(double value) const noexcept;
  // Adds delta to the current value (as one atomic step) and emits the new
  // value as a set event, de-duplicated as set is.
  void inc(double delta = 1.0) const noexcept;
  void dec(double delta = 1.0) const noexcept { inc(-delta); }
  // This process's current value; 0 for an empty handle.
  double value() const noexcept;

 private:
  template <class>
  friend class Family;
  Gauge(MetricSeries* series, const CollectorOptions* options) noexcept
      : SeriesHandle(series), options_(options) {}
  const CollectorOptions* options_ = nullptr;
};

class Histogram : public SeriesHandle {
 public:
  Histogram() = default;

  // Records weight samples of value (one value for weight tokens): the
  // bucket count and the count grow by weight, the sum by value * weight;
  // outputs get one observe event carrying the weight. weight 0 is ignored.
  void observe(double value, std::uint64_t weight = 1) const noexcept;
  // Records weight samples that add up to total (one interval spread over
  // weight tokens): the count grows by weight in the bucket of total /
  // weight, the sum by total exactly; outputs get observe(total / weight,
  // weight). weight 0 is ignored.
  void observe_total(double total, std::uint64_t weight) const noexcept;
  // Records each value once, as many observe(value) calls would.
  void observe_each(std::span<const double> values) const noexcept;
  // This process's own figures (0 for an empty handle): the count of bucket
  // i, not cumulative (i == the number of bounds: the +Inf bucket; a
  // summary has that one only), and the sum. An exponential histogram
  // keeps no classic counts: its bucket_count is 0.
  double bucket_count(std::size_t bucket) const noexcept;
  double sum() const noexcept;

 private:
  template <class>
  friend class Family;
  explicit Histogram(MetricSeries* series) noexcept : SeriesHandle(series) {}
};

// A metric family: the handles of its series, one per set of label values.
// Threading: labels() from any thread; it locks and allocates only the first
// time it sees a set of label values (interning), never afterwards.
template <class Handle>
class Family {
 public:
  // family.labels("llama", "0"): the handle of that series, in label-name
  // order. Throws std::invalid_argument when the number of values is wrong.
  // A new label set past the bound on series per family (Options::
  // max_series_per_family) is refused: an empty handle (false) whose methods
  // do nothing; the refusal is counted on /metrics and the family's first
  // one logged. Series that exist keep recording. A family an operator
  // capped (a view's cardinality_limit) refuses nothing: past the cap, a new
  // label set gets the family's overflow series (overflow() is true).
  template <class... Values>
  requires(std::is_convertible_v<const Values&, std::string_view>&&...) Handle
      labels(const Values&... values) {
    const std::array<std::string_view, sizeof...(Values)> views{std::string_view(values)...};
    return labels(std::span<const std::string_view>(views));
  }
  // The same from a run of values (a std::vector<std::string_view>, say).
  Handle labels(std::span<const std::string_view> values);

  const MetricDefinition& definition() const noexcept { return definition_; }
  std::size_t series_count() const;

  Family(const Family&) = delete;
  Family& operator=(const Family&) = delete;

 private:
  friend class Collector;
  Family(const MetricDefinition& definition, FamilyCore* core,
         const CollectorOptions* options) noexcept
      : definition_(definition), core_(core), options_(options) {}

  const MetricDefinition& definition_;
  FamilyCore* core_;  // null with metrics disabled: every handle does nothing
  const CollectorOptions* options_;
};

extern template class Family<Counter>;
extern template class Family<Gauge>;
extern template class Family<Histogram>;

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

}  // namespace tokenspeed::metrics
