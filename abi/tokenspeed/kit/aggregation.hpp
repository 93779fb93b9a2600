/*
 * tokenspeed/kit/aggregation.hpp — folds events into per-series state: the
 * counter's cumulative sum, the gauge's last value and its time, histogram
 * bucket counts from the event's bounds with the weight kept exact, a start
 * time per series; cumulative or delta. Memory is bounded by a series limit:
 * an event of a series beyond it is counted, never merged into another.
 * Header-only C++17; the per-event path takes one uncontended mutex and
 * allocates only for a series seen for the first time (and, in exponential
 * buckets, when a series' range widens, up to its max_buckets).
 */
#ifndef TOKENSPEED_KIT_AGGREGATION_HPP
#define TOKENSPEED_KIT_AGGREGATION_HPP

#include <tokenspeed/metric_reporter.h>
#include <tokenspeed/kit/exponential_histogram.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace tokenspeed::metrics::kit {

enum class Temporality {
  kCumulative,  // every value since the series' start; every series every collect
  kDelta,       // what changed since the last collect; only series that changed
};

/* A metric family as the aggregation keeps it: copied from the event's
 * tsm_metric_info the first time it is seen, so nothing here points into the
 * host after the sink is closed. Immutable once made. */
struct SeriesFamily {
  uint32_t kind = 0;  // a tsm_metric_kind
  std::string name;   // as in events: counters end in _total
  std::string help;
  std::string unit;
  std::vector<std::string> label_names;
  std::vector<double> bounds;  // histograms: ascending upper bounds, +Inf implied
  // Aggregated in exponential buckets (the family's layout is exponential
  // and AggregationOptions::exponential_histograms): bounds are then unused.
  bool exponential = false;
  ExponentialHistogramOptions exponential_options;
};

/* The family's histogram layout, as an info of any header version says it:
 * classic unless the info has the field (struct_size) and says exponential. */
inline bool has_exponential_layout(const tsm_metric_info& info) noexcept {
  return info.kind == TSM_KIND_HISTOGRAM && info.struct_size >= TSM_METRIC_INFO_SIZE_V2 &&
         info.histogram_layout == TSM_HISTOGRAM_EXPONENTIAL;
}

/* One series' state. family and label_values never change once made. */
struct SeriesState {
  const SeriesFamily* family = nullptr;
  std::vector<std::string> label_values;  // in family->label_names order
  uint64_t hash = 0;
  const tsm_metric_info* info = nullptr;  // identity only: never dereferenced after creation
  int64_t start_ns = 0;                   // start of the window (cumulative: first event)
  int64_t last_ns = 0;                    // timestamp of the last event
  double value = 0;                       // counter: sum of deltas; gauge: last value
  uint64_t count = 0;                     // histogram: total weight
  double sum = 0;                         // histogram: sum of value * weight
  std::vector<uint64_t> buckets;          // histogram: bounds.size() + 1 counts, not cumulative
  std::unique_ptr<ExponentialHistogram> exponential;  // family->exponential: the buckets
  bool touched = false;                               // changed since the last collect
};

/* One data point of a collect: a copy of the series' values at collect time.
 * family and label_values point into the Aggregator and stay valid for its
 * life. Buckets are at [bucket_offset, bucket_offset + bounds.size() + 1) of
 * Snapshot::buckets. */
struct Point {
  const SeriesFamily* family = nullptr;
  const std::vector<std::string>* label_values = nullptr;
  int64_t start_ns = 0;
  int64_t time_ns = 0;  // gauge: its last event's time; otherwise the collect time
  double value = 0;
  uint64_t count = 0;
  double sum = 0;
  std::size_t bucket_offset = 0;
  // family->exponential: the index of its histogram in Snapshot::exponential.
  std::size_t exponential_index = 0;
};

struct Snapshot {
  Temporality temporality = Temporality::kCumulative;
  int64_t collected_ns = 0;
  std::vector<Point> points;
  std::vector<uint64_t> buckets;
  std::vector<ExponentialHistogram> exponential;  // copies at collect time
  // Events folded in since the Aggregator began, up to this snapshot: the
  // events a delivered cumulative snapshot carries to the back end (a delta
  // snapshot carries those since the previous one).
  uint64_t events = 0;
};

struct AggregationOptions {
  std::size_t max_series = 100000;  // series beyond it are refused (counted)
  Temporality temporality = Temporality::kCumulative;
  std::size_t batch_points = 0;  // add() reports when this many series changed (0: never)
  // Families whose layout is exponential aggregate into exponential buckets
  // (an output that can send them); false: into their classic bounds.
  bool exponential_histograms = false;
};

/* The wall clock as Unix time in nanoseconds: what collect takes. */
inline int64_t unix_time_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/* Totals since the aggregator was made. */
struct AggregationFigures {
  uint64_t accepted = 0;
  uint64_t over_series_limit = 0;  // events of series beyond max_series
  uint64_t invalid = 0;            // negative counter delta, NaN, operation not of the kind,
                                   // +/-Inf or a value past the lowest scale in exponential
                                   // buckets
  std::size_t series = 0;
};
/* The name of earlier kit releases. */
using AggregationStats [[deprecated("renamed AggregationFigures")]] = AggregationFigures;

/* Threading: add is called by one thread at a time (the sink's emit); collect
 * and stats by any other thread (the delivery thread). They share one mutex,
 * held per event for a lookup and an update. */
class Aggregator {
 public:
  enum class Added {
    kAccepted,
    kBatchFull,  // accepted, and batch_points series have now changed since the last collect
    kOverSeriesLimit,
    kInvalid,
  };

  explicit Aggregator(AggregationOptions options) : options_(options) { slots_.assign(64, 0); }
  Aggregator(const Aggregator&) = delete;
  Aggregator& operator=(const Aggregator&) = delete;

  /* Folds one event in. Never throws: out of memory counts as over the limit. */
  Added add(const tsm_metric_event& event) noexcept {
    const tsm_metric_info* info = event.info;
    if (info == nullptr || !operation_fits(info->kind, event.operation) ||
        std::isnan(event.value) || (event.operation == TSM_OP_INC && !(event.value >= 0))) {
      std::lock_guard lock(mutex_);
      ++figures_.invalid;
      return Added::kInvalid;
    }
    std::size_t lengths[kMaxFastLabels];
    const uint64_t hash = hash_event(event, lengths);
    std::lock_guard lock(mutex_);
    SeriesState* series = find(event, hash, lengths);
    if (series == nullptr) {
      series = insert(event, hash);
      if (series == nullptr) {
        ++figures_.over_series_limit;
        return Added::kOverSeriesLimit;
      }
    }
    if (!apply(*series, event)) {
      ++figures_.invalid;
      return Added::kInvalid;
    }
    ++figures_.accepted;
    if (!series->touched) {
      series->touched = true;
      ++touched_;
      if (options_.batch_points != 0 && touched_ == options_.batch_points) return Added::kBatchFull;
    }
    return Added::kAccepted;
  }

  /* Copies every series (cumulative) or every series that changed (delta)
   * into a snapshot at now_ns, and starts a new window. */
  Snapshot collect(int64_t now_ns) {
    Snapshot snapshot;
    snapshot.temporality = options_.temporality;
    snapshot.collected_ns = now_ns;
    std::lock_guard lock(mutex_);
    snapshot.points.reserve(options_.temporality == Temporality::kDelta ? touched_
                                                                        : series_.size());
    for (SeriesState& s : series_) {
      if (options_.temporality == Temporality::kDelta && !s.touched) continue;
      Point point;
      point.family = s.family;
      point.label_values = &s.label_values;
      point.start_ns = s.start_ns;
      point.time_ns = s.family->kind == TSM_KIND_GAUGE ? s.last_ns : std::max(now_ns, s.last_ns);
      point.value = s.value;
      point.count = s.count;
      point.sum = s.sum;
      if (s.exponential) {
        point.exponential_index = snapshot.exponential.size();
        snapshot.exponential.push_back(*s.exponential);
      }
      point.bucket_offset = snapshot.buckets.size();
      snapshot.buckets.insert(snapshot.buckets.end(), s.buckets.begin(), s.buckets.end());
      snapshot.points.push_back(point);
      s.touched = false;
      if (options_.temporality == Temporality::kDelta) {
        s.start_ns = point.time_ns;
        if (s.family->kind != TSM_KIND_GAUGE) s.value = 0;
        s.count = 0;
        s.sum = 0;
        std::fill(s.buckets.begin(), s.buckets.end(), 0);
        if (s.exponential) s.exponential->clear();
      }
    }
    touched_ = 0;
    snapshot.events = figures_.accepted;
    collected_events_ = figures_.accepted;
    return snapshot;
  }

  /* Snapshot::events of the last collect (0 before the first). */
  uint64_t collected_events() const {
    std::lock_guard lock(mutex_);
    return collected_events_;
  }

  AggregationFigures figures() const {
    std::lock_guard lock(mutex_);
    AggregationFigures out = figures_;
    out.series = series_.size();
    return out;
  }
  [[deprecated("use figures()")]] AggregationFigures stats() const { return figures(); }

  const AggregationOptions& options() const noexcept { return options_; }

 private:
  static constexpr std::size_t kMaxFastLabels = 16;

  static bool operation_fits(uint32_t kind, uint32_t operation) noexcept {
    return (kind == TSM_KIND_COUNTER && operation == TSM_OP_INC) ||
           (kind == TSM_KIND_GAUGE && operation == TSM_OP_SET) ||
           (kind == TSM_KIND_HISTOGRAM && operation == TSM_OP_OBSERVE);
  }

  static uint64_t mix(uint64_t h, uint64_t k) noexcept {
    h ^= k;
    h *= 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
  }

  static uint64_t hash_bytes(uint64_t h, const char* data, std::size_t size) noexcept {
    while (size >= 8) {
      uint64_t k;
      std::memcpy(&k, data, 8);
      h = mix(h, k);
      data += 8;
      size -= 8;
    }
    uint64_t tail = 0;
    std::memcpy(&tail, data, size);
    return mix(h, tail ^ (static_cast<uint64_t>(size) << 56));
  }

  static uint64_t hash_event(const tsm_metric_event& event, std::size_t* lengths) noexcept {
    uint64_t h = mix(0x243F6A8885A308D3ull, reinterpret_cast<uintptr_t>(event.info));
    for (uint32_t i = 0; i < event.label_count; ++i) {
      const char* value = event.label_values[i] != nullptr ? event.label_values[i] : "";
      const std::size_t size = std::strlen(value);
      if (i < kMaxFastLabels) lengths[i] = size;
      h = hash_bytes(h, value, size);
    }
    return h;
  }

  static bool same_series(const SeriesState& s, const tsm_metric_event& event, uint64_t hash,
                          const std::size_t* lengths) noexcept {
    if (s.hash != hash || s.info != event.info || s.label_values.size() != event.label_count)
      return false;
    for (uint32_t i = 0; i < event.label_count; ++i) {
      const char* value = event.label_values[i] != nullptr ? event.label_values[i] : "";
      const std::size_t size = i < kMaxFastLabels ? lengths[i] : std::strlen(value);
      const std::string& stored = s.label_values[i];
      if (stored.size() != size || std::memcmp(stored.data(), value, size) != 0) return false;
    }
    return true;
  }

  SeriesState* find(const tsm_metric_event& event, uint64_t hash,
                    const std::size_t* lengths) noexcept {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t at = hash & mask;; at = (at + 1) & mask) {
      const uint32_t slot = slots_[at];
      if (slot == 0) return nullptr;
      SeriesState& s = series_[slot - 1];
      if (same_series(s, event, hash, lengths)) return &s;
    }
  }

  void place(uint32_t index) noexcept {
    const std::size_t mask = slots_.size() - 1;
    std::size_t at = series_[index].hash & mask;
    while (slots_[at] != 0) at = (at + 1) & mask;
    slots_[at] = index + 1;
  }

  const SeriesFamily* family_of(const tsm_metric_info& info) {
    auto found = families_by_info_.find(&info);
    if (found != families_by_info_.end()) return found->second;
    SeriesFamily family;
    family.kind = info.kind;
    family.name = info.name != nullptr ? info.name : "";
    family.help = info.help != nullptr ? info.help : "";
    family.unit = info.unit != nullptr ? info.unit : "";
    for (uint32_t i = 0; i < info.label_count; ++i)
      family.label_names.emplace_back(info.label_names[i] != nullptr ? info.label_names[i] : "");
    if (info.kind == TSM_KIND_HISTOGRAM && info.bucket_bounds != nullptr)
      family.bounds.assign(info.bucket_bounds, info.bucket_bounds + info.bucket_count);
    if (options_.exponential_histograms && has_exponential_layout(info)) {
      ExponentialHistogramOptions options{info.max_buckets, info.max_scale, info.zero_threshold};
      if (exponential_options_error(options).empty()) {  // else: its classic bounds
        family.exponential = true;
        family.exponential_options = options;
      }
    }
    families_.push_back(std::move(family));
    families_by_info_.emplace(&info, &families_.back());
    return &families_.back();
  }

  SeriesState* insert(const tsm_metric_event& event, uint64_t hash) noexcept {
    if (series_.size() >= options_.max_series) return nullptr;
    try {
      if ((series_.size() + 1) * 2 > slots_.size()) {
        slots_.assign(slots_.size() * 2, 0);
        for (uint32_t i = 0; i < series_.size(); ++i) place(i);
      }
      SeriesState s;
      s.family = family_of(*event.info);
      s.info = event.info;
      s.hash = hash;
      for (uint32_t i = 0; i < event.label_count; ++i)
        s.label_values.emplace_back(event.label_values[i] != nullptr ? event.label_values[i] : "");
      s.start_ns = event.timestamp_ns;
      if (s.family->exponential) {
        s.exponential = std::make_unique<ExponentialHistogram>(s.family->exponential_options);
      } else if (s.family->kind == TSM_KIND_HISTOGRAM) {
        s.buckets.assign(s.family->bounds.size() + 1, 0);
      }
      series_.push_back(std::move(s));
      place(static_cast<uint32_t>(series_.size() - 1));
      return &series_.back();
    } catch (...) {  // out of memory: the caller counts the event as refused
      return nullptr;
    }
  }

  /* False when the event has no place in the series (exponential buckets
   * hold no +/-Inf): nothing changed. */
  static bool apply(SeriesState& s, const tsm_metric_event& event) noexcept {
    if (s.exponential) {
      if (s.exponential->observe(event.value, event.weight) !=
          ExponentialHistogram::Observed::kAccepted)
        return false;
      s.last_ns = std::max(s.last_ns, event.timestamp_ns);
      s.count = s.exponential->count();
      s.sum = s.exponential->sum();
      return true;
    }
    s.last_ns = std::max(s.last_ns, event.timestamp_ns);
    switch (event.operation) {
      case TSM_OP_INC:
        s.value += event.value;
        return true;
      case TSM_OP_SET:
        s.value = event.value;
        s.last_ns = event.timestamp_ns;
        return true;
      case TSM_OP_OBSERVE: {
        const std::vector<double>& bounds = s.family->bounds;
        // Bucket i counts bounds[i-1] < v <= bounds[i] (Prometheus' le).
        const std::size_t bucket = static_cast<std::size_t>(
            std::lower_bound(bounds.begin(), bounds.end(), event.value) - bounds.begin());
        s.buckets[bucket] += event.weight;
        s.count += event.weight;
        s.sum += event.value * static_cast<double>(event.weight);
        return true;
      }
      default:
        return true;
    }
  }

  const AggregationOptions options_;
  mutable std::mutex mutex_;        // guards everything below
  std::deque<SeriesState> series_;  // never shrinks: Points point into it
  std::vector<uint32_t> slots_;     // open addressing: index + 1 into series_, 0 = empty
  std::deque<SeriesFamily> families_;
  std::unordered_map<const tsm_metric_info*, const SeriesFamily*> families_by_info_;
  std::size_t touched_ = 0;
  AggregationFigures figures_;
  uint64_t collected_events_ = 0;  // Snapshot::events of the last collect
};

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_AGGREGATION_HPP
