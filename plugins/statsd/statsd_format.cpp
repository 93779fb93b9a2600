// statsd_format.cpp — the StatsD and DogStatsD line grammar (see
// statsd_format.hpp). No I/O; appends into the caller's buffer only.
#include "statsd_format.hpp"

#include <charconv>
#include <cmath>

#include <tokenspeed/kit/overflow_label.hpp>

namespace tokenspeed::metrics::statsd {
namespace {

bool name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

void append_segment(std::string& out, std::string_view text) {
  for (const char c : text) out += (name_char(c) && c != '.') ? c : '_';
}

void append_tag_text(std::string& out, std::string_view text, bool is_name) {
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    const bool bad =
        u < 0x20 || u == 0x7f || c == ',' || c == '|' || c == '#' || (is_name && c == ':');
    out += bad ? '_' : c;
  }
}

}  // namespace

void append_number(std::string& out, double v) {
  char text[32];
  const auto result = std::to_chars(text, text + sizeof text, v);
  out.append(text, result.ptr);
}

double sample_rate_for_weight(uint64_t weight) noexcept {
  return std::nextafter(1.0 / static_cast<double>(weight), 0.0);
}

std::string_view type_code(LineType type) noexcept {
  switch (type) {
    case LineType::kCounter:
      return "c";
    case LineType::kGauge:
      return "g";
    case LineType::kTimer:
      return "ms";
    case LineType::kDistribution:
      return "d";
  }
  return "c";
}

void append_name(std::string& out, const FormatOptions& options, std::string_view metric,
                 const LabelView& labels) {
  if (!options.prefix.empty()) {
    out += options.prefix;
    if (options.prefix.back() != '.') out += '.';
  }
  for (const char c : metric) out += c == ':' ? '.' : name_char(c) ? c : '_';
  if (options.flavour == Flavour::kStatsd) {
    for (uint32_t i = 0; i < labels.count; ++i) {
      if (kit::is_unset_overflow_label(labels.name(i), labels.value(i))) continue;
      out += '.';
      append_segment(out, labels.name(i));
      out += '.';
      append_segment(out, labels.value(i));
    }
  }
}

void append_tags(std::string& out, const LabelView& labels, const std::string& constant_tags) {
  bool first = true;
  for (uint32_t i = 0; i < labels.count; ++i) {
    if (kit::is_unset_overflow_label(labels.name(i), labels.value(i))) continue;
    out += first ? "|#" : ",";
    first = false;
    append_tag_text(out, labels.name(i), true);
    out += ':';
    append_tag_text(out, labels.value(i), false);
  }
  if (!constant_tags.empty()) {
    out += first ? "|#" : ",";
    out += constant_tags;
  }
}

void append_line(std::string& out, const FormatOptions& options, std::string_view metric,
                 const LabelView& labels, LineType type, double value, uint64_t weight) {
  const std::size_t start = out.size();
  append_name(out, options, metric, labels);
  const std::size_t name_end = out.size();
  const std::string_view code = type_code(type);
  if (options.flavour == Flavour::kStatsd) {
    if (type == LineType::kGauge && value < 0) {
      out += ":0|g\n";
      out.append(out, start, name_end - start);
    }
    const uint64_t repeats = type == LineType::kTimer ? weight : 1;
    for (uint64_t i = 0; i < repeats; ++i) {
      out += ':';
      append_number(out, value);
      out += '|';
      out += code;
    }
    return;
  }
  out += ':';
  append_number(out, value);
  out += '|';
  out += code;
  if (type == LineType::kDistribution && weight > 1) {
    out += "|@";
    append_number(out, sample_rate_for_weight(weight));
  }
  append_tags(out, labels, options.constant_tags);
}

std::string identity_tags(std::string_view process, std::string_view node) {
  std::string out = "process:";
  append_tag_text(out, process, false);
  out += ",node:";
  append_tag_text(out, node, false);
  return out;
}

}  // namespace tokenspeed::metrics::statsd
