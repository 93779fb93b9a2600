// metric_definition.cpp — names of kinds and gauge modes, bucket helpers, and
// the checks every definition an engine makes goes through. Startup path only.
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

#include "core/input_excerpt.hpp"
#include "tokenspeed/metrics/metric_definition.hpp"

namespace tokenspeed::metrics {
namespace {

constexpr GaugeMode kGaugeModes[] = {
    GaugeMode::livemax,    GaugeMode::livesum,       GaugeMode::max,     GaugeMode::min,
    GaugeMode::sum,        GaugeMode::all,           GaugeMode::liveall, GaugeMode::livemin,
    GaugeMode::mostrecent, GaugeMode::livemostrecent};

bool is_name_start(char c, bool colon_allowed) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         (colon_allowed && c == ':');
}

// The exposition format's metric names ([a-zA-Z_:][a-zA-Z0-9_:]*) and label
// names ([a-zA-Z_][a-zA-Z0-9_]*).
bool valid_name(std::string_view name, bool colon_allowed) {
  if (name.empty() || !is_name_start(name.front(), colon_allowed)) return false;
  for (const char c : name) {
    if (!is_name_start(c, colon_allowed) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

[[noreturn]] void reject(const MetricDefinition& definition, const std::string& why) {
  throw std::invalid_argument("metric '" + input_excerpt(definition.name) + "': " + why);
}

}  // namespace

std::string_view to_string(MetricKind kind) noexcept {
  switch (kind) {
    case MetricKind::counter:
      return "counter";
    case MetricKind::gauge:
      return "gauge";
    case MetricKind::histogram:
      return "histogram";
    case MetricKind::summary:
      return "summary";
  }
  return "untyped";
}

std::string_view to_string(GaugeMode mode) noexcept {
  switch (mode) {
    case GaugeMode::livemax:
      return "livemax";
    case GaugeMode::livesum:
      return "livesum";
    case GaugeMode::max:
      return "max";
    case GaugeMode::min:
      return "min";
    case GaugeMode::sum:
      return "sum";
    case GaugeMode::all:
      return "all";
    case GaugeMode::liveall:
      return "liveall";
    case GaugeMode::livemin:
      return "livemin";
    case GaugeMode::mostrecent:
      return "mostrecent";
    case GaugeMode::livemostrecent:
      return "livemostrecent";
  }
  return "livemax";
}

bool gauge_mode_from_string(std::string_view text, GaugeMode& mode) noexcept {
  for (const GaugeMode candidate : kGaugeModes) {
    if (to_string(candidate) == text) {
      mode = candidate;
      return true;
    }
  }
  return false;
}

std::string MetricDefinition::sample_name() const {
  if (kind == MetricKind::counter) return name + "_total";
  return name;
}

MetricDefinition checked_definition(MetricDefinition definition) {
  if (definition.kind != MetricKind::counter && definition.kind != MetricKind::gauge &&
      definition.kind != MetricKind::histogram && definition.kind != MetricKind::summary) {
    reject(definition, "unknown kind");
  }
  if (definition.kind == MetricKind::counter && definition.name.size() > 6 &&
      definition.name.ends_with("_total")) {
    definition.name.resize(definition.name.size() - 6);
  }
  if (!valid_name(definition.name, true)) {
    reject(definition,
           "not a valid metric name (letters, digits, '_' and ':', not starting "
           "with a digit)");
  }
  std::set<std::string_view> seen;
  for (const std::string& label : definition.label_names) {
    if (!valid_name(label, false)) {
      reject(definition, "label name '" + input_excerpt(label) +
                             "' is not valid (letters, digits and '_', not starting with a digit)");
    }
    if (label.starts_with("__"))
      reject(definition, "label name '" + input_excerpt(label) + "' is reserved");
    if (definition.kind == MetricKind::histogram && label == "le") {
      reject(definition, "label name 'le' is reserved for histogram buckets");
    }
    if (definition.kind == MetricKind::summary && label == "quantile") {
      reject(definition, "label name 'quantile' is reserved for summaries");
    }
    if (definition.kind == MetricKind::gauge && label == "pid" &&
        (definition.gauge_mode == GaugeMode::all || definition.gauge_mode == GaugeMode::liveall)) {
      reject(definition, "label name 'pid' is reserved for gauges in the all and liveall modes");
    }
    if (!seen.insert(label).second)
      reject(definition, "label name '" + input_excerpt(label) + "' is repeated");
  }
  if (definition.kind == MetricKind::histogram) {
    if (!definition.buckets.empty() && std::isinf(definition.buckets.back()) &&
        definition.buckets.back() > 0) {
      definition.buckets.pop_back();  // +Inf is always there
    }
    if (definition.buckets.empty()) {
      definition.buckets =
          definition.exponential ? exponential_buckets(0x1p-10, 2, 21) : default_buckets();
    }
    for (std::size_t i = 0; i < definition.buckets.size(); ++i) {
      if (!std::isfinite(definition.buckets[i]) ||
          (i > 0 && !(definition.buckets[i - 1] < definition.buckets[i]))) {
        reject(definition, "buckets must be finite and strictly ascending");
      }
    }
  } else if (!definition.buckets.empty()) {
    reject(definition, definition.kind == MetricKind::summary
                           ? "a summary has no buckets (it exposes a count and a sum)"
                           : "only a histogram has buckets");
  }
  if (definition.exponential) {
    if (definition.kind != MetricKind::histogram)
      reject(definition, "only a histogram has exponential buckets");
    const ExponentialHistogramOptions& options = *definition.exponential;
    if (options.max_buckets < kMinExponentialBuckets ||
        options.max_buckets > kMaxExponentialBuckets) {
      reject(definition, "exponential max_buckets must be between " +
                             std::to_string(kMinExponentialBuckets) + " and " +
                             std::to_string(kMaxExponentialBuckets) + ", got " +
                             std::to_string(options.max_buckets));
    }
    if (options.max_scale < -10 || options.max_scale > 20) {
      reject(definition, "exponential max_scale must be between -10 and 20, got " +
                             std::to_string(options.max_scale));
    }
    if (!std::isfinite(options.zero_threshold) || options.zero_threshold < 0)
      reject(definition, "exponential zero_threshold must be a finite value >= 0");
  }
  return definition;
}

std::vector<double> exponential_buckets(double start, double factor, int count) {
  std::vector<double> bounds;
  bounds.reserve(static_cast<std::size_t>(count > 0 ? count : 0));
  double bound = start;
  for (int i = 0; i < count; ++i) {
    bounds.push_back(bound);
    bound *= factor;
  }
  return bounds;
}

std::vector<double> linear_buckets(double start, double width, int count) {
  std::vector<double> bounds;
  bounds.reserve(static_cast<std::size_t>(count > 0 ? count : 0));
  for (int i = 0; i < count; ++i) bounds.push_back(start + width * i);
  return bounds;
}

const std::vector<double>& default_buckets() {
  static const std::vector<double> buckets{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25,
                                           0.5,   0.75, 1.0,   2.5,  5.0,   7.5, 10.0};
  return buckets;
}

}  // namespace tokenspeed::metrics
