// collector.cpp — family registry and series interning (the slow path of the
// collector API); the hot path is inline in collector.hpp. Lookups of an
// existing series never lock or allocate.
#include "pipeline/collector.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "core/input_excerpt.hpp"
#include "pipeline/sample_name_claims.hpp"
#include "core/series_bound.hpp"
#include "pipeline/view_renames.hpp"

namespace tokenspeed::metrics {

// The handles keep the layout and calling convention engines were built
// with: one pointer (a gauge: two), trivially copied, whatever base they share.
static_assert(sizeof(Counter) == sizeof(void*) && sizeof(Histogram) == sizeof(void*));
static_assert(sizeof(Gauge) == 2 * sizeof(void*));
static_assert(std::is_trivially_copyable_v<Counter> && std::is_trivially_copyable_v<Gauge> &&
              std::is_trivially_copyable_v<Histogram>);

namespace {

// Once per process: more series than a ring slot can number.
void report_series_table_full() noexcept {
  static std::atomic<bool> reported{false};
  if (!reported.exchange(true)) {
    std::fputs(
        "tokenspeed-metrics: more than 16777216 series in this process: later new series "
        "reach the Prometheus output only, not the external outputs\n",
        stderr);
  }
}

}  // namespace

bool SeriesHandle::overflow() const noexcept { return series_ != nullptr && series_->overflow; }

// ----------------------------------------------------------- FamilyCore

FamilyCore::Table::Table(std::size_t capacity)
    : mask(capacity - 1), slots(std::make_unique<std::atomic<MetricSeries*>[]>(capacity)) {}

FamilyCore::FamilyCore(const MetricDefinition& definition, MetricStore& store, EventRouter* router,
                       const ViewedDefinition* viewed)
    : family_(definition), store_(store), router_(router) {
  if (viewed != nullptr) {
    if (router_ != nullptr) output_mask_ = router_->output_mask(viewed->outputs);
    narrows_labels_ = viewed->labels_changed;
    engine_label_count_ = viewed->engine_label_count;
    kept_labels_ = viewed->kept_labels;
    if (viewed->cardinality_limit) {
      overflow_at_ =
          std::min(*viewed->cardinality_limit, store_.series_bound().max_series_per_family);
    }
  }
  tables_.push_back(std::make_unique<Table>(16));
  table_.store(tables_.back().get(), std::memory_order_release);
}

FamilyCore::~FamilyCore() = default;

template <class Values>
std::uint64_t FamilyCore::hash_values(const Values& values) noexcept {
  // FNV-1a over each value, with the length mixed in so ("ab","c") and
  // ("a","bc") differ.
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t k = 0; k < values.size(); ++k) {
    const std::string_view v = values[k];
    for (unsigned char c : v) {
      h ^= c;
      h *= 0x100000001b3ull;
    }
    h ^= v.size() + 0x9e3779b97f4a7c15ull;
    h *= 0x100000001b3ull;
  }
  return h ^ (h >> 29);
}

template <class Values>
MetricSeries* FamilyCore::probe(const Table& table, std::uint64_t hash,
                                const Values& values) noexcept {
  for (std::size_t i = hash & table.mask;; i = (i + 1) & table.mask) {
    MetricSeries* s = table.slots[i].load(std::memory_order_acquire);
    if (s == nullptr) return nullptr;  // the table is never full (load <= 1/2)
    if (s->hash != hash) continue;
    bool equal = true;
    for (std::size_t k = 0; k < values.size(); ++k) {
      if (values[k] != s->label_values[k]) {
        equal = false;
        break;
      }
    }
    if (equal) return s;
  }
}

FamilyCore::SeriesValues FamilyCore::series_values(
    std::span<const std::string_view> values) const noexcept {
  return {values, kept_labels_.data(), kept_labels_.size(), family_.label_names.size()};
}

MetricSeries* FamilyCore::find(std::span<const std::string_view> values) const noexcept {
  if (narrows_labels_) {
    if (values.size() != engine_label_count_) return nullptr;
    const SeriesValues in_place = series_values(values);
    return probe(*table_.load(std::memory_order_acquire), hash_values(in_place), in_place);
  }
  if (values.size() != family_.label_names.size()) return nullptr;
  return probe(*table_.load(std::memory_order_acquire), hash_values(values), values);
}

MetricSeries* FamilyCore::find_or_intern(std::span<const std::string_view> values) {
  if (!narrows_labels_) return intern(values);
  if (values.size() != engine_label_count_) {
    throw std::invalid_argument("metric " + input_excerpt(family_.definition.name) + " takes " +
                                std::to_string(engine_label_count_) + " label values, got " +
                                std::to_string(values.size()));
  }
  // Found where the engine's values are, nothing copied: a copy of the kept
  // ones would be read back before its stores have left the store buffer.
  const SeriesValues in_place = series_values(values);
  if (MetricSeries* s =
          probe(*table_.load(std::memory_order_acquire), hash_values(in_place), in_place)) {
    return s;
  }
  // A new label set, or one past the cap: interning takes a copy (no
  // allocation up to kLocalLabels).
  const std::size_t count = in_place.size();
  if (count > kLocalLabels) {
    std::vector<std::string_view> copy(count);
    for (std::size_t k = 0; k < count; ++k) copy[k] = in_place[k];
    return intern(copy);
  }
  std::array<std::string_view, kLocalLabels> local;
  for (std::size_t k = 0; k < count; ++k) local[k] = in_place[k];
  return intern(std::span<const std::string_view>(local.data(), count));
}

MetricSeries* FamilyCore::intern(std::span<const std::string_view> values) {
  if (values.size() != family_.label_names.size()) {
    throw std::invalid_argument("metric " + input_excerpt(family_.definition.name) + " takes " +
                                std::to_string(family_.label_names.size()) + " label values, got " +
                                std::to_string(values.size()));
  }
  const std::uint64_t hash = hash_values(values);
  if (MetricSeries* s = probe(*table_.load(std::memory_order_acquire), hash, values)) return s;
  if (MetricSeries* overflow = overflow_series_.load(std::memory_order_acquire))
    return overflow_into(overflow);
  if (at_bound_.load(std::memory_order_acquire)) return refuse();

  MutexLock lock(mutex_);
  if (MetricSeries* s = probe(*table_.load(std::memory_order_relaxed), hash, values)) return s;
  // At the cap, the overflow series makes one more: the limit counts it.
  if (overflow_at_ != 0 && series_.size() + 1 >= overflow_at_) return overflow_locked(values);
  if (series_.size() >= store_.series_bound().max_series_per_family) return refuse_locked(values);
  return add_series_locked(values, hash, false);
}

MetricSeries* FamilyCore::add_series_locked(std::span<const std::string_view> values,
                                            std::uint64_t hash, bool overflow) {
  MetricSeries& series = series_.emplace_back();
  try {
    series.overflow = overflow;
    series.family = &family_;
    series.router = router_;
    series.output_mask = output_mask_;
    series.hash = hash;
    series.stamps_sets = stamps_gauge_sets(family_.definition);
    series.label_values.assign(values.begin(), values.end());
    series.label_value_ptrs.reserve(series.label_values.size());
    for (const std::string& v : series.label_values) series.label_value_ptrs.push_back(v.c_str());
    // Grow the table before asking the store, so nothing can fail after the
    // series got its slots (allocate_series is called exactly once per series).
    const Table& table = *table_.load(std::memory_order_relaxed);
    if (series_.size() * 2 > table.mask + 1) {
      auto bigger = std::make_unique<Table>((table.mask + 1) * 2);
      for (MetricSeries& s : series_) {
        if (&s == &series) continue;
        std::size_t i = s.hash & bigger->mask;
        while (bigger->slots[i].load(std::memory_order_relaxed) != nullptr)
          i = (i + 1) & bigger->mask;
        bigger->slots[i].store(&s, std::memory_order_relaxed);
      }
      tables_.push_back(std::move(bigger));  // old tables stay: readers may hold them
      table_.store(tables_.back().get(), std::memory_order_release);
    }
    if (router_ != nullptr) {
      series.number = router_->register_series(series);
      if (series.number == SeriesTable::kNone) [[unlikely]] {
        series.router = nullptr;  // Prometheus still counts it; the outputs cannot
        report_series_table_full();
      }
    }
    series.slots = store_.allocate_series(family_.definition, series.label_values);
    series.unstored_events = store_.unstored_events_slot(series.slots);
  } catch (...) {
    series_.pop_back();
    throw;
  }
  insert_locked(&series);
  return &series;
}

void FamilyCore::insert_locked(MetricSeries* series) {
  const Table& table = *table_.load(std::memory_order_relaxed);
  std::size_t i = series->hash & table.mask;
  while (table.slots[i].load(std::memory_order_relaxed) != nullptr) i = (i + 1) & table.mask;
  table.slots[i].store(series, std::memory_order_release);  // publishes the series
}

double* FamilyCore::self_metric_slot(const MetricDefinition& definition) noexcept {
  try {
    const std::string family[] = {family_.definition.name};
    return store_.allocate_series(definition, family);
  } catch (...) {
    return nullptr;  // the store is full or failing: the line still tells
  }
}

void FamilyCore::write_bound_line(const std::function<std::string()>& make_line) noexcept {
  try {
    write_bound_log_line(store_.series_bound(), make_line());
  } catch (...) {
    // A line that cannot be built or written changes nothing recorded.
  }
}

MetricSeries* FamilyCore::refuse_locked(std::span<const std::string_view> values) noexcept {
  if (!at_bound_.load(std::memory_order_relaxed)) {
    refused_slot_ = self_metric_slot(series_refused_definition());
    write_bound_line([&] {
      return series_refused_line(family_.definition, store_.series_bound().max_series_per_family,
                                 values);
    });
    at_bound_.store(true, std::memory_order_release);
  }
  return refuse();
}

MetricSeries* FamilyCore::overflow_locked(std::span<const std::string_view> values) {
  if (MetricSeries* overflow = overflow_series_.load(std::memory_order_relaxed))
    return overflow_into(overflow);
  std::vector<std::string_view> marked(family_.label_names.size());
  marked.back() = kOverflowValue;
  MetricSeries* overflow = add_series_locked(marked, hash_values(marked), true);
  overflowed_slot_ = self_metric_slot(series_overflowed_definition());
  write_bound_line([&] {
    return series_overflowed_line(family_.definition, overflow_at_,
                                  values.first(values.size() - 1));
  });
  overflow_series_.store(overflow, std::memory_order_release);  // after overflowed_slot_
  return overflow_into(overflow);
}

MetricSeries* FamilyCore::overflow_into(MetricSeries* overflow) noexcept {
  if (overflowed_slot_ != nullptr) add_to_slot(*overflowed_slot_, 1.0);
  return overflow;
}

MetricSeries* FamilyCore::refuse() noexcept {
  if (refused_slot_ != nullptr) add_to_slot(*refused_slot_, 1.0);
  return nullptr;
}

std::size_t FamilyCore::series_count() const {
  MutexLock lock(mutex_);
  return series_.size();
}

// ------------------------------------------------------------ Collector

namespace {

CollectorOptions resolved(CollectorOptions options) noexcept {
  options.snapshot_interval_ticks =
      options.monotonic_now != nullptr
          ? static_cast<std::int64_t>(options.gauge_snapshot_interval.count())
          : event_clock::monotonic_ticks(options.gauge_snapshot_interval);
  return options;
}

}  // namespace

Collector::Collector(MetricStore& store, EventRouter* router, CollectorOptions options)
    : store_(&store), router_(router), options_(resolved(options)) {}

Collector::Collector(std::nullptr_t) : store_(nullptr), router_(nullptr), options_() {}

Collector::~Collector() = default;

// Two families of one process whose samples would share a name make an
// exposition that scrapers reject, so the second is refused where it is
// defined, as prometheus_client refuses a duplicated timeseries.
std::string Collector::clash_locked(const MetricDefinition& checked,
                                    const std::vector<std::string>& engine_labels, Entry*& holder) {
  holder = nullptr;
  const auto found = families_.find(checked.name);
  if (found != families_.end()) {
    holder = &found->second;
    if (*found->second.definition == checked && found->second.engine_labels == engine_labels)
      return "";
    return "metric " + input_excerpt(checked.name) +
           " is already defined differently in this process (kind, help, unit, label names, "
           "buckets and gauge mode must match)";
  }
  // The lookup runs within this call, under mutex_ (which a lambda cannot
  // be shown to hold).
  const auto* families = &families_;
  const MetricDefinition* other =
      find_colliding_family(checked, [families](std::string_view name) -> const MetricDefinition* {
        const auto found = families->find(name);
        return found != families->end() ? found->second.definition.get() : nullptr;
      });
  if (other == nullptr) return "";
  holder = &families_.find(other->name)->second;
  return "metric " + input_excerpt(checked.name) + " (" + std::string(to_string(checked.kind)) +
         ") collides with the " + std::string(to_string(other->kind)) + " " +
         input_excerpt(other->name) + " already defined in this process: both claim the sample " +
         "name " + input_excerpt(shared_claimed_name(checked, *other)) + " (duplicated timeseries)";
}

void Collector::report_view_rename_locked(const MetricDefinition& definition,
                                          const std::string& line) {
  if (!view_renames_reported_.insert(definition.name).second) return;
  if (store_ != nullptr) {
    try {
      const std::string family[] = {definition.name};
      double* slot = store_->allocate_series(view_renames_refused_definition(), family);
      if (slot != nullptr) add_to_slot(*slot, 1);
    } catch (...) {
      // The store is full or failing: the line still tells.
    }
  }
  write_bound_log_line(store_ != nullptr ? store_->series_bound() : SeriesBound{}, line);
}

Collector::Entry& Collector::name_given_away_locked(const MetricDefinition& definition,
                                                    MetricKind kind, const std::string& clash) {
  const auto found = names_given_away_.find(definition.name);
  if (found != names_given_away_.end()) return found->second;
  report_view_rename_locked(definition,
                            name_given_away_line(options_.views->file, definition, clash));
  ViewedDefinition nothing;
  nothing.dropped = true;
  return add_entry_locked(names_given_away_[definition.name], checked_definition(definition),
                          definition, nothing, kind);
}

MetricStore& Collector::family_store(const std::optional<std::vector<std::string>>& outputs) {
  if (reaches_output(outputs, kPrometheusOutput)) return *store_;
  if (!unexposed_store_) {
    unexposed_store_ = std::make_unique<InProcessMetricStore>(store_->series_bound());
  }
  return *unexposed_store_;
}

// Views first, so every process makes the same family of the same definition
// and the conflict checks see the viewed one. A dropped family keeps the
// engine's definition and records nothing.
ViewedDefinition Collector::viewed_definition(const MetricDefinition& definition) const {
  ViewedDefinition viewed;
  if (options_.views) viewed = apply_views(*options_.views, definition);
  if (!options_.views || viewed.dropped) {
    const bool dropped = viewed.dropped;
    viewed = ViewedDefinition{};
    viewed.definition = definition;
    viewed.dropped = dropped;
  }
  return viewed;
}

Collector::Entry& Collector::entry(const MetricDefinition& definition, MetricKind kind) {
  if (definition.kind != kind) {
    throw std::invalid_argument("metric " + input_excerpt(definition.name) + " is a " +
                                std::string(to_string(definition.kind)) + ", not a " +
                                std::string(to_string(kind)));
  }
  ViewedDefinition viewed = viewed_definition(definition);
  MetricDefinition checked = checked_definition(viewed.definition);
  MutexLock lock(mutex_);
  Entry* holder = nullptr;
  std::string clash = clash_locked(checked, definition.label_names, holder);
  if (!clash.empty() && viewed.definition.name != definition.name) {
    // The name a view gives is held: the engine's call must not fail for the
    // operator's file, so the family keeps the engine's name.
    report_view_rename_locked(definition, rename_refused_line(options_.views->file, definition,
                                                              viewed.definition.name, clash));
    viewed.definition.name = definition.name;
    checked = checked_definition(viewed.definition);
    clash = clash_locked(checked, definition.label_names, holder);
  }
  if (!clash.empty() && holder->renamed) return name_given_away_locked(definition, kind, clash);
  if (!clash.empty()) throw std::invalid_argument(clash);
  if (holder != nullptr) return *holder;
  Entry& entry = families_[checked.name];
  entry.renamed = viewed.definition.name != definition.name;
  return add_entry_locked(entry, std::move(checked), definition, viewed, kind);
}

Collector::Entry& Collector::add_entry_locked(Entry& entry, MetricDefinition checked,
                                              const MetricDefinition& definition,
                                              const ViewedDefinition& viewed, MetricKind kind) {
  entry.definition = std::make_unique<MetricDefinition>(std::move(checked));
  entry.engine_labels = definition.label_names;
  if (store_ != nullptr && !viewed.dropped) {
    entry.core = std::make_unique<FamilyCore>(*entry.definition, family_store(viewed.outputs),
                                              router_, &viewed);
  }
  const MetricDefinition& stable = *entry.definition;
  switch (kind) {
    case MetricKind::counter:
      entry.counter.reset(new CounterFamily(stable, entry.core.get(), &options_));
      break;
    case MetricKind::gauge:
      entry.gauge.reset(new GaugeFamily(stable, entry.core.get(), &options_));
      break;
    case MetricKind::histogram:
    case MetricKind::summary:  // observed as a histogram without buckets
      entry.histogram.reset(new HistogramFamily(stable, entry.core.get(), &options_));
      break;
  }
  return entry;
}

CounterFamily& Collector::counter(const MetricDefinition& definition) {
  return *entry(definition, MetricKind::counter).counter;
}
GaugeFamily& Collector::gauge(const MetricDefinition& definition) {
  return *entry(definition, MetricKind::gauge).gauge;
}
HistogramFamily& Collector::histogram(const MetricDefinition& definition) {
  return *entry(definition, MetricKind::histogram).histogram;
}
HistogramFamily& Collector::summary(const MetricDefinition& definition) {
  return *entry(definition, MetricKind::summary).histogram;
}

// ------------------------------------------------------- public handles

void Counter::inc(double delta) const noexcept { record_inc(series_, delta); }

void Gauge::set(double value) const noexcept { record_set(series_, options_, value); }

void Gauge::inc(double delta) const noexcept { record_add(series_, options_, delta); }

namespace {
double read_slot(const MetricSeries* series, std::size_t slot) noexcept {
  if (series == nullptr) return 0.0;
  return std::atomic_ref<double>(series->slots[slot]).load(std::memory_order_relaxed);
}
}  // namespace

double Counter::value() const noexcept { return read_slot(series_, 0); }

double Gauge::value() const noexcept { return read_slot(series_, 0); }

double Histogram::bucket_count(std::size_t bucket) const noexcept {
  if (series_ == nullptr || series_->family->definition.exponential ||
      bucket > series_->family->definition.buckets.size()) {
    return 0.0;
  }
  return read_slot(series_, bucket);
}

double Histogram::sum() const noexcept {
  if (series_ == nullptr) return 0.0;
  if (series_->family->definition.exponential) return read_slot(series_, ExponentialSlot::sum);
  return read_slot(series_, series_->family->definition.buckets.size() + 1);
}

void Histogram::observe(double value, std::uint64_t weight) const noexcept {
  record_observe(series_, value, weight);
}

void Histogram::observe_total(double total, std::uint64_t weight) const noexcept {
  record_observe_total(series_, total, weight);
}

void Histogram::observe_each(std::span<const double> values) const noexcept {
  if (series_ == nullptr) return;
  const MetricDefinition& definition = series_->family->definition;
  const std::vector<double>& bounds = definition.buckets;
  const std::size_t n = bounds.size();
  constexpr std::size_t kLocalBuckets = 64;
  if (definition.exponential || n + 1 > kLocalBuckets) {
    for (const double value : values) record_observe(series_, value, 1);  // counts each
    return;
  }
  if (series_->unstored_events != nullptr) [[unlikely]] {
    add_to_slot(*series_->unstored_events, static_cast<double>(values.size()));
  }
  // Counted here first: one atomic add per bucket touched, not per value.
  std::array<double, kLocalBuckets> counts{};
  double sum = 0.0;
  for (const double value : values) {
    const std::size_t bucket = bucket_index(bounds.data(), n, value);
    counts[bucket] += 1.0;
    sum += value;
  }
  for (std::size_t bucket = 0; bucket <= n; ++bucket) {
    if (counts[bucket] != 0.0) {
      std::atomic_ref<double>(series_->slots[bucket])
          .fetch_add(counts[bucket], std::memory_order_relaxed);
    }
  }
  if (!values.empty()) {
    std::atomic_ref<double>(series_->slots[n + 1]).fetch_add(sum, std::memory_order_relaxed);
  }
  if (EventRouter* router = series_->router) {
    for (const double value : values) {
      router->publish(EventSlot{series_, value, 1, event_clock::raw_now()});
    }
  }
}

template <class Handle>
Handle Family<Handle>::labels(std::span<const std::string_view> values) {
  if (core_ == nullptr) {
    if (values.size() != definition_.label_names.size()) {
      throw std::invalid_argument("metric " + input_excerpt(definition_.name) + " takes " +
                                  std::to_string(definition_.label_names.size()) +
                                  " label values, got " + std::to_string(values.size()));
    }
    return Handle();
  }
  MetricSeries* series = core_->find_or_intern(values);
  if constexpr (std::is_same_v<Handle, Gauge>) {
    return Gauge(series, options_);
  } else {
    return Handle(series);
  }
}

template <class Handle>
std::size_t Family<Handle>::series_count() const {
  return core_ != nullptr ? core_->series_count() : 0;
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

}  // namespace tokenspeed::metrics
