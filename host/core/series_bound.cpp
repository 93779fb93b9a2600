// series_bound.cpp — the refused-series self-metric and the refusal line.
#include "core/series_bound.hpp"

#include <unistd.h>

#include "core/input_excerpt.hpp"

namespace tokenspeed::metrics {
namespace {

// A label value longer than this is cut in the refusal line: the value that
// overflowed a family is often a request id or a prompt fragment.
constexpr std::size_t kShownValueBytes = 40;

// The value quoted as in the exposition, cut (on a character boundary)
// with its size when long.
void append_quoted(std::string& out, std::string_view value) {
  out += '"';
  for (const char c : input_excerpt(value, kShownValueBytes)) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  out += '"';
}

// "{a="x", b="y"}" of the family's first labels, as many as values gives.
std::string label_set(const MetricDefinition& family, std::span<const std::string_view> values) {
  std::string out = "{";
  for (std::size_t i = 0; i < values.size() && i < family.label_names.size(); ++i) {
    if (i != 0) out += ", ";
    out += family.label_names[i];
    out += '=';
    append_quoted(out, values[i]);
  }
  return out + '}';
}

}  // namespace

const MetricDefinition& series_refused_definition() {
  static const MetricDefinition definition{
      "tokenspeed_metrics_series_refused",
      MetricKind::counter,
      "Calls that asked for a new label set of a family at its bound on series "
      "(--metrics-max-series-per-family); they recorded nothing.",
      "calls",
      {"family"},
      {},
      GaugeMode::livesum};
  return definition;
}

std::string series_refused_line(const MetricDefinition& family, std::size_t bound,
                                std::span<const std::string_view> values) {
  std::string line = "tokenspeed-metrics: metric '" + input_excerpt(family.name) + "' has " +
                     std::to_string(bound) + " series in process " + std::to_string(::getpid()) +
                     ", its bound (--metrics-max-series-per-family, or "
                     "TOKENSPEED_METRICS_MAX_SERIES_PER_FAMILY in the environment): new label "
                     "sets are refused "
                     "and counted in tokenspeed_metrics_series_refused_total, existing series "
                     "keep recording; first refused: ";
  return line + label_set(family, values);
}

void write_bound_log_line(const SeriesBound& bound, std::string_view line) noexcept {
  try {
    if (bound.log) {
      bound.log(line);
      return;
    }
  } catch (...) {
    return;  // a log that fails changes nothing recorded
  }
  write_log_line_to_stderr(line);
}

const MetricDefinition& series_overflowed_definition() {
  static const MetricDefinition definition{
      "tokenspeed_metrics_series_overflowed",
      MetricKind::counter,
      "Calls that asked for a new label set of a family at its view's cardinality limit; "
      "they recorded into the family's overflow series (otel_metric_overflow=\"true\").",
      "calls",
      {"family"},
      {},
      GaugeMode::livesum};
  return definition;
}

std::string series_overflowed_line(const MetricDefinition& family, std::size_t limit,
                                   std::span<const std::string_view> values) {
  return "tokenspeed-metrics: metric '" + input_excerpt(family.name) + "' has " +
         std::to_string(limit) + " series in process " + std::to_string(::getpid()) +
         " with its overflow series, its views' cardinality_limit (--metrics-views): new label "
         "sets record into the series otel_metric_overflow=\"true\" and are counted in "
         "tokenspeed_metrics_series_overflowed_total, existing series keep recording; first: " +
         label_set(family, values);
}

}  // namespace tokenspeed::metrics
