// merge_conflicts.cpp — conflict descriptions, the once-per-family log and the
// merge's own figures. Scrape time only; never touches a producer file.
#include "prometheus/scrape/merge_conflicts.hpp"

#include <algorithm>

#include "core/input_excerpt.hpp"
#include "pipeline/sample_name_claims.hpp"
#include "prometheus/scrape/prometheus_exposition.hpp"
#include "prometheus/scrape/prometheus_merge.hpp"

namespace tokenspeed::metrics {
namespace {

// What one line shows at most of each list before it says how many more.
constexpr std::size_t kListedItems = 8;
constexpr std::size_t kHelpBytes = 80;

std::vector<MetricDefinition> build_definitions() {
  return {
      MetricDefinition{"tokenspeed_metrics_merge_conflicting_definitions",
                       MetricKind::gauge,
                       "Definitions of a family that /metrics left out at the last scrape: "
                       "processes define the name differently, or its sample names collide with "
                       "another family's.",
                       "definitions",
                       {"family"},
                       {},
                       GaugeMode::livesum},
      MetricDefinition{"tokenspeed_metrics_merge_series_left_out",
                       MetricKind::gauge,
                       "Series of those left-out definitions, absent from the last scrape.",
                       "series",
                       {"family"},
                       {},
                       GaugeMode::livesum},
      MetricDefinition{"tokenspeed_metrics_observations_not_finite",
                       MetricKind::counter,
                       "Observations of NaN, +Inf or -Inf into an exponential histogram: in no "
                       "bucket, its count or its sum.",
                       "observations",
                       {"family"},
                       {},
                       GaugeMode::livesum},
      // A gauge: a stopped, live process that goes on takes its series out
      // of it again, so it can fall.
      MetricDefinition{"tokenspeed_metrics_observations_interrupted",
                       MetricKind::gauge,
                       "Exponential histogram series whose process stopped inside an observe "
                       "(killed, or stopped longer than a scrape waits), at this scrape: each "
                       "shown as it was before, at most one observation in flight missing.",
                       "series",
                       {"family"},
                       {},
                       GaugeMode::livesum},
  };
}

template <class Item, class Format>
std::string listed(const std::vector<Item>& items, Format format) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < kListedItems; ++i) {
    if (i > 0) out += ", ";
    out += format(items[i]);
  }
  if (items.size() > kListedItems) {
    out += ", and " + std::to_string(items.size() - kListedItems) + " more";
  }
  return out;
}

std::string describe_definition(const HeldDefinition& held) {
  const MetricDefinition& metric = *held.definition;
  std::string out = std::string(to_string(metric.kind)) + " " + input_excerpt(metric.name);
  out += " (help \"" + input_excerpt(metric.help, kHelpBytes) + "\"";
  if (!metric.unit.empty()) out += ", unit " + input_excerpt(metric.unit, kHelpBytes);
  out += ", labels [" +
         listed(metric.label_names,
                [](const std::string& label) { return input_excerpt(label, 40); }) +
         "]";
  if (metric.kind == MetricKind::histogram) {
    out += ", buckets [" +
           listed(metric.buckets, [](double bound) { return format_prometheus_value(bound); }) +
           "]";
    if (metric.exponential) {
      out += ", exponential buckets (max_buckets " +
             std::to_string(metric.exponential->max_buckets) + ", max_scale " +
             std::to_string(metric.exponential->max_scale) + ", zero_threshold " +
             format_prometheus_value(metric.exponential->zero_threshold) + ")";
    }
  }
  if (metric.kind == MetricKind::gauge)
    out += ", mode " + std::string(to_string(metric.gauge_mode));
  out += ")";
  std::vector<std::string> holders = held.holders;
  if (held.catalog) holders.insert(holders.begin(), "the launcher's catalog");
  out += holders.empty() ? std::string(" of no process")
                         : " of " + listed(holders, [](const std::string& holder) {
                             return input_excerpt(holder, kHelpBytes);
                           });
  return out;
}

}  // namespace

const std::vector<MetricDefinition>& merge_self_metric_definitions() {
  static const std::vector<MetricDefinition> definitions = build_definitions();
  return definitions;
}

std::vector<MergedFamily> merge_conflict_families(const std::vector<MergeConflict>& conflicts) {
  if (conflicts.empty()) return {};
  const auto& definitions = merge_self_metric_definitions();
  MergedFamily definitions_left_out{&definitions[0], {}, nullptr};
  MergedFamily series_left_out{&definitions[1], {}, nullptr};
  for (const MergeConflict& conflict : conflicts) {
    definitions_left_out.series.push_back(MergedSeries{
        {{"family", conflict.family}}, {static_cast<double>(conflict.left_out.size())}});
    series_left_out.series.push_back(MergedSeries{{{"family", conflict.family}},
                                                  {static_cast<double>(conflict.left_out_series)}});
  }
  std::vector<MergedFamily> out;
  out.push_back(std::move(definitions_left_out));
  out.push_back(std::move(series_left_out));
  return out;
}

namespace {

// One series per exponential family whose merged series' slot `slot` sum
// above 0 (prometheus_merge.hpp), of the merge's own definition `own`.
std::vector<MergedFamily> exponential_count_family(const std::vector<MergedFamily>& families,
                                                   std::size_t slot, std::size_t own) {
  MergedFamily counted{&merge_self_metric_definitions()[own], {}, nullptr};
  for (const MergedFamily& family : families) {
    if (!family.metric->exponential) continue;
    double count = 0;
    for (const MergedSeries& series : family.series) count += series.slots.at(slot);
    if (count > 0)
      counted.series.push_back(MergedSeries{{{"family", family.metric->name}}, {count}});
  }
  if (counted.series.empty()) return {};
  std::vector<MergedFamily> out;
  out.push_back(std::move(counted));
  return out;
}

}  // namespace

std::vector<MergedFamily> not_finite_families(const std::vector<MergedFamily>& families) {
  return exponential_count_family(families, 0, 2);
}

std::vector<MergedFamily> interrupted_families(const std::vector<MergedFamily>& families) {
  return exponential_count_family(families, 1, 3);
}

std::string describe_merge_conflict(const MergeConflict& conflict) {
  std::string line = "tokenspeed-metrics: warning: metric " + input_excerpt(conflict.family);
  if (conflict.shared_name.empty()) {
    line += " is defined differently by two or more processes";
  } else {
    line += " collides with " + input_excerpt(conflict.exposed.definition->name) +
            ": both claim the sample name " + input_excerpt(conflict.shared_name);
  }
  line += "; /metrics shows the " + describe_definition(conflict.exposed) +
          "; left out: " + listed(conflict.left_out, describe_definition) + " (" +
          std::to_string(conflict.left_out_series) +
          " series; counted in tokenspeed_metrics_merge_series_left_out)";
  return line;
}

MergeConflictLog::MergeConflictLog(LogWriter writer) : writer_(std::move(writer)) {}

void MergeConflictLog::report(const std::vector<MergeConflict>& conflicts) {
  for (const MergeConflict& conflict : conflicts) {
    {
      MutexLock lock(mutex_);
      if (!logged_.insert(conflict.family).second) continue;
    }
    writer_(describe_merge_conflict(conflict));
  }
}

MergeConflictLog& MergeConflictLog::process_log() {
  static MergeConflictLog log;
  return log;
}

}  // namespace tokenspeed::metrics
