// exposition_fuzzer.cpp — fuzzes the exposition writer
// (host/prometheus/scrape/prometheus_exposition) with arbitrary metric names,
// help, label names, label values and sample values, merged as a scrape
// merges them. The text must read back as valid exposition
// (exposition_check.hpp): the family typed once, every series once, label
// values and help unescaping to what was given (invalid UTF-8 replaced by
// U+FFFD), histograms ending in +Inf with _count equal to it. A family whose
// sample names the merge's own families claim is left out and reported as a
// conflict instead; an empty overflow label (metric_views.hpp) is written as
// none. `check --engine-metrics` reads the text back as the family defined
// (config/exposition_families).
// Input: fields separated by NUL: "<c|g|h><gauge mode digit>", name, help,
// label names (comma-separated), buckets (comma-separated), then per series
// its label values and its slot values (comma-separated).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "exposition_check.hpp"
#include "fuzz_support.hpp"
#include "core/metric_store.hpp"
#include "config/exposition_families.hpp"
#include "config/metric_views.hpp"
#include "core/startup_error.hpp"
#include "pipeline/sample_name_claims.hpp"
#include "prometheus/scrape/merge_conflicts.hpp"
#include "prometheus/scrape/prometheus_exposition.hpp"
#include "prometheus/scrape/prometheus_merge.hpp"

namespace {

namespace tsm = tokenspeed::metrics;
using tsm::fuzz::split;

std::vector<double> numbers(std::string_view field) {
  std::vector<double> values;
  if (field.empty()) return values;
  for (const std::string_view part : split(field, ',')) {
    const std::string text(part);
    values.push_back(std::strtod(text.c_str(), nullptr));
  }
  return values;
}

bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// A sample name of definition that one of the merge's own families claims:
// such a family is left out of /metrics and reported, never exposed.
bool claims_a_merge_name(const tsm::MetricDefinition& definition) {
  for (const tsm::MetricDefinition& own : tsm::merge_self_metric_definitions()) {
    if (!tsm::shared_claimed_name(own, definition).empty()) return true;
  }
  return false;
}

// The value of the merge's own gauge own{family="family"}, NaN when absent.
double reported(const tsm::fuzz::Exposition& exposed, const std::string& own,
                const std::string& family) {
  for (const tsm::fuzz::ExposedSample& sample : exposed.samples) {
    if (sample.name == own && sample.labels.size() == 1 && sample.labels[0].first == "family" &&
        sample.labels[0].second == tsm::fuzz::replace_invalid_utf8(family))
      return sample.value;
  }
  return NAN;
}

// `check --engine-metrics` reads the family back from the text as it was
// defined: name, kind, help (but for its leading blanks and a last CR),
// labels (a per-process gauge's with pid) and buckets.
void check_read_back(const std::string& text, const tsm::MetricDefinition& definition,
                     bool per_process, bool overflow_set) {
  tsm::ExpositionFamilies read;
  try {
    read = tsm::exposition_families_from_text(text, "metrics.txt");
  } catch (const tsm::StartupError& error) {
    std::fprintf(stderr, "check --engine-metrics refuses the text: %s\n", error.what());
    FUZZ_CHECK(!"the host's own exposition reads back");
  }
  FUZZ_CHECK(read.families.size() == 1 && read.notes.empty());
  const tsm::MetricDefinition& family = read.families.front();
  FUZZ_CHECK(family.name == definition.name);
  FUZZ_CHECK(family.kind == definition.kind);
  // The text format has no escape for a blank: a reader (Prometheus's own
  // among them) skips those that start the help. And the reader takes a
  // saved file's CR LF line endings, so a help's last CR is read as one.
  std::string help = tsm::fuzz::replace_invalid_utf8(definition.help);
  help.erase(0, std::min(help.size(), help.find_first_not_of(" \t")));
  if (help.ends_with('\r')) help.pop_back();
  FUZZ_CHECK(family.help == help);
  std::vector<std::string> labels = definition.label_names;
  if (per_process) labels.push_back("pid");
  std::vector<std::string> read_labels = family.label_names;
  const auto overflow = std::find(labels.begin(), labels.end(), tsm::kOverflowLabel);
  if (overflow != labels.end()) {
    // Written only where it is set, so read only where some series set it,
    // and after the pid of a series that came before.
    if (!overflow_set) labels.erase(overflow);
    std::sort(labels.begin(), labels.end());
    std::sort(read_labels.begin(), read_labels.end());
  }
  FUZZ_CHECK(read_labels == labels);
  if (definition.kind == tsm::MetricKind::histogram) {
    FUZZ_CHECK(family.buckets.size() == definition.buckets.size());
    for (std::size_t i = 0; i < family.buckets.size(); ++i)
      FUZZ_CHECK(same(family.buckets[i], definition.buckets[i]));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::string_view> fields =
      split(std::string_view(reinterpret_cast<const char*>(data), size), '\0');
  if (fields.size() < 5 || fields[0].empty()) return 0;
  tsm::MetricDefinition definition;
  switch (fields[0][0]) {
    case 'c':
      definition.kind = tsm::MetricKind::counter;
      break;
    case 'g':
      definition.kind = tsm::MetricKind::gauge;
      break;
    case 'h':
      definition.kind = tsm::MetricKind::histogram;
      break;
    default:
      return 0;
  }
  if (fields[0].size() > 1) {
    definition.gauge_mode =
        static_cast<tsm::GaugeMode>(static_cast<unsigned char>(fields[0][1]) % 7);
  }
  definition.name = std::string(fields[1]);
  definition.help = std::string(fields[2]);
  if (!fields[3].empty()) {
    for (const std::string_view label : split(fields[3], ','))
      definition.label_names.emplace_back(label);
  }
  definition.buckets = numbers(fields[4]);
  try {
    definition = tsm::checked_definition(definition);
  } catch (const std::invalid_argument&) {
    return 0;  // the writer only ever sees checked definitions
  }
  const std::size_t label_count = definition.label_names.size();
  const std::size_t slot_count = tsm::series_slot_count(definition);
  const bool per_process = definition.kind == tsm::MetricKind::gauge &&
                           (definition.gauge_mode == tsm::GaugeMode::all ||
                            definition.gauge_mode == tsm::GaugeMode::liveall);

  tsm::PrometheusMerge merge({&definition});
  std::set<std::vector<std::string>> given;  // label values (and pid) of every series
  bool overflow_set = false;                 // a series' overflow label is not empty
  std::size_t at = 5;
  for (std::size_t index = 0; at + label_count < fields.size(); ++index) {
    const std::vector<std::string_view> values(
        fields.begin() + static_cast<std::ptrdiff_t>(at),
        fields.begin() + static_cast<std::ptrdiff_t>(at + label_count));
    std::vector<double> slots = numbers(fields[at + label_count]);
    at += label_count + 1;
    slots.resize(slot_count, 0.0);
    const tsm::ProcessInstance process{static_cast<pid_t>(1000 + index % 3), 0};
    merge.add_series(definition, values, slots, process, true);
    std::vector<std::string> key;
    for (std::size_t label = 0; label < label_count; ++label) {
      key.push_back(tsm::fuzz::replace_invalid_utf8(values[label]));
      if (definition.label_names[label] == tsm::kOverflowLabel && !values[label].empty())
        overflow_set = true;
    }
    if (per_process) key.push_back(std::to_string(process.pid));
    given.insert(std::move(key));
  }
  const std::vector<tsm::MergedFamily> families = merge.take_families();
  const std::string text = tsm::render_exposition(families);
  const tsm::fuzz::Exposition exposed = tsm::fuzz::parse_exposition(text);
  if (given.empty()) {
    FUZZ_CHECK(text.empty());
    return 0;
  }

  if (claims_a_merge_name(definition)) {
    FUZZ_CHECK(merge.conflicts().size() == 1);
    const tsm::MergeConflict& conflict = merge.conflicts().front();
    FUZZ_CHECK(conflict.family == definition.name && !conflict.shared_name.empty());
    FUZZ_CHECK(reported(exposed, "tokenspeed_metrics_merge_conflicting_definitions",
                        definition.name) == 1);
    FUZZ_CHECK(reported(exposed, "tokenspeed_metrics_merge_series_left_out", definition.name) ==
               static_cast<double>(conflict.left_out_series));
    return 0;
  }
  const std::string family = definition.sample_name();
  FUZZ_CHECK(exposed.type.at(family) == tsm::to_string(definition.kind));
  FUZZ_CHECK(exposed.help.count(family) == (definition.help.empty() ? 0u : 1u));
  if (!definition.help.empty()) {
    FUZZ_CHECK(exposed.help.at(family) == tsm::fuzz::replace_invalid_utf8(definition.help));
  }

  // Each series' samples, by its label values.
  std::map<std::vector<std::string>, std::vector<const tsm::fuzz::ExposedSample*>> by_series;
  for (const tsm::fuzz::ExposedSample& sample : exposed.samples) {
    std::vector<std::string> key;
    std::size_t i = 0;
    for (std::size_t label = 0; label < label_count; ++label) {
      const std::string& name = definition.label_names[label];
      if (name == tsm::kOverflowLabel &&
          (i == sample.labels.size() || sample.labels[i].first != name)) {
        key.emplace_back();  // an empty overflow label is written as none
        continue;
      }
      FUZZ_CHECK(i < sample.labels.size() && sample.labels[i].first == name);
      FUZZ_CHECK(name != tsm::kOverflowLabel || !sample.labels[i].second.empty());
      key.push_back(sample.labels[i++].second);
    }
    if (per_process) {
      FUZZ_CHECK(i < sample.labels.size() && sample.labels[i].first == "pid");
      key.push_back(sample.labels[i++].second);
    }
    if (sample.name == family + "_bucket") {
      FUZZ_CHECK(i < sample.labels.size() && sample.labels[i++].first == "le");
    }
    FUZZ_CHECK(i == sample.labels.size());
    by_series[key].push_back(&sample);
  }
  std::set<std::vector<std::string>> exposed_keys;
  for (const auto& [key, samples] : by_series) exposed_keys.insert(key);
  FUZZ_CHECK(exposed_keys == given);
  for (const auto& [key, samples] : by_series) {
    if (definition.kind != tsm::MetricKind::histogram) {
      FUZZ_CHECK(samples.size() == 1);
      continue;
    }
    const std::size_t buckets = definition.buckets.size() + 1;
    FUZZ_CHECK(samples.size() == buckets + 2);
    for (std::size_t i = 0; i + 1 < buckets; ++i) {
      const std::string& le = samples[i]->labels.back().second;
      FUZZ_CHECK(same(tsm::fuzz::read_value(le), definition.buckets[i]));
    }
    FUZZ_CHECK(samples[buckets - 1]->labels.back().second == "+Inf");
    FUZZ_CHECK(samples[buckets]->name == family + "_sum");
    FUZZ_CHECK(samples[buckets + 1]->name == family + "_count");
    FUZZ_CHECK(same(samples[buckets + 1]->value, samples[buckets - 1]->value));
  }
  check_read_back(text, definition, per_process, overflow_set);
  return 0;
}
