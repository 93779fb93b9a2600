// sample_name_claims.cpp — which exposition names a family claims, and the
// lookups that find two families claiming one name. Startup and scrape paths.
#include "pipeline/sample_name_claims.hpp"

#include <algorithm>

namespace tokenspeed::metrics {

const std::vector<std::string_view>& claimed_suffixes(MetricKind kind) {
  static const std::vector<std::string_view> counter{"_total", "_created"};
  static const std::vector<std::string_view> histogram{"_bucket", "_sum", "_count", "_created"};
  static const std::vector<std::string_view> summary{"_sum", "_count", "_created"};
  static const std::vector<std::string_view> none;
  switch (kind) {
    case MetricKind::counter:
      return counter;
    case MetricKind::histogram:
      return histogram;
    case MetricKind::summary:
      return summary;
    case MetricKind::gauge:
      break;
  }
  return none;
}

std::vector<std::string> claimed_names(const MetricDefinition& metric) {
  std::vector<std::string> names{metric.name};
  for (std::string_view suffix : claimed_suffixes(metric.kind)) {
    names.push_back(metric.name + std::string(suffix));
  }
  return names;
}

std::string shared_claimed_name(const MetricDefinition& a, const MetricDefinition& b) {
  const std::vector<std::string> theirs = claimed_names(b);
  for (const std::string& name : claimed_names(a)) {
    if (std::find(theirs.begin(), theirs.end(), name) != theirs.end()) return name;
  }
  return {};
}

const MetricDefinition* find_colliding_family(
    const MetricDefinition& metric,
    const std::function<const MetricDefinition*(std::string_view name)>& find) {
  constexpr MetricKind kKinds[] = {MetricKind::counter, MetricKind::gauge, MetricKind::histogram,
                                   MetricKind::summary};
  for (const std::string& name : claimed_names(metric)) {
    // A family called exactly this name claims it, whatever its kind.
    if (name != metric.name) {
      if (const MetricDefinition* other = find(name)) return other;
    }
    // A family called this name less one of its kind's suffixes claims it.
    for (const MetricKind kind : kKinds) {
      for (std::string_view suffix : claimed_suffixes(kind)) {
        if (!name.ends_with(suffix) || name.size() == suffix.size()) continue;
        const std::string_view base = std::string_view(name).substr(0, name.size() - suffix.size());
        if (base == metric.name) continue;
        if (const MetricDefinition* other = find(base); other != nullptr && other->kind == kind) {
          return other;
        }
      }
    }
  }
  return nullptr;
}

}  // namespace tokenspeed::metrics
