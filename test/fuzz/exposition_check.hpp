// exposition_check.hpp — reads Prometheus text exposition 0.0.4 back as a
// scraper does and aborts on anything a scraper would reject: invalid UTF-8,
// a line that is neither HELP, TYPE nor a sample, bad names, bad escapes, a
// value that is not a Go float, a family split or typed twice. Test code only.
#pragma once

#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_support.hpp"

namespace tokenspeed::metrics::fuzz {

struct ExposedSample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // unescaped
  double value = 0;
};

struct Exposition {
  std::map<std::string, std::string> help;  // family -> unescaped help
  std::map<std::string, std::string> type;  // family -> type
  std::vector<ExposedSample> samples;
};

// The length of the well-formed UTF-8 sequence (no overlong form, surrogate
// or code point past U+10FFFF) at the start of text, 0 when there is none.
inline std::size_t utf8_length(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const unsigned char c = p[0];
  if (c < 0x80) return 1;
  std::size_t length = 0;
  unsigned long code = 0;
  if ((c & 0xe0) == 0xc0) {
    length = 2;
    code = c & 0x1f;
  } else if ((c & 0xf0) == 0xe0) {
    length = 3;
    code = c & 0x0f;
  } else if ((c & 0xf8) == 0xf0) {
    length = 4;
    code = c & 0x07;
  } else {
    return 0;
  }
  if (text.size() < length) return 0;
  for (std::size_t i = 1; i < length; ++i) {
    if ((p[i] & 0xc0) != 0x80) return 0;
    code = (code << 6) | (p[i] & 0x3f);
  }
  static constexpr unsigned long kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kMinimum[length] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return 0;
  return length;
}

inline bool valid_utf8(std::string_view text) {
  while (!text.empty()) {
    const std::size_t length = utf8_length(text);
    if (length == 0) return false;
    text.remove_prefix(length);
  }
  return true;
}

// text with each byte that starts no well-formed sequence replaced by U+FFFD.
inline std::string replace_invalid_utf8(std::string_view text) {
  std::string out;
  while (!text.empty()) {
    const std::size_t length = utf8_length(text);
    out += length == 0 ? std::string_view("\xEF\xBF\xBD") : text.substr(0, length);
    text.remove_prefix(length == 0 ? 1 : length);
  }
  return out;
}

inline bool metric_name_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         (!first && c >= '0' && c <= '9');
}
inline bool label_name_char(char c, bool first) { return c != ':' && metric_name_char(c, first); }

// A Go float as Prometheus's text parser reads it.
inline double read_value(std::string_view token) {
  if (token == "+Inf") return HUGE_VAL;
  if (token == "-Inf") return -HUGE_VAL;
  if (token == "NaN") return NAN;
  FUZZ_CHECK(!token.empty());
  for (char c : token) {
    FUZZ_CHECK((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == '-' || c == '+');
  }
  const std::string text(token);
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  FUZZ_CHECK(end == text.c_str() + text.size());
  return value;
}

// The family a sample name belongs to under the TYPE given for family.
inline bool sample_of(std::string_view sample, const std::string& family, const std::string& type) {
  if (type == "counter") return sample == family + "_total" || sample == family;
  if (type == "histogram") {
    return sample == family + "_bucket" || sample == family + "_sum" || sample == family + "_count";
  }
  return sample == family;
}

inline Exposition parse_exposition(std::string_view text) {
  FUZZ_CHECK(valid_utf8(text));
  FUZZ_CHECK(text.empty() || text.back() == '\n');
  Exposition result;
  std::string family;  // the family of the last TYPE line
  std::set<std::string> finished;
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t newline = rest.find('\n');
    std::string_view line = rest.substr(0, newline);
    rest.remove_prefix(newline + 1);
    auto read_name = [&line](bool metric) {
      std::size_t n = 0;
      while (n < line.size() &&
             (metric ? metric_name_char(line[n], n == 0) : label_name_char(line[n], n == 0)))
        ++n;
      FUZZ_CHECK(n > 0);
      std::string name(line.substr(0, n));
      line.remove_prefix(n);
      return name;
    };
    if (line.starts_with("# HELP ")) {
      line.remove_prefix(7);
      const std::string name = read_name(true);
      FUZZ_CHECK(line.starts_with(" "));
      line.remove_prefix(1);
      std::string help;
      for (std::size_t i = 0; i < line.size(); ++i) {
        if (line[i] != '\\') {
          help.push_back(line[i]);
          continue;
        }
        FUZZ_CHECK(i + 1 < line.size());
        const char escaped = line[++i];
        FUZZ_CHECK(escaped == '\\' || escaped == 'n');
        help.push_back(escaped == 'n' ? '\n' : '\\');
      }
      FUZZ_CHECK(result.help.emplace(name, help).second);
      FUZZ_CHECK(finished.count(name) == 0 && result.type.count(name) == 0);
      continue;
    }
    if (line.starts_with("# TYPE ")) {
      line.remove_prefix(7);
      const std::string name = read_name(true);
      FUZZ_CHECK(line == " counter" || line == " gauge" || line == " histogram");
      FUZZ_CHECK(finished.count(name) == 0);
      FUZZ_CHECK(result.type.emplace(name, std::string(line.substr(1))).second);
      if (!family.empty()) finished.insert(family);
      family = name;
      continue;
    }
    FUZZ_CHECK(!line.starts_with("#"));
    ExposedSample sample;
    sample.name = read_name(true);
    FUZZ_CHECK(!family.empty() && sample_of(sample.name, family, result.type[family]));
    if (line.starts_with("{")) {
      line.remove_prefix(1);
      std::set<std::string> names;
      while (!line.starts_with("}")) {
        std::string label = read_name(false);
        FUZZ_CHECK(names.insert(label).second);
        FUZZ_CHECK(line.starts_with("=\""));
        line.remove_prefix(2);
        std::string value;
        for (;;) {
          FUZZ_CHECK(!line.empty());
          const char c = line.front();
          line.remove_prefix(1);
          if (c == '"') break;
          if (c != '\\') {
            value.push_back(c);
            continue;
          }
          FUZZ_CHECK(!line.empty());
          const char escaped = line.front();
          line.remove_prefix(1);
          FUZZ_CHECK(escaped == '\\' || escaped == '"' || escaped == 'n');
          value.push_back(escaped == 'n' ? '\n' : escaped);
        }
        sample.labels.emplace_back(std::move(label), std::move(value));
        if (line.starts_with(",")) line.remove_prefix(1);
      }
      line.remove_prefix(1);
    }
    FUZZ_CHECK(line.starts_with(" "));
    sample.value = read_value(line.substr(1));
    result.samples.push_back(std::move(sample));
  }
  return result;
}

}  // namespace tokenspeed::metrics::fuzz
