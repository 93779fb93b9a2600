// prometheus_merge.cpp — the per-process to per-node aggregation of a scrape,
// and the choice among conflicting definitions (independent of file order).
// Reads producer files through read_multiprocess_file; never writes to them
// (only a killed writer's file is truncated to its records, by the store).
#include "prometheus/scrape/prometheus_merge.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <tuple>

#include <unistd.h>

#include "config/metric_views.hpp"
#include "pipeline/sample_name_claims.hpp"
#include "core/exponential_slot_reader.hpp"
#include "core/in_process_metric_store.hpp"
#include "core/metric_store.hpp"
#include "prometheus/store/multiprocess_metric_store.hpp"
#include "prometheus/store/producer_file_mappings.hpp"
#include "prometheus/scrape/prometheus_exposition.hpp"

namespace tokenspeed::metrics {
namespace {

// 0xff never occurs in UTF-8 (label values are made valid UTF-8 first), so
// joined keys cannot collide.
constexpr char kSeparator = '\xff';

bool live_mode(GaugeMode mode) noexcept {
  return mode == GaugeMode::livemax || mode == GaugeMode::livesum || mode == GaugeMode::liveall ||
         mode == GaugeMode::livemin || mode == GaugeMode::livemostrecent;
}

bool per_process_mode(GaugeMode mode) noexcept {
  return mode == GaugeMode::all || mode == GaugeMode::liveall;
}

// The same process: a pid reused since is not, when both start times are known.
bool same_process(const ProcessInstance& a, const ProcessInstance& b) noexcept {
  return a.pid == b.pid && (a.start_time == 0 || b.start_time == 0 || a.start_time == b.start_time);
}

// A fixed total order of definitions (the last rule of the ranking): kind,
// help, unit, label names, buckets (by bit pattern: total even for NaN),
// gauge mode, exponential options, then name, so that two different
// definitions never tie.
bool definition_less(const MetricDefinition& a, const MetricDefinition& b) {
  if (a.kind != b.kind) return a.kind < b.kind;
  if (a.help != b.help) return a.help < b.help;
  if (a.unit != b.unit) return a.unit < b.unit;
  if (a.label_names != b.label_names) return a.label_names < b.label_names;
  const auto bits_less = [](double x, double y) {
    return std::bit_cast<std::uint64_t>(x) < std::bit_cast<std::uint64_t>(y);
  };
  if (std::lexicographical_compare(a.buckets.begin(), a.buckets.end(), b.buckets.begin(),
                                   b.buckets.end(), bits_less)) {
    return true;
  }
  if (std::lexicographical_compare(b.buckets.begin(), b.buckets.end(), a.buckets.begin(),
                                   a.buckets.end(), bits_less)) {
    return false;
  }
  if (a.gauge_mode != b.gauge_mode) return a.gauge_mode < b.gauge_mode;
  if (a.exponential != b.exponential) {  // classic first, then by the options
    if (!a.exponential || !b.exponential) return !a.exponential;
    const auto key = [](const ExponentialHistogramOptions& o) {
      return std::tuple(o.max_buckets, o.max_scale, std::bit_cast<std::uint64_t>(o.zero_threshold));
    };
    return key(*a.exponential) < key(*b.exponential);
  }
  return a.name < b.name;
}

constexpr std::size_t kNotInCatalog = std::numeric_limits<std::size_t>::max();
// The owner of a sample name claimed by the merge's own gauges.
constexpr std::size_t kMergeOwn = std::numeric_limits<std::size_t>::max();

// A series of metric's shape: as many slots and label values as it has.
bool fits(const MetricDefinition& metric, std::span<const std::string_view> label_values,
          std::span<const double> slots) {
  return slots.size() == series_slot_count(metric) &&
         label_values.size() == metric.label_names.size();
}

// An exponential series' copy (exponential_slots.hpp) as the kit's data
// point; false when it is no published state.
bool published_point(const MetricDefinition& metric, std::span<const double> slots,
                     kit::ExponentialPoint& point) {
  // A copy a reader could not make consistent keeps an odd sequence.
  if (std::fmod(slots[ExponentialSlot::sequence], 2.0) != 0.0) return false;
  return exponential_point(slots, *metric.exponential, point);
}

// Label values as exposed: those that are not UTF-8 get U+FFFD in place of
// each invalid byte. The series are merged as exposed, so that two values
// that differ only there never become two series with the same labels.
// replaced and views hold the replacements when there are any.
std::span<const std::string_view> exposed_label_values(
    std::span<const std::string_view> label_values, std::vector<std::string>& replaced,
    std::vector<std::string_view>& views) {
  if (std::all_of(label_values.begin(), label_values.end(), is_valid_utf8)) return label_values;
  replaced.reserve(label_values.size());
  for (std::string_view each : label_values) replaced.push_back(to_valid_utf8(each));
  views.assign(replaced.begin(), replaced.end());
  return views;
}

// Merges an exponential series' point into its histogram, and its refused
// and interrupted observations into the slots that count them; false when
// the histograms do not merge.
bool merge_exponential(kit::ExponentialHistogram& histogram, std::vector<double>& counted,
                       const kit::ExponentialPoint& point, std::span<const double> slots) {
  // Of one definition, so of one zero threshold: the merge fails only for
  // a union past the lowest scale, which max_buckets >= 4 rules out.
  if (histogram.merge(point) != kit::ExponentialHistogram::Merged::kMerged) return false;
  counted[0] += slots[ExponentialSlot::not_finite];
  if (slots[ExponentialSlot::journal] == static_cast<double>(ExponentialJournal::repaired))
    counted[1] += 1;  // at most one observation was in flight
  return true;
}

// Adds another process's slots of a counter, histogram or gauge series to
// the merged ones, as the metric's kind and gauge mode say.
void merge_slots(const MetricDefinition& metric, std::vector<double>& into,
                 std::span<const double> slots) {
  if (metric.kind != MetricKind::gauge) {
    for (std::size_t i = 0; i < into.size(); ++i) into[i] += slots[i];
    return;
  }
  switch (metric.gauge_mode) {
    case GaugeMode::livemax:
    case GaugeMode::max:
      into[0] = std::max(into[0], slots[0]);
      break;
    case GaugeMode::livemin:
    case GaugeMode::min:
      into[0] = std::min(into[0], slots[0]);
      break;
    case GaugeMode::mostrecent:
    case GaugeMode::livemostrecent:
      // The later set wins; on a tie, the first one read (files in name order).
      if (slots[1] > into[1]) into.assign(slots.begin(), slots.end());
      break;
    case GaugeMode::livesum:
    case GaugeMode::sum:
    case GaugeMode::all:  // per process: never two of one key
    case GaugeMode::liveall:
      into[0] += slots[0];
      break;
  }
}

// A writer killed before it could close its file: its reserved space goes
// back (its records stay, and stay on /metrics).
void reclaim_if_killed(const std::filesystem::path& path, const MultiprocessFileInfo& info,
                       ProducerFileMappings& mappings) {
  if (info.live || info.closed) return;
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  if (const auto mapping = mappings.map(path);
      mapping && mapping->size() > (info.used + page - 1) / page * page) {
    reclaim_exited_writer_file(path);
  }
}

}  // namespace

PrometheusMerge::PrometheusMerge(const std::vector<const MetricDefinition*>& catalog)
    : self_(current_process_instance()) {
  candidates_.reserve(catalog.size());
  for (std::size_t i = 0; i < catalog.size(); ++i) {
    const MetricDefinition* metric = catalog[i];
    if (metric == nullptr || by_name_.contains(metric->name)) continue;
    by_name_[metric->name].push_back(candidates_.size());
    candidates_.push_back(Candidate{metric, nullptr, i, false, {}, {}, {}, 0});
  }
}

std::size_t PrometheusMerge::candidate_for(const MetricDefinition& metric) {
  const auto found = by_name_.find(metric.name);
  if (found != by_name_.end()) {
    for (const std::size_t index : found->second) {
      const Candidate& candidate = candidates_[index];
      if (candidate.metric == &metric || *candidate.metric == metric) return index;
    }
  }
  auto learned = std::make_shared<const MetricDefinition>(metric);
  const std::size_t index = candidates_.size();
  by_name_[learned->name].push_back(index);
  candidates_.push_back(Candidate{learned.get(), learned, kNotInCatalog, false, {}, {}, {}, 0});
  return index;
}

void PrometheusMerge::note_holder(Candidate& candidate, std::size_t holder, bool own) {
  candidate.own = candidate.own || own;
  if (!candidate.holders.empty() && candidate.holders.back() == holder) return;
  if (std::find(candidate.holders.begin(), candidate.holders.end(), holder) ==
      candidate.holders.end()) {
    candidate.holders.push_back(holder);
  }
}

std::size_t PrometheusMerge::pid_holder(const ProcessInstance& process) {
  if (!holder_names_.empty() && process.pid == pid_holder_pid_) return pid_holder_;
  const std::string name = "pid " + std::to_string(process.pid);
  const auto found = std::find(holder_names_.begin(), holder_names_.end(), name);
  pid_holder_ = static_cast<std::size_t>(found - holder_names_.begin());
  if (found == holder_names_.end()) holder_names_.push_back(name);
  pid_holder_pid_ = process.pid;
  return pid_holder_;
}

void PrometheusMerge::add_series(const MetricDefinition& metric,
                                 std::span<const std::string_view> label_values,
                                 std::span<const double> slots, const ProcessInstance& process,
                                 bool live) {
  const std::size_t index = candidate_for(metric);
  const std::size_t holder = pid_holder(process);
  Candidate& candidate = candidates_[index];
  note_holder(candidate, holder, same_process(process, self_));
  add_to_candidate(candidate, label_values, slots, process, live);
}

void PrometheusMerge::add_to_candidate(Candidate& candidate,
                                       std::span<const std::string_view> label_values,
                                       std::span<const double> slots,
                                       const ProcessInstance& process, bool live) {
  const MetricDefinition& metric = *candidate.metric;
  kit::ExponentialPoint point;  // an exponential series' slots as a data point
  if (!fits(metric, label_values, slots) ||
      (metric.exponential && !published_point(metric, slots, point))) {
    ++figures_.mismatched_series;
    return;
  }
  const bool gauge = metric.kind == MetricKind::gauge;
  if (gauge && !live && live_mode(metric.gauge_mode)) return;
  const bool per_process = gauge && per_process_mode(metric.gauge_mode);
  const std::string pid = per_process ? std::to_string(process.pid) : std::string();

  std::vector<std::string> replaced;
  std::vector<std::string_view> views;
  label_values = exposed_label_values(label_values, replaced, views);

  bool added = false;
  const std::size_t found = series_of(candidate, label_values, slots, pid, added);
  candidate.next = found + 1;
  Accumulated& series = candidate.series[found];
  if (metric.exponential) {
    if (!merge_exponential(*series.exponential, series.slots, point, slots))
      ++figures_.mismatched_series;
  } else if (!added) {
    merge_slots(metric, series.slots, slots);
  }
}

std::size_t PrometheusMerge::series_of(Candidate& candidate,
                                       std::span<const std::string_view> label_values,
                                       std::span<const double> slots, std::string_view pid,
                                       bool& added) {
  added = false;
  // The series after the last one matched, when its label values are these
  // (a per-process gauge's key holds the pid too: always looked up). Label
  // values identify a series, so this is the series the index would give.
  const std::size_t next = candidate.next;
  if (pid.empty() && match_in_order_ && next < candidate.series.size() &&
      std::equal(label_values.begin(), label_values.end(),
                 candidate.series[next].label_values.begin(),
                 candidate.series[next].label_values.end())) {
    return next;
  }
  key_.clear();
  for (std::string_view value : label_values) {
    key_ += value;
    key_.push_back(kSeparator);
  }
  key_ += pid;
  const auto [where, inserted] = candidate.index.try_emplace(key_, candidate.series.size());
  if (!inserted) return where->second;
  candidate.series.push_back(new_series(*candidate.metric, label_values, slots, pid));
  added = true;
  return candidate.series.size() - 1;
}

PrometheusMerge::Accumulated PrometheusMerge::new_series(
    const MetricDefinition& metric, std::span<const std::string_view> label_values,
    std::span<const double> slots, std::string_view pid) {
  Accumulated series;
  series.label_values.assign(label_values.begin(), label_values.end());
  if (!pid.empty()) series.label_values.emplace_back(pid);
  if (metric.exponential) {
    series.slots.assign(2, 0.0);  // observations refused, then interrupted
    series.exponential =
        std::make_shared<kit::ExponentialHistogram>(kit::ExponentialHistogramOptions{
            metric.exponential->max_buckets, metric.exponential->max_scale,
            metric.exponential->zero_threshold});
  } else {
    series.slots.assign(slots.begin(), slots.end());
  }
  return series;
}

void PrometheusMerge::add_directory(const std::filesystem::path& dir,
                                    ProducerFileMappings* mappings) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : it) {
    if (entry.path().extension() == ".db") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& path : files) add_file(path, mappings);
  if (mappings != nullptr) mappings->keep_only(files);
}

void PrometheusMerge::add_file(const std::filesystem::path& path, ProducerFileMappings* mappings) {
  MultiprocessFileInfo info;
  bool own = false;
  const std::size_t holder = holder_names_.size();
  holder_names_.push_back(path.filename().string());
  // This file's definitions: its series belong to them (a series of a
  // name the file does not define falls back to the catalog's).
  std::unordered_map<std::string_view, std::size_t> defined;
  const auto on_file = [&](const MultiprocessFileInfo& file) {
    info = file;
    own = same_process(file.writer, self_);
  };
  const auto on_series = [&](const MultiprocessSeriesView& view) {
    std::size_t index = kNotInCatalog;
    if (const auto found = defined.find(view.metric_name); found != defined.end()) {
      index = found->second;
    } else if (const auto named = by_name_.find(view.metric_name); named != by_name_.end()) {
      for (const std::size_t each : named->second) {
        if (candidates_[each].catalog_position != kNotInCatalog) index = each;
      }
    }
    if (index == kNotInCatalog) {
      ++figures_.unknown_series;
      return;
    }
    add_to_candidate(candidates_[index], view.label_values, view.slots, info.writer, info.live);
  };
  const auto on_definition = [&](const MetricDefinition& definition) {
    const std::size_t index = candidate_for(definition);
    note_holder(candidates_[index], holder, own);
    defined[candidates_[index].metric->name] = index;
  };
  bool read = false;
  if (mappings == nullptr) {
    read = read_multiprocess_file(path, on_file, on_series, on_definition);
  } else if (const auto mapping = mappings->map(path)) {
    read = read_multiprocess_mapping(path, {mapping->data(), mapping->size()}, on_file, on_series,
                                     on_definition);
  }
  if (!read) return;
  ++figures_.files;
  if (info.live) ++figures_.live_files;
  if (mappings != nullptr) reclaim_if_killed(path, info, *mappings);
}

void PrometheusMerge::add_store(const InProcessMetricStore& store) {
  const ProcessInstance self = current_process_instance();
  std::vector<std::string_view> labels;
  std::vector<double> slots;
  store.for_each_series([&](const InProcessMetricStore::Series& series) {
    labels.assign(series.label_values.begin(), series.label_values.end());
    slots.resize(series_slot_count(*series.metric));
    if (series.metric->exponential) {
      if (copy_exponential_slots(series.slots, slots) == ExponentialCopy::unsettled)
        slots[ExponentialSlot::sequence] = 1;
    } else {
      for (std::size_t i = 0; i < slots.size(); ++i) {
        slots[i] = std::atomic_ref<double>(series.slots[i]).load(std::memory_order_relaxed);
      }
    }
    add_series(*series.metric, labels, slots, self, true);
  });
}

bool PrometheusMerge::ranks_before(const Candidate& a, const Candidate& b) const {
  const bool a_catalog = a.catalog_position != kNotInCatalog;
  const bool b_catalog = b.catalog_position != kNotInCatalog;
  if (a_catalog != b_catalog) return a_catalog;
  if (a_catalog) return a.catalog_position < b.catalog_position;
  if (a.own != b.own) return a.own;
  if (a.holders.size() != b.holders.size()) return a.holders.size() > b.holders.size();
  // Of two colliding names, the family the other is named after (counter
  // h:c before gauge h:c_total): what a reader of the exposition expects.
  if (a.metric->name.size() != b.metric->name.size()) {
    return a.metric->name.size() < b.metric->name.size();
  }
  return definition_less(*a.metric, *b.metric);
}

HeldDefinition PrometheusMerge::held(const Candidate& candidate) const {
  HeldDefinition out;
  out.definition = candidate.learned ? candidate.learned
                                     : std::make_shared<const MetricDefinition>(*candidate.metric);
  for (const std::size_t holder : candidate.holders) out.holders.push_back(holder_names_[holder]);
  std::sort(out.holders.begin(), out.holders.end());
  out.catalog = candidate.catalog_position != kNotInCatalog;
  out.series = candidate.series.size();
  return out;
}

std::vector<MergedFamily> PrometheusMerge::take_families() {
  std::vector<std::size_t> exposed = claim_sample_names(ranked_names());
  sort_in_exposition_order(exposed);
  std::vector<MergedFamily> out;
  out.reserve(exposed.size() + 3);
  for (const std::size_t index : exposed) {
    Candidate& family = candidates_[index];
    if (!family.series.empty()) out.push_back(take_family(family));
  }
  for (MergedFamily& own : not_finite_families(out)) out.push_back(std::move(own));
  for (MergedFamily& own : interrupted_families(out)) out.push_back(std::move(own));
  for (MergedFamily& own : merge_conflict_families(conflicts_)) out.push_back(std::move(own));
  return out;
}

std::vector<std::vector<std::size_t>> PrometheusMerge::ranked_names() {
  std::vector<std::vector<std::size_t>> names;
  names.reserve(by_name_.size());
  const auto before = [this](std::size_t a, std::size_t b) {
    return ranks_before(candidates_[a], candidates_[b]);
  };
  for (auto& [name, ranked] : by_name_) {
    std::sort(ranked.begin(), ranked.end(), before);
    names.push_back(std::move(ranked));
  }
  by_name_.clear();
  std::sort(names.begin(), names.end(),
            [&](const auto& a, const auto& b) { return before(a.front(), b.front()); });
  return names;
}

std::vector<std::size_t> PrometheusMerge::claim_sample_names(
    const std::vector<std::vector<std::size_t>>& names) {
  std::unordered_map<std::string, std::size_t> claimed;  // sample name -> winning candidate
  for (const MetricDefinition& own : merge_self_metric_definitions()) {
    for (std::string& name : claimed_names(own)) claimed.emplace(std::move(name), kMergeOwn);
  }
  std::vector<std::size_t> exposed;
  conflicts_.clear();
  for (const std::vector<std::size_t>& ranked : names) {
    const Candidate& best = candidates_[ranked.front()];
    std::vector<std::string> wanted = claimed_names(*best.metric);
    const auto taken = std::find_if(wanted.begin(), wanted.end(), [&](const std::string& name) {
      return claimed.contains(name);
    });
    MergeConflict conflict;
    std::size_t first_left_out = 1;
    if (taken == wanted.end()) {
      for (std::string& name : wanted) claimed.emplace(std::move(name), ranked.front());
      exposed.push_back(ranked.front());
      if (ranked.size() > 1) conflict.exposed = held(best);
    } else {
      first_left_out = 0;
      conflict.shared_name = *taken;
      conflict.exposed = claimant(claimed.at(*taken), *best.metric);
    }
    if (first_left_out < ranked.size())
      record_conflict(std::move(conflict), ranked, first_left_out);
  }
  std::sort(conflicts_.begin(), conflicts_.end(),
            [](const MergeConflict& a, const MergeConflict& b) { return a.family < b.family; });
  return exposed;
}

HeldDefinition PrometheusMerge::claimant(std::size_t owner, const MetricDefinition& metric) const {
  if (owner != kMergeOwn) return held(candidates_[owner]);
  const MetricDefinition& own = *std::find_if(
      merge_self_metric_definitions().begin(), merge_self_metric_definitions().end(),
      [&](const MetricDefinition& each) { return !shared_claimed_name(each, metric).empty(); });
  HeldDefinition out;
  out.definition = std::make_shared<const MetricDefinition>(own);
  out.holders = {"the host's merge figures"};
  return out;
}

void PrometheusMerge::record_conflict(MergeConflict conflict,
                                      const std::vector<std::size_t>& ranked,
                                      std::size_t first_left_out) {
  conflict.family = candidates_[ranked.front()].metric->name;
  for (std::size_t i = first_left_out; i < ranked.size(); ++i) {
    conflict.left_out.push_back(held(candidates_[ranked[i]]));
    conflict.left_out_series += candidates_[ranked[i]].series.size();
  }
  figures_.conflicting_definitions += conflict.left_out.size();
  figures_.conflicting_series += conflict.left_out_series;
  conflicts_.push_back(std::move(conflict));
}

// The catalog's families in its order, then the others by name: the same
// exposition whichever process happened to define a family first.
void PrometheusMerge::sort_in_exposition_order(std::vector<std::size_t>& exposed) const {
  std::sort(exposed.begin(), exposed.end(), [this](std::size_t a, std::size_t b) {
    const Candidate& x = candidates_[a];
    const Candidate& y = candidates_[b];
    if (x.catalog_position != y.catalog_position) return x.catalog_position < y.catalog_position;
    return x.metric->name < y.metric->name;
  });
}

MergedFamily PrometheusMerge::take_family(Candidate& family) {
  std::sort(
      family.series.begin(), family.series.end(),
      [](const Accumulated& a, const Accumulated& b) { return a.label_values < b.label_values; });
  MergedFamily merged;
  merged.metric = family.metric;
  merged.learned = family.learned;
  merged.series.reserve(family.series.size());
  const auto& label_names = family.metric->label_names;
  for (Accumulated& series : family.series) {
    MergedSeries item;
    item.labels.reserve(series.label_values.size());
    for (std::size_t i = 0; i < series.label_values.size(); ++i) {
      // A capped family's ordinary series keep the labels they had uncapped:
      // an empty overflow label is none (Prometheus reads it so anyway).
      if (i < label_names.size() && label_names[i] == kOverflowLabel &&
          series.label_values[i].empty()) {
        continue;
      }
      item.labels.emplace_back(i < label_names.size() ? label_names[i] : std::string("pid"),
                               std::move(series.label_values[i]));
    }
    item.slots = std::move(series.slots);
    item.exponential = std::move(series.exponential);
    merged.series.push_back(std::move(item));
  }
  // Freed family by family, the rest with the merge: freeing every
  // candidate at once here made the render that follows several times
  // slower (prometheus_bench, BM_ScrapeMergeRender: page faults while the
  // exposition string grows).
  family.series.clear();
  family.index.clear();
  return merged;
}

std::vector<MergedFamily> merge_scrape(const ScrapeSources& sources, MergeFigures* figures) {
  PrometheusMerge merge(sources.catalog);
  merge.set_match_in_order(sources.match_in_order);
  if (!sources.run_dir.empty()) merge.add_directory(sources.run_dir, sources.file_mappings);
  if (sources.local_store != nullptr) merge.add_store(*sources.local_store);
  if (sources.extra) sources.extra(merge);
  std::vector<MergedFamily> families = merge.take_families();
  if (figures != nullptr) *figures = merge.figures();
  MergeConflictLog& log =
      sources.conflict_log != nullptr ? *sources.conflict_log : MergeConflictLog::process_log();
  log.report(merge.conflicts());
  return families;
}

std::vector<const MetricDefinition*> catalog_pointers(
    const std::vector<MetricDefinition>& catalog) {
  std::vector<const MetricDefinition*> out;
  out.reserve(catalog.size());
  for (const MetricDefinition& metric : catalog) out.push_back(&metric);
  return out;
}

}  // namespace tokenspeed::metrics
