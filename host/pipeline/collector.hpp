// collector.hpp — the collector API: metric families, series handles interned
// once, and inc/set/observe that update the Prometheus aggregate and become
// events. The hot path never locks, allocates or makes a system call.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <span>
#include <string_view>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "config/metric_views.hpp"
#include "core/in_process_metric_store.hpp"
#include "pipeline/event_clock.hpp"
#include "pipeline/event_router.hpp"
#include "core/metric_catalog.hpp"
#include "pipeline/metric_series.hpp"
#include "core/metric_store.hpp"
#include "core/thread_safety.hpp"
#include "tokenspeed/metrics/recording.hpp"

namespace tokenspeed::metrics {

// A monotonic clock in nanoseconds; injectable so tests control the gauge
// snapshot interval.
using MonotonicClock = std::int64_t (*)() noexcept;

struct CollectorOptions {
  // Gauge de-duplication: the fresh-snapshot interval (the spec says one
  // second on a monotonic clock) and the clock. A null clock (the default)
  // uses the event clock's reading that also stamps the event, so a gauge
  // set reads the clock once (event_clock::monotonic_from_raw); tests set
  // a clock of their own, in nanoseconds.
  MonotonicClock monotonic_now = nullptr;
  std::chrono::nanoseconds gauge_snapshot_interval = std::chrono::seconds(1);
  // Set by the Collector: the interval in units of the clock above.
  std::int64_t snapshot_interval_ticks = 0;
  // --metrics-views: applied to each definition before it is checked and
  // compared with the families already defined; null: none.
  std::shared_ptr<const MetricViews> views = nullptr;
};

// The series table of one family: lookup by label values without locking or
// allocating when the series exists (an open-addressing table of series
// pointers, read lock-free), interning under a lock otherwise.
// Threading: find_or_intern from any thread.
class FamilyCore {
 public:
  // viewed, when given, is what views made of the engine's definition: its
  // kept labels (labels() then takes the engine's values and keeps those)
  // and its outputs.
  FamilyCore(const MetricDefinition& definition, MetricStore& store, EventRouter* router,
             const ViewedDefinition* viewed = nullptr);
  ~FamilyCore();
  FamilyCore(const FamilyCore&) = delete;
  FamilyCore& operator=(const FamilyCore&) = delete;

  // Finds the series with these label values (one per label name, in order)
  // or interns it: allocate_series is called once per series. At the store's
  // bound on series per family (series_bound.hpp) a new label set is refused:
  // nullptr, counted, and the first refusal logged; without a lock or an
  // allocation once the family is known to be full. Throws
  // std::invalid_argument when the number of values is wrong. values are the
  // engine's: with labels dropped by a view, the kept ones name the series,
  // so label sets differing only in dropped labels share it.
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
  // The engine's values as the family's series name them, read in place:
  // the kept labels in order, then the overflow label's "" when capped.
  struct SeriesValues {
    std::span<const std::string_view> engine;
    const std::size_t* kept;
    std::size_t kept_count;
    std::size_t count;
    std::size_t size() const noexcept { return count; }
    std::string_view operator[](std::size_t k) const noexcept {
      return k < kept_count ? engine[kept[k]] : std::string_view{};
    }
  };
  SeriesValues series_values(std::span<const std::string_view> values) const noexcept;
  static constexpr std::size_t kLocalLabels = 16;
  MetricSeries* intern(std::span<const std::string_view> values);
  MetricSeries* add_series_locked(std::span<const std::string_view> values, std::uint64_t hash,
                                  bool overflow) TSM_REQUIRES(mutex_);
  // Values: a span of them or SeriesValues (one hash for both).
  template <class Values>
  static std::uint64_t hash_values(const Values& values) noexcept;
  template <class Values>
  static MetricSeries* probe(const Table& table, std::uint64_t hash, const Values& values) noexcept;
  void insert_locked(MetricSeries* series) TSM_REQUIRES(mutex_);
  MetricSeries* refuse_locked(std::span<const std::string_view> values) noexcept
      TSM_REQUIRES(mutex_);
  MetricSeries* refuse() noexcept;
  // The family's overflow series (made on the first call), counted.
  MetricSeries* overflow_locked(std::span<const std::string_view> values) TSM_REQUIRES(mutex_);
  MetricSeries* overflow_into(MetricSeries* overflow) noexcept;
  // This family's series of a self-metric labelled {family}; null when the
  // store cannot give one.
  double* self_metric_slot(const MetricDefinition& definition) noexcept;
  // The line of a family's first refusal or overflow, to the bound's log.
  void write_bound_line(const std::function<std::string()>& make_line) noexcept;

  SeriesFamily family_;
  // Set when a view dropped labels: the engine's label count and the
  // engine's index of each kept label.
  std::uint64_t output_mask_ = ~std::uint64_t{0};  // MetricSeries::output_mask
  bool narrows_labels_ = false;
  std::size_t engine_label_count_ = 0;
  std::vector<std::size_t> kept_labels_;
  MetricStore& store_;
  EventRouter* router_;
  // Set once the family has refused a label set (it never shrinks), after
  // refused_slot_: later refusals skip the lock.
  std::atomic<bool> at_bound_{false};
  double* refused_slot_ = nullptr;  // its tokenspeed_metrics_series_refused_total series
  // A view's cardinality limit (cut to the bound on series): at this many
  // series, the overflow series included, new label sets record into the
  // overflow series; 0: none. Once it exists, reached without the lock.
  std::size_t overflow_at_ = 0;
  std::atomic<MetricSeries*> overflow_series_{nullptr};
  double* overflowed_slot_ = nullptr;  // its tokenspeed_metrics_series_overflowed_total series
  std::atomic<Table*> table_;
  mutable Mutex mutex_;  // interning only
  // Every table ever published (readers may hold old ones).
  std::vector<std::unique_ptr<Table>> tables_ TSM_GUARDED_BY(mutex_);
  std::deque<MetricSeries> series_ TSM_GUARDED_BY(mutex_);  // stable addresses
};

// The registry of families of one process.
// Lifetimes: each MetricDefinition outlives the Collector and the store; the
// Collector outlives the EventRouter's close() (the router's rings and the
// plugins' tsm_metric_info point into the Collector's series and families).
// Threading: family lookup/creation from any thread (locks; startup path).
class Collector {
 public:
  // router is null when no external output is selected: no event is built.
  Collector(MetricStore& store, EventRouter* router = nullptr, CollectorOptions options = {});
  // A collector of a process with metrics disabled: every handle does nothing.
  explicit Collector(std::nullptr_t);
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // The family of definition, created on first call (the definition is
  // checked and copied: see checked_definition) and the same object for
  // every later call with an equal definition. Throws std::invalid_argument
  // when the kind does not match, the definition is invalid, another
  // definition of that name exists, or another family claims one of its
  // sample names (counter c and gauge c_total: see sample_name_claims.hpp).
  // Never for a clash a view's new name makes (view_renames.hpp): the
  // family then keeps its engine name, or records nothing when a view gave
  // its name away. store may be null (metrics disabled): the family then
  // hands out handles that do nothing.
  CounterFamily& counter(const MetricDefinition& definition);
  GaugeFamily& gauge(const MetricDefinition& definition);
  HistogramFamily& histogram(const MetricDefinition& definition);
  // A summary is observed through Histogram handles (a histogram without
  // buckets: a count and a sum).
  HistogramFamily& summary(const MetricDefinition& definition);

  EventRouter* router() const noexcept { return router_; }
  const CollectorOptions& options() const noexcept { return options_; }

 private:
  // One family per name: the definition (a normalized copy), its series
  // table and the public Family that hands out handles.
  struct Entry {
    std::unique_ptr<MetricDefinition> definition;
    std::vector<std::string> engine_labels;  // before views; equal definitions share them
    bool renamed = false;                    // its name is a view's, not the engine's
    std::unique_ptr<FamilyCore> core;        // null: the family records nothing
    std::unique_ptr<CounterFamily> counter;
    std::unique_ptr<GaugeFamily> gauge;
    std::unique_ptr<HistogramFamily> histogram;  // histograms and summaries
  };
  Entry& entry(const MetricDefinition& definition, MetricKind kind);
  ViewedDefinition viewed_definition(const MetricDefinition& definition) const;
  // Why checked cannot be defined beside the families already defined, ""
  // when it can; holder is the family in its way, or its equal (reused).
  std::string clash_locked(const MetricDefinition& checked,
                           const std::vector<std::string>& engine_labels, Entry*& holder)
      TSM_REQUIRES(mutex_);
  Entry& add_entry_locked(Entry& entry, MetricDefinition checked,
                          const MetricDefinition& definition, const ViewedDefinition& viewed,
                          MetricKind kind) TSM_REQUIRES(mutex_);
  // The family, recording nothing, of an engine definition whose name a view
  // gave to another family (view_renames.hpp).
  Entry& name_given_away_locked(const MetricDefinition& definition, MetricKind kind,
                                const std::string& clash) TSM_REQUIRES(mutex_);
  // Counts and writes (once per engine family) what view_renames.hpp says.
  void report_view_rename_locked(const MetricDefinition& definition, const std::string& line)
      TSM_REQUIRES(mutex_);
  // The store of a family's series: the process's, or memory /metrics never
  // reads when a view keeps the family from the Prometheus output.
  MetricStore& family_store(const std::optional<std::vector<std::string>>& outputs)
      TSM_REQUIRES(mutex_);

  MetricStore* store_;
  EventRouter* router_;
  const CollectorOptions options_;
  mutable Mutex mutex_;
  std::map<std::string, Entry, std::less<>> families_ TSM_GUARDED_BY(mutex_);
  // Engine families whose name a view gave to another, by the engine's name.
  std::map<std::string, Entry, std::less<>> names_given_away_ TSM_GUARDED_BY(mutex_);
  // Engine families whose view rename was refused or name given away, reported.
  std::set<std::string, std::less<>> view_renames_reported_ TSM_GUARDED_BY(mutex_);
  // The series of families a view keeps from the Prometheus output: in this
  // process's memory, which /metrics never reads.
  std::unique_ptr<InProcessMetricStore> unexposed_store_ TSM_GUARDED_BY(mutex_);
};

// ------------------------------------------------------------ hot path
// The bodies of the handles' methods, inline for the host's own callers; the
// public handles call them from collector.cpp.

// Adds delta to an aggregate slot and returns the new value: a relaxed
// compare-and-swap loop written out, so it is inlined (libstdc++'s
// atomic_ref<double>::fetch_add is an out-of-line call at -O2).
inline double add_to_slot(double& slot, double delta) noexcept {
  std::atomic_ref<double> atomic(slot);
  double current = atomic.load(std::memory_order_relaxed);
  while (!atomic.compare_exchange_weak(current, current + delta, std::memory_order_relaxed)) {
  }
  return current + delta;
}

// One event into a series the store could not keep in its file: counted
// (one predictable branch on a field beside slots; no lock, no system call).
inline void count_if_unstored(const MetricSeries* series) noexcept {
  if (series->unstored_events != nullptr) [[unlikely]] {
    add_to_slot(*series->unstored_events, 1.0);
  }
}

inline void record_inc(MetricSeries* series, double delta) noexcept {
  if (series == nullptr || !(delta >= 0.0)) return;
  add_to_slot(series->slots[0], delta);
  count_if_unstored(series);
  if (EventRouter* router = series->router) {
    router->publish(EventSlot{series, delta, 1, event_clock::raw_now()});
  }
}

inline void emit_gauge(MetricSeries* series, const CollectorOptions& options,
                       double value) noexcept {
  if (EventRouter* router = series->router) {
    const std::int64_t raw = event_clock::raw_now();
    const std::int64_t now = options.monotonic_now != nullptr
                                 ? options.monotonic_now()
                                 : event_clock::monotonic_from_raw(raw);
    if (series->dedup.should_emit(value, now, options.snapshot_interval_ticks)) {
      router->publish(EventSlot{series, value, 1, raw});
    }
  }
}

// A mostrecent gauge keeps the wall clock of its last set beside the value
// (a vDSO read, no system call), for the merge to pick the latest process.
inline void stamp_set(MetricSeries* series) noexcept {
  if (series->stamps_sets) [[unlikely]] {
    std::atomic_ref<double>(series->slots[1])
        .store(static_cast<double>(event_clock::realtime_ns()), std::memory_order_relaxed);
  }
}

inline void record_set(MetricSeries* series, const CollectorOptions* options,
                       double value) noexcept {
  if (series == nullptr) return;
  std::atomic_ref<double>(series->slots[0]).store(value, std::memory_order_relaxed);
  count_if_unstored(series);
  stamp_set(series);
  emit_gauge(series, *options, value);
}

inline void record_add(MetricSeries* series, const CollectorOptions* options,
                       double delta) noexcept {
  if (series == nullptr) return;
  const double value = add_to_slot(series->slots[0], delta);
  count_if_unstored(series);
  stamp_set(series);
  emit_gauge(series, *options, value);
}

// The bucket of value: the first upper bound it does not exceed, n (+Inf)
// when there is none or value is NaN. Without branches on the value, so
// latencies spread over many buckets cost no mispredicted branches: up to
// 32 bounds the bounds below value are counted, two at a time with SSE2
// (independent compares, no chain of loads); beyond that a binary search of
// conditional moves. "Below" is !(value <= bound), true for NaN.
inline std::size_t bucket_index(const double* bounds, std::size_t n, double value) noexcept {
  if (n <= 32) {
    std::size_t i = 0;
    std::size_t below = 0;
#if defined(__SSE2__)
    const __m128d v = _mm_set1_pd(value);
    __m128i even = _mm_setzero_si128();  // two accumulators: two compares in flight
    __m128i odd = _mm_setzero_si128();
    for (; i + 4 <= n; i += 4) {
      // A true compare is all ones (-1): subtracting it counts one.
      even = _mm_sub_epi64(even, _mm_castpd_si128(_mm_cmpnle_pd(v, _mm_loadu_pd(bounds + i))));
      odd = _mm_sub_epi64(odd, _mm_castpd_si128(_mm_cmpnle_pd(v, _mm_loadu_pd(bounds + i + 2))));
    }
    const __m128i both = _mm_add_epi64(even, odd);
    below = static_cast<std::size_t>(_mm_cvtsi128_si64(both) +
                                     _mm_cvtsi128_si64(_mm_unpackhi_epi64(both, both)));
#endif
    for (; i < n; ++i) below += !(value <= bounds[i]) ? 1 : 0;
    return below;
  }
  const double* base = bounds;
  while (n > 1) {
    const std::size_t half = n / 2;
    base = !(value <= base[half]) ? base + half : base;
    n -= half;
  }
  return static_cast<std::size_t>(base - bounds) + (!(value <= *base) ? 1 : 0);
}

// weight samples of value whose sum is total (value * weight, or the exact
// total the engine measured when it spreads one interval over weight).
inline void record_weighted(MetricSeries* series, double value, std::uint64_t weight,
                            double total) noexcept {
  const MetricDefinition& definition = series->family->definition;
  if (definition.exponential) {
    observe_exponential(series->slots, *definition.exponential, value, weight, total);
  } else {
    const std::size_t n = definition.buckets.size();
    const std::size_t bucket = bucket_index(definition.buckets.data(), n, value);
    add_to_slot(series->slots[bucket], static_cast<double>(weight));
    add_to_slot(series->slots[n + 1], total);
  }
  count_if_unstored(series);
  if (EventRouter* router = series->router) {
    router->publish(EventSlot{series, value, weight, event_clock::raw_now()});
  }
}

inline void record_observe(MetricSeries* series, double value, std::uint64_t weight) noexcept {
  if (series == nullptr || weight == 0) return;
  record_weighted(series, value, weight, value * static_cast<double>(weight));
}

inline void record_observe_total(MetricSeries* series, double total,
                                 std::uint64_t weight) noexcept {
  if (series == nullptr || weight == 0) return;
  record_weighted(series, total / static_cast<double>(weight), weight, total);
}

}  // namespace tokenspeed::metrics
