// prometheus_merge.cpp — the per-process to per-node aggregation of a scrape.
// Reads producer files through read_multiprocess_file; never writes to them.
#include "prometheus/prometheus_merge.hpp"

#include <algorithm>
#include <atomic>

#include "prometheus/in_process_metric_store.hpp"
#include "prometheus/metric_store.hpp"
#include "prometheus/multiprocess_metric_store.hpp"
#include "prometheus/prometheus_exposition.hpp"

namespace tokenspeed::metrics {
namespace {

// 0xff never occurs in UTF-8 (label values are made valid UTF-8 first), so
// joined keys cannot collide.
constexpr char kSeparator = '\xff';

bool live_mode(GaugeMode mode) noexcept {
  return mode == GaugeMode::livemax || mode == GaugeMode::livesum || mode == GaugeMode::liveall;
}

bool per_process_mode(GaugeMode mode) noexcept {
  return mode == GaugeMode::all || mode == GaugeMode::liveall;
}

}  // namespace

PrometheusMerge::PrometheusMerge(const std::vector<const MetricDefinition*>& catalog) {
  families_.reserve(catalog.size());
  for (const MetricDefinition* metric : catalog) {
    if (metric == nullptr || by_name_.contains(metric->name)) continue;
    by_name_.emplace(metric->name, families_.size());
    families_.push_back(Family{metric, nullptr, {}, {}});
  }
}

bool PrometheusMerge::learn(const MetricDefinition& metric) {
  if (const auto found = by_name_.find(metric.name); found != by_name_.end()) {
    if (*families_[found->second].metric == metric) return true;
    ++stats_.conflicting_definitions;
    return false;
  }
  auto learned = std::make_shared<const MetricDefinition>(metric);
  by_name_.emplace(learned->name, families_.size());
  families_.push_back(Family{learned.get(), learned, {}, {}});
  return true;
}

void PrometheusMerge::add_series(const MetricDefinition& metric,
                                 std::span<const std::string_view> label_values,
                                 std::span<const double> slots, const ProcessIdentity& process,
                                 bool live) {
  if (!learn(metric)) {
    ++stats_.mismatched_series;
    return;
  }
  add_to_family(families_[by_name_.at(metric.name)], label_values, slots, process, live);
}

void PrometheusMerge::add_to_family(Family& family, std::span<const std::string_view> label_values,
                                    std::span<const double> slots, const ProcessIdentity& process,
                                    bool live) {
  const MetricDefinition& metric = *family.metric;
  if (slots.size() != series_slot_count(metric) ||
      label_values.size() != metric.label_names.size()) {
    ++stats_.mismatched_series;
    return;
  }
  const bool gauge = metric.kind == MetricKind::gauge;
  if (gauge && !live && live_mode(metric.gauge_mode)) return;
  const bool per_process = gauge && per_process_mode(metric.gauge_mode);
  const std::string pid = per_process ? std::to_string(process.pid) : std::string();

  // Label values that are not UTF-8 are exposed with U+FFFD in place of
  // each invalid byte: the series are merged as exposed, so that two values
  // that differ only there never become two series with the same labels.
  std::vector<std::string> replaced;
  std::vector<std::string_view> valid_values;
  for (std::string_view value : label_values) {
    if (!is_valid_utf8(value)) {
      replaced.reserve(label_values.size());
      for (std::string_view each : label_values) replaced.push_back(to_valid_utf8(each));
      valid_values.assign(replaced.begin(), replaced.end());
      label_values = valid_values;
      break;
    }
  }

  key_.clear();
  for (std::string_view value : label_values) {
    key_ += value;
    key_.push_back(kSeparator);
  }
  if (per_process) key_ += pid;

  auto [where, inserted] = family.index.try_emplace(key_, family.series.size());
  if (inserted) {
    Accumulated series;
    series.label_values.assign(label_values.begin(), label_values.end());
    if (per_process) series.label_values.push_back(pid);
    series.slots.assign(slots.begin(), slots.end());
    family.series.push_back(std::move(series));
    return;
  }
  std::vector<double>& into = family.series[where->second].slots;
  if (gauge && (metric.gauge_mode == GaugeMode::livemax || metric.gauge_mode == GaugeMode::max)) {
    into[0] = std::max(into[0], slots[0]);
  } else if (gauge && metric.gauge_mode == GaugeMode::min) {
    into[0] = std::min(into[0], slots[0]);
  } else {
    for (std::size_t i = 0; i < into.size(); ++i) into[i] += slots[i];
  }
}

void PrometheusMerge::add_directory(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : it) {
    if (entry.path().extension() == ".db") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    MultiprocessFileInfo info;
    // Families this file defines differently from an earlier process: its
    // series of them are left out rather than mixed into another family.
    std::vector<std::string> conflicting;
    const bool read = read_multiprocess_file(
        path, [&info](const MultiprocessFileInfo& file) { info = file; },
        [&](const MultiprocessSeriesView& view) {
          const auto found = by_name_.find(view.metric_name);
          if (found == by_name_.end()) {
            ++stats_.unknown_series;
            return;
          }
          if (std::find(conflicting.begin(), conflicting.end(), view.metric_name) !=
              conflicting.end()) {
            ++stats_.mismatched_series;
            return;
          }
          add_to_family(families_[found->second], view.label_values, view.slots, info.writer,
                        info.live);
        },
        [&](const MetricDefinition& definition) {
          if (!learn(definition)) conflicting.push_back(definition.name);
        });
    if (!read) continue;
    ++stats_.files;
    if (info.live) ++stats_.live_files;
  }
}

void PrometheusMerge::add_store(const InProcessMetricStore& store) {
  const ProcessIdentity self = current_process_identity();
  std::vector<std::string_view> labels;
  std::vector<double> slots;
  store.for_each_series([&](const InProcessMetricStore::Series& series) {
    labels.assign(series.label_values.begin(), series.label_values.end());
    slots.resize(series_slot_count(*series.metric));
    for (std::size_t i = 0; i < slots.size(); ++i) {
      slots[i] = std::atomic_ref<double>(series.slots[i]).load(std::memory_order_relaxed);
    }
    add_series(*series.metric, labels, slots, self, true);
  });
}

std::vector<MergedFamily> PrometheusMerge::take_families() {
  std::vector<MergedFamily> out;
  out.reserve(families_.size());
  // Learned families follow the catalog's, by name: the same exposition
  // whichever process happened to define a family first.
  std::stable_sort(families_.begin(), families_.end(), [](const Family& a, const Family& b) {
    if (!a.learned || !b.learned) return !a.learned && b.learned;
    return a.metric->name < b.metric->name;
  });
  by_name_.clear();
  for (Family& family : families_) {
    if (family.series.empty()) continue;
    std::sort(
        family.series.begin(), family.series.end(),
        [](const Accumulated& a, const Accumulated& b) { return a.label_values < b.label_values; });
    MergedFamily merged;
    merged.metric = family.metric;
    merged.learned = family.learned;
    merged.series.reserve(family.series.size());
    const auto& names = family.metric->label_names;
    for (Accumulated& series : family.series) {
      MergedSeries item;
      item.labels.reserve(series.label_values.size());
      for (std::size_t i = 0; i < series.label_values.size(); ++i) {
        item.labels.emplace_back(i < names.size() ? names[i] : std::string("pid"),
                                 std::move(series.label_values[i]));
      }
      item.slots = std::move(series.slots);
      merged.series.push_back(std::move(item));
    }
    out.push_back(std::move(merged));
    family.series.clear();
    family.index.clear();
  }
  return out;
}

std::vector<MergedFamily> merge_scrape(const ScrapeSources& sources, MergeStats* stats) {
  PrometheusMerge merge(sources.catalog);
  if (!sources.run_dir.empty()) merge.add_directory(sources.run_dir);
  if (sources.local_store != nullptr) merge.add_store(*sources.local_store);
  if (sources.extra) sources.extra(merge);
  if (stats != nullptr) *stats = merge.stats();
  return merge.take_families();
}

std::vector<const MetricDefinition*> catalog_pointers(
    const std::vector<MetricDefinition>& catalog) {
  std::vector<const MetricDefinition*> out;
  out.reserve(catalog.size());
  for (const MetricDefinition& metric : catalog) out.push_back(&metric);
  return out;
}

}  // namespace tokenspeed::metrics
