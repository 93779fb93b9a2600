// collector.hpp — the collector API: metric families, series handles interned
// once, and inc/set/observe that update the Prometheus aggregate and become
// events. The hot path never locks, allocates or makes a system call.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "pipeline/event_clock.hpp"
#include "pipeline/event_router.hpp"
#include "pipeline/metric_catalog.hpp"
#include "pipeline/metric_series.hpp"
#include "prometheus/metric_store.hpp"

namespace tokenspeed::metrics {

// A monotonic clock in nanoseconds; injectable so tests control the gauge
// snapshot interval.
using MonotonicClock = std::int64_t (*)() noexcept;

struct CollectorOptions {
  // Gauge de-duplication: the clock and the fresh-snapshot interval (the spec
  // says one second on a monotonic clock).
  MonotonicClock monotonic_now = &event_clock::monotonic_ns;
  std::chrono::nanoseconds gauge_snapshot_interval = std::chrono::seconds(1);
};

// Handles are small values (copy them freely) bound to one interned series.
// A default-constructed handle does nothing. Threading: any thread, any
// number of threads at once; every method is wait-free except the CAS loops
// of the aggregate (lock-free).
class Counter {
 public:
  Counter() = default;
  explicit Counter(MetricSeries* series) noexcept : series_(series) {}

  // Adds delta (>= 0; a negative or NaN delta is ignored, as a counter
  // never decreases) to the aggregate and emits an inc event.
  void inc(double delta = 1.0) const noexcept;
  const MetricSeries* series() const noexcept { return series_; }

 private:
  MetricSeries* series_ = nullptr;
};

class Gauge {
 public:
  Gauge() = default;
  Gauge(MetricSeries* series, const CollectorOptions* options) noexcept
      : series_(series), options_(options) {}

  // Stores value in the aggregate (every update) and emits a set event
  // unless gauge de-duplication suppresses it (see gauge_dedup.hpp).
  void set(double value) const noexcept;
  const MetricSeries* series() const noexcept { return series_; }

 private:
  MetricSeries* series_ = nullptr;
  const CollectorOptions* options_ = nullptr;
};

class Histogram {
 public:
  Histogram() = default;
  explicit Histogram(MetricSeries* series) noexcept : series_(series) {}

  // Records weight samples of value: bucket count += weight, sum +=
  // value * weight, and emits one observe event carrying the weight.
  // weight 0 is ignored.
  void observe(double value, std::uint64_t weight = 1) const noexcept;
  const MetricSeries* series() const noexcept { return series_; }

 private:
  MetricSeries* series_ = nullptr;
};

class Collector;

// The series table of one family: lookup by label values without locking or
// allocating when the series exists (an open-addressing table of series
// pointers, read lock-free), interning under a lock otherwise.
// Threading: find_or_intern from any thread.
class FamilyCore {
 public:
  FamilyCore(const MetricDefinition& definition, MetricStore& store, EventRouter* router);
  ~FamilyCore();
  FamilyCore(const FamilyCore&) = delete;
  FamilyCore& operator=(const FamilyCore&) = delete;

  // Finds the series with these label values (one per label name, in order)
  // or interns it: allocate_series is called once per series. Throws
  // std::invalid_argument when the number of values is wrong.
  MetricSeries* find_or_intern(std::span<const std::string_view> values);
  // Lookup only: nullptr when absent. Never allocates or locks.
  MetricSeries* find(std::span<const std::string_view> values) const noexcept;

  const MetricDefinition& definition() const noexcept { return family_.definition; }
  const SeriesFamily& series_family() const noexcept { return family_; }
  std::size_t series_count() const;

 private:
  struct Table {
    explicit Table(std::size_t capacity);
    std::size_t mask;
    std::unique_ptr<std::atomic<MetricSeries*>[]> slots;
  };
  static std::uint64_t hash_values(std::span<const std::string_view> values) noexcept;
  static MetricSeries* probe(const Table& table, std::uint64_t hash,
                             std::span<const std::string_view> values) noexcept;
  void insert_locked(MetricSeries* series);

  SeriesFamily family_;
  MetricStore& store_;
  EventRouter* router_;
  std::atomic<Table*> table_;
  mutable std::mutex mutex_;  // interning only
  std::vector<std::unique_ptr<Table>>
      tables_;                       // every table ever published (readers may hold old ones)
  std::deque<MetricSeries> series_;  // stable addresses
};

// A metric family: the handles of its series. Threading: labels() from any
// thread; it locks (and allocates) only when it interns a new series.
template <class Handle>
class Family {
 public:
  Family(const MetricDefinition& definition, MetricStore& store, EventRouter* router,
         const CollectorOptions* options)
      : core_(definition, store, router), options_(options) {}

  // family.labels("llama", "0"): the handle of that series, interned on first
  // use; no allocation when it exists. Values are in label-name order.
  template <class... Values>
  Handle labels(const Values&... values) {
    const std::array<std::string_view, sizeof...(Values)> views{std::string_view(values)...};
    return make(core_.find_or_intern(views));
  }
  Handle labels(std::span<const std::string_view> values) {
    return make(core_.find_or_intern(values));
  }

  const MetricDefinition& definition() const noexcept { return core_.definition(); }
  const SeriesFamily& series_family() const noexcept { return core_.series_family(); }
  std::size_t series_count() const { return core_.series_count(); }

 private:
  Handle make(MetricSeries* series) const noexcept {
    if constexpr (std::is_same_v<Handle, Gauge>) {
      return Gauge(series, options_);
    } else {
      return Handle(series);
    }
  }

  FamilyCore core_;
  const CollectorOptions* options_;
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

// The registry of families of one process.
// Lifetimes: each MetricDefinition outlives the Collector and the store; the
// Collector outlives the EventRouter's close() (the router's rings and the
// plugins' tsm_metric_info point into the Collector's series and families).
// Threading: family lookup/creation from any thread (locks; startup path).
class Collector {
 public:
  // router is null when no external output is selected: no event is built.
  Collector(MetricStore& store, EventRouter* router = nullptr, CollectorOptions options = {});
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // The family of definition (created on first call, the same object later).
  // Throws std::invalid_argument when definition's kind does not match.
  CounterFamily& counter(const MetricDefinition& definition);
  GaugeFamily& gauge(const MetricDefinition& definition);
  HistogramFamily& histogram(const MetricDefinition& definition);

  EventRouter* router() const noexcept { return router_; }
  const CollectorOptions& options() const noexcept { return options_; }

 private:
  template <class F>
  F& family(const MetricDefinition& definition, MetricKind kind,
            std::map<const MetricDefinition*, std::unique_ptr<F>>& families);

  MetricStore& store_;
  EventRouter* router_;
  const CollectorOptions options_;
  std::mutex mutex_;
  std::map<const MetricDefinition*, std::unique_ptr<CounterFamily>> counters_;
  std::map<const MetricDefinition*, std::unique_ptr<GaugeFamily>> gauges_;
  std::map<const MetricDefinition*, std::unique_ptr<HistogramFamily>> histograms_;
};

// ------------------------------------------------------------ hot path

inline void Counter::inc(double delta) const noexcept {
  if (series_ == nullptr || !(delta >= 0.0)) return;
  std::atomic_ref<double>(series_->slots[0]).fetch_add(delta, std::memory_order_relaxed);
  if (EventRouter* router = series_->router) {
    router->publish(EventSlot{series_, delta, 1, event_clock::raw_now()});
  }
}

inline void Gauge::set(double value) const noexcept {
  if (series_ == nullptr) return;
  std::atomic_ref<double>(series_->slots[0]).store(value, std::memory_order_relaxed);
  if (EventRouter* router = series_->router) {
    const std::int64_t now = options_->monotonic_now();
    if (series_->dedup.should_emit(value, now, options_->gauge_snapshot_interval.count())) {
      router->publish(EventSlot{series_, value, 1, event_clock::raw_now()});
    }
  }
}

inline void Histogram::observe(double value, std::uint64_t weight) const noexcept {
  if (series_ == nullptr || weight == 0) return;
  const std::vector<double>& bounds = series_->family->definition.buckets;
  const std::size_t n = bounds.size();
  std::size_t bucket = 0;
  while (bucket < n && !(value <= bounds[bucket])) ++bucket;  // NaN lands in +Inf
  std::atomic_ref<double>(series_->slots[bucket])
      .fetch_add(static_cast<double>(weight), std::memory_order_relaxed);
  std::atomic_ref<double>(series_->slots[n + 1])
      .fetch_add(value * static_cast<double>(weight), std::memory_order_relaxed);
  if (EventRouter* router = series_->router) {
    router->publish(EventSlot{series_, value, weight, event_clock::raw_now()});
  }
}

}  // namespace tokenspeed::metrics
