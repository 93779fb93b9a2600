// yaml_json.cpp — a YamlNode tree into Boost.JSON by YAML 1.2's core schema,
// and a JSON key path back to its line. Startup only.
#include "config/yaml_json.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <system_error>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "core/input_excerpt.hpp"

namespace tokenspeed::metrics {
namespace {

namespace json = boost::json;

bool one_of(std::string_view text, std::initializer_list<std::string_view> words) {
  return std::find(words.begin(), words.end(), text) != words.end();
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::size_t digits_at(std::string_view text, std::size_t at) {
  std::size_t end = at;
  while (end < text.size() && is_digit(text[end])) ++end;
  return end - at;
}

std::string_view without_plus(std::string_view text) {
  return !text.empty() && text.front() == '+' ? text.substr(1) : text;
}

// [-+]?[0-9]+
bool decimal_integer(std::string_view text) {
  if (!text.empty() && (text.front() == '-' || text.front() == '+')) text.remove_prefix(1);
  return !text.empty() && digits_at(text, 0) == text.size();
}

// 0o[0-7]+ or 0x[0-9a-fA-F]+: the base, 0 when text is neither.
int prefixed_base(std::string_view text) {
  if (text.size() < 3 || text[0] != '0') return 0;
  const int base = text[1] == 'o' ? 8 : text[1] == 'x' ? 16 : 0;
  if (base == 0) return 0;
  const bool digits = std::all_of(text.begin() + 2, text.end(), [base](char c) {
    return base == 8 ? c >= '0' && c <= '7'
                     : is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  });
  return digits ? base : 0;
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool core_float(std::string_view text) {
  std::size_t at = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  const std::size_t whole = digits_at(text, at);
  at += whole;
  std::size_t fraction = 0;
  if (at < text.size() && text[at] == '.') {
    fraction = digits_at(text, ++at);
    at += fraction;
  }
  if (whole == 0 && fraction == 0) return false;
  if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
    ++at;
    if (at < text.size() && (text[at] == '-' || text[at] == '+')) ++at;
    const std::size_t exponent = digits_at(text, at);
    if (exponent == 0) return false;
    at += exponent;
  }
  return at == text.size();
}

// Reads the tree, keeping the path of the node being read for its errors.
class Converter {
 public:
  json::value value(const YamlNode& node) {
    if (!node.tag.empty()) {
      fail(node, "a YAML tag ('" + input_excerpt(node.tag) +
                     "') is not supported: quote a value that must be a string");
    }
    switch (node.kind) {
      case YamlNode::Kind::null:
        return nullptr;
      case YamlNode::Kind::scalar:
        return node.quoted ? json::value(node.value) : plain(node);
      case YamlNode::Kind::sequence: {
        json::array array;
        array.reserve(node.items.size());
        for (std::size_t i = 0; i < node.items.size(); ++i) {
          path_.push_back({nullptr, i});
          array.push_back(value(node.items[i]));
          path_.pop_back();
        }
        return array;
      }
      case YamlNode::Kind::mapping: {
        json::object object;
        object.reserve(node.entries.size());
        for (const YamlEntry& entry : node.entries) {
          path_.push_back({&entry.key, 0});
          object.emplace(entry.key, value(entry.value));
          path_.pop_back();
        }
        return object;
      }
    }
    return nullptr;
  }

 private:
  struct Step {
    const std::string* key;  // nullptr: a sequence's item
    std::size_t index;
  };

  // A plain scalar by the core schema (the parser resolves null; an empty
  // text is null here too, for a tree not made by the parser).
  json::value plain(const YamlNode& node) const {
    const std::string_view text = node.value;
    if (text.empty()) return nullptr;
    if (one_of(text, {"true", "True", "TRUE"})) return true;
    if (one_of(text, {"false", "False", "FALSE"})) return false;
    if (decimal_integer(text)) return integer(node, without_plus(text), 10);
    if (const int base = prefixed_base(text)) return integer(node, text.substr(2), base);
    if (core_float(text)) return floating(node, without_plus(text));
    const std::string_view unsigned_text =
        text.front() == '-' ? text.substr(1) : without_plus(text);
    if (one_of(unsigned_text, {".inf", ".Inf", ".INF"})) {
      const double infinity = std::numeric_limits<double>::infinity();
      return text.front() == '-' ? -infinity : infinity;
    }
    if (one_of(text, {".nan", ".NaN", ".NAN"})) return std::numeric_limits<double>::quiet_NaN();
    return json::value(node.value);
  }

  // As Boost.JSON reads a number: int64, then uint64, then a double.
  json::value integer(const YamlNode& node, std::string_view digits, int base) const {
    const char* end = digits.data() + digits.size();
    std::int64_t signed_value = 0;
    if (std::from_chars(digits.data(), end, signed_value, base).ec == std::errc()) {
      return signed_value;
    }
    std::uint64_t unsigned_value = 0;
    if (std::from_chars(digits.data(), end, unsigned_value, base).ec == std::errc()) {
      return unsigned_value;
    }
    if (base != 10) fail(node, "the number '" + input_excerpt(node.value) + "' is over 64 bits");
    return floating(node, digits);
  }

  // std::from_chars, not strtod: the locale of an embedding engine must not
  // change what "0.5" means.
  json::value floating(const YamlNode& node, std::string_view text) const {
    double number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end != text.data() + text.size()) {
      fail(node, "the number '" + input_excerpt(node.value) + "' is out of the range of a double");
    }
    return number;
  }

  [[noreturn]] void fail(const YamlNode& node, const std::string& message) const {
    std::string key;
    for (const Step& step : path_) {
      if (step.key == nullptr) {
        key += "[" + std::to_string(step.index) + "]";
      } else {
        key += (key.empty() ? "" : ".") + *step.key;
      }
    }
    throw StrictYamlError(message, input_excerpt(key), node.line);
  }

  std::vector<Step> path_;
};

// The item "[N]" at the start of path, which it consumes; nullptr when there
// is none.
const YamlNode* item_at(const YamlNode& node, std::string_view& path) {
  const std::size_t close = path.find(']');
  if (node.kind != YamlNode::Kind::sequence || close == std::string_view::npos) return nullptr;
  std::size_t index = 0;
  const auto [end, error] = std::from_chars(path.data() + 1, path.data() + close, index);
  if (error != std::errc() || end != path.data() + close || index >= node.items.size()) {
    return nullptr;
  }
  path.remove_prefix(close + 1);
  return &node.items[index];
}

// The entry whose key starts path (the longest, as a key may hold '.' or
// '['), which it consumes; nullptr when there is none.
const YamlNode* entry_at(const YamlNode& node, std::string_view& path) {
  if (node.kind != YamlNode::Kind::mapping) return nullptr;
  const YamlEntry* best = nullptr;
  for (const YamlEntry& entry : node.entries) {
    const std::string& key = entry.key;
    const bool whole =
        path.starts_with(key) &&
        (path.size() == key.size() || path[key.size()] == '.' || path[key.size()] == '[');
    if (whole && (best == nullptr || key.size() > best->key.size())) best = &entry;
  }
  if (best == nullptr) return nullptr;
  path.remove_prefix(best->key.size());
  return &best->value;
}

}  // namespace

json::value yaml_to_json(const YamlNode& node) { return Converter().value(node); }

std::size_t yaml_line_of(const YamlNode& root, std::string_view key_path) {
  const YamlNode* node = &root;
  std::size_t line = root.line;
  bool first = true;
  while (!key_path.empty()) {
    const YamlNode* next = nullptr;
    if (key_path.front() == '[') {
      next = item_at(*node, key_path);
      if (next != nullptr) line = next->line;
    } else {
      if (!first && key_path.front() == '.') key_path.remove_prefix(1);
      next = entry_at(*node, key_path);
      if (next != nullptr) line = next->key_line != 0 ? next->key_line : next->line;
    }
    if (next == nullptr) break;
    node = next;
    first = false;
  }
  return line;
}

}  // namespace tokenspeed::metrics
