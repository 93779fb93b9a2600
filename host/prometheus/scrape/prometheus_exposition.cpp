// prometheus_exposition.cpp — text format 0.0.4 writer. Never reads a store.
#include "prometheus/scrape/prometheus_exposition.hpp"

#include <tokenspeed/kit/prometheus_text.hpp>

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

// An exponential histogram's buckets as classic le lines
// (kit::for_each_classic_bucket), then +Inf.
void append_exponential_as_classic(std::string& out, std::string_view bucket_name,
                                   const MergedSeries& series) {
  std::string le;
  kit::for_each_classic_bucket(
      *series.exponential, [&](double upper_bound, std::uint64_t cumulative) {
        le = kit::format_prometheus_value(upper_bound);
        append_sample(out, bucket_name, series, static_cast<double>(cumulative), le.c_str());
      });
  append_sample(out, bucket_name, series, static_cast<double>(series.exponential->count()), "+Inf");
}

}  // namespace

std::string format_prometheus_value(double value) { return kit::format_prometheus_value(value); }

namespace {

// The length of the well-formed UTF-8 sequence at the start of text (1 to 4),
// or 0 when it does not start one (a stray continuation byte, an overlong
// form, a surrogate, a code point past U+10FFFF, a sequence cut short).
std::size_t utf8_sequence_length(std::string_view text) noexcept {
  const auto byte = [&text](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  unsigned char low = 0x80;  // bounds of the second byte (RFC 3629's table)
  unsigned char high = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;
    if (lead == 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;
  } else {
    return 0;
  }
  if (text.size() < length || byte(1) < low || byte(1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return 0;
  }
  return length;
}

// Moves one character from the front of text to out: a well-formed UTF-8
// sequence as it is, a byte that starts none as U+FFFD.
void take_utf8_sequence(std::string& out, std::string_view& text) {
  const std::size_t length =
      static_cast<unsigned char>(text.front()) < 0x80 ? 1 : utf8_sequence_length(text);
  if (length == 0) {
    out += "\xEF\xBF\xBD";
    text.remove_prefix(1);
  } else {
    out.append(text.data(), length);
    text.remove_prefix(length);
  }
}

}  // namespace

bool is_valid_utf8(std::string_view text) noexcept {
  while (!text.empty()) {
    if (static_cast<unsigned char>(text.front()) < 0x80) {
      text.remove_prefix(1);
      continue;
    }
    const std::size_t length = utf8_sequence_length(text);
    if (length == 0) return false;
    text.remove_prefix(length);
  }
  return true;
}

std::string to_valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  while (!text.empty()) take_utf8_sequence(out, text);
  return out;
}

namespace {

// Appends text escaped (backslash and newline, and double quote when
// quote), each byte that starts no well-formed UTF-8 sequence replaced by
// U+FFFD: a scraper rejects a whole scrape for one invalid label value.
void append_escaped(std::string& out, std::string_view text, bool quote) {
  while (!text.empty()) {
    const char c = text.front();
    if (static_cast<unsigned char>(c) >= 0x80) {
      take_utf8_sequence(out, text);
      continue;
    }
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out.push_back(c);
    }
    text.remove_prefix(1);
  }
}

}  // namespace

void append_escaped_label_value(std::string& out, std::string_view value) {
  append_escaped(out, value, true);
}

void append_escaped_help(std::string& out, std::string_view help) {
  append_escaped(out, help, false);
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

  const std::string sum_name = name + "_sum";
  const std::string count_name = name + "_count";
  if (metric.kind == MetricKind::summary) {  // slots: count, sum
    for (const MergedSeries& series : family.series) {
      append_sample(out, sum_name, series, series.slots[1]);
      append_sample(out, count_name, series, series.slots[0]);
    }
    return;
  }
  if (metric.kind != MetricKind::histogram) {
    for (const MergedSeries& series : family.series)
      append_sample(out, name, series, series.slots[0]);
    return;
  }
  const std::string bucket_name = name + "_bucket";
  if (metric.exponential) {
    for (const MergedSeries& series : family.series) {
      append_exponential_as_classic(out, bucket_name, series);
      append_sample(out, sum_name, series, series.exponential->sum());
      append_sample(out, count_name, series, static_cast<double>(series.exponential->count()));
    }
    return;
  }
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
