// prometheus_exposition.cpp — text format 0.0.4 writer. Never reads a store.
#include "prometheus/prometheus_exposition.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <vector>

namespace tokenspeed::metrics {
namespace {

void append_labels(std::string& out, const MergedSeries& series, const char* le = nullptr) {
  if (series.labels.empty() && le == nullptr) return;
  out.push_back('{');
  bool first = true;
  for (const auto& [name, value] : series.labels) {
    if (!first) out.push_back(',');
    first = false;
    out += name;
    out += "=\"";
    append_escaped_label_value(out, value);
    out.push_back('"');
  }
  if (le != nullptr) {
    if (!first) out.push_back(',');
    out += "le=\"";
    out += le;
    out.push_back('"');
  }
  out.push_back('}');
}

void append_sample(std::string& out, std::string_view name, const MergedSeries& series,
                   double value, const char* le = nullptr) {
  out += name;
  append_labels(out, series, le);
  out.push_back(' ');
  out += format_prometheus_value(value);
  out.push_back('\n');
}

}  // namespace

std::string format_prometheus_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[64];
  // Shortest round-trip digits in scientific form tell the decimal exponent.
  auto [end, ec] =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  if (ec != std::errc()) return "NaN";
  const char* e =
      static_cast<const char*>(std::memchr(buffer, 'e', static_cast<std::size_t>(end - buffer)));
  int exponent = 0;
  if (e != nullptr) {
    const char* digits = e + 1;
    if (digits < end && *digits == '+') ++digits;  // from_chars takes '-' only
    std::from_chars(digits, end, exponent);
  }
  // Go's strconv.FormatFloat(v, 'g', -1, 64): exponent form when the
  // exponent is below -4 or at least 6 (the shortest-precision rule).
  if (exponent < -4 || exponent >= 6) return std::string(buffer, end);
  auto [fixed_end, fixed_ec] =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed);
  if (fixed_ec != std::errc()) return "NaN";
  return std::string(buffer, fixed_end);
}

void append_escaped_label_value(std::string& out, std::string_view value) {
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out.push_back(c);
    }
  }
}

void append_escaped_help(std::string& out, std::string_view help) {
  for (char c : help) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out.push_back(c);
    }
  }
}

void append_family(std::string& out, const MergedFamily& family) {
  const MetricDefinition& metric = *family.metric;
  const std::string name = metric.sample_name();
  if (!metric.help.empty()) {
    out += "# HELP ";
    out += name;
    out.push_back(' ');
    append_escaped_help(out, metric.help);
    out.push_back('\n');
  }
  out += "# TYPE ";
  out += name;
  out.push_back(' ');
  out += to_string(metric.kind);
  out.push_back('\n');

  if (metric.kind != MetricKind::histogram) {
    for (const MergedSeries& series : family.series)
      append_sample(out, name, series, series.slots[0]);
    return;
  }
  const std::string bucket_name = name + "_bucket";
  const std::string sum_name = name + "_sum";
  const std::string count_name = name + "_count";
  std::vector<std::string> bounds;
  bounds.reserve(metric.buckets.size());
  for (double bound : metric.buckets) bounds.push_back(format_prometheus_value(bound));
  for (const MergedSeries& series : family.series) {
    const std::size_t n = metric.buckets.size();
    double cumulative = 0;
    for (std::size_t i = 0; i < n; ++i) {
      cumulative += series.slots[i];
      append_sample(out, bucket_name, series, cumulative, bounds[i].c_str());
    }
    cumulative += series.slots[n];
    append_sample(out, bucket_name, series, cumulative, "+Inf");
    append_sample(out, sum_name, series, series.slots[n + 1]);
    append_sample(out, count_name, series, cumulative);
  }
}

std::string render_exposition(std::span<const MergedFamily> families) {
  std::string out;
  std::size_t series = 0;
  for (const MergedFamily& family : families) series += family.series.size();
  out.reserve(256 + series * 96);
  for (const MergedFamily& family : families) append_family(out, family);
  return out;
}

}  // namespace tokenspeed::metrics
