/*
 * tokenspeed/kit/json.hpp — a small JSON value with a strict parser and a
 * serializer, so that a plugin reads its settings without a JSON library of
 * its own. Header-only C++17. Never used on the event path.
 *
 * Strict: one value, UTF-8 text, no trailing garbage, a duplicate key in an
 * object (also through escapes: "a" and "\u0061") is an error, nesting is
 * bounded. Numbers keep whether they were written as integers. Objects keep
 * their keys in the order given.
 */
#ifndef TOKENSPEED_KIT_JSON_HPP
#define TOKENSPEED_KIT_JSON_HPP

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tokenspeed::metrics::kit::json {

class Value;
using Array = std::vector<Value>;
using Member = std::pair<std::string, Value>;
using Object = std::vector<Member>;  // in the order given; keys unique

/* A parse error: what went wrong and the byte offset. */
class ParseError : public std::runtime_error {
 public:
  ParseError(const std::string& what, std::size_t offset)
      : std::runtime_error(what + " at offset " + std::to_string(offset)), offset_(offset) {}
  std::size_t offset() const noexcept { return offset_; }

 private:
  std::size_t offset_;
};

/* One JSON value. Threading: a plain value type; no shared state. */
class Value {
 public:
  enum class Kind { kNull, kBool, kInteger, kNumber, kString, kArray, kObject };

  Value() noexcept = default;
  Value(std::nullptr_t) noexcept {}
  Value(bool b) : data_(b) {}
  Value(int v) : data_(static_cast<int64_t>(v)) {}
  Value(int64_t v) : data_(v) {}
  Value(double v) : data_(v) {}
  Value(const char* s) : data_(std::string(s)) {}
  Value(std::string s) : data_(std::move(s)) {}
  Value(std::string_view s) : data_(std::string(s)) {}
  Value(Array a) : data_(std::move(a)) {}
  Value(Object o) : data_(std::move(o)) {}

  Kind kind() const noexcept { return static_cast<Kind>(data_.index()); }
  bool is_null() const noexcept { return kind() == Kind::kNull; }
  bool is_bool() const noexcept { return kind() == Kind::kBool; }
  bool is_integer() const noexcept { return kind() == Kind::kInteger; }
  /* An integer or a number written with a fraction or exponent. */
  bool is_number() const noexcept { return is_integer() || kind() == Kind::kNumber; }
  bool is_string() const noexcept { return kind() == Kind::kString; }
  bool is_array() const noexcept { return kind() == Kind::kArray; }
  bool is_object() const noexcept { return kind() == Kind::kObject; }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_integer() const { return std::get<int64_t>(data_); }
  double as_number() const {
    return is_integer() ? static_cast<double>(as_integer()) : std::get<double>(data_);
  }
  const std::string& as_string() const { return std::get<std::string>(data_); }
  const Array& as_array() const { return std::get<Array>(data_); }
  Array& as_array() { return std::get<Array>(data_); }
  const Object& as_object() const { return std::get<Object>(data_); }
  Object& as_object() { return std::get<Object>(data_); }

  /* The member named key of an object, or nullptr. */
  const Value* find(std::string_view key) const {
    if (!is_object()) return nullptr;
    for (const Member& member : as_object()) {
      if (member.first == key) return &member.second;
    }
    return nullptr;
  }
  /* The member named key; throws std::out_of_range naming it when absent. */
  const Value& at(std::string_view key) const {
    const Value* value = find(key);
    if (value == nullptr) throw std::out_of_range("no key '" + std::string(key) + "'");
    return *value;
  }

  /* "null", "a boolean", "an integer", "a number", "a string", ... */
  const char* kind_name() const noexcept {
    static const char* const names[] = {"null",     "a boolean", "an integer", "a number",
                                        "a string", "an array",  "an object"};
    return names[data_.index()];
  }

  friend bool operator==(const Value& a, const Value& b) { return a.data_ == b.data_; }
  friend bool operator!=(const Value& a, const Value& b) { return !(a == b); }

 private:
  std::variant<std::nullptr_t, bool, int64_t, double, std::string, Array, Object> data_;
};

/* Appends code point code (at most U+10FFFF, no surrogate) as UTF-8. */
inline void append_utf8(std::string& out, uint32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

/* The length of the well-formed UTF-8 sequence that starts at text[i] (1 to
 * 4), or 0 when none does (a stray continuation byte, an overlong form, a
 * surrogate, a code point past U+10FFFF, a sequence cut short). */
inline std::size_t utf8_sequence_length(std::string_view text, std::size_t i) noexcept {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // no overlong forms
    if (lead == 0xED) high = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(1) < low || byte(1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (byte(k) < 0x80 || byte(k) > 0xBF) return 0;
  }
  return length;
}

/* Appends text as a JSON string, quotes included: '"', '\\' and the control
 * characters escaped. With replace_invalid_utf8, a byte that starts no
 * well-formed UTF-8 sequence becomes \ufffd, so the output is valid JSON
 * whatever the input (jsonl's lines); without, bytes of 0x80 and more are
 * copied as they are. */
inline void append_string(std::string& out, std::string_view text,
                          bool replace_invalid_utf8 = false) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80 && replace_invalid_utf8) {
      const std::size_t length = utf8_sequence_length(text, i);
      if (length == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out.append(text.substr(i, length));
        i += length;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
}

namespace detail {

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Value parse_document() {
    skip_space();
    Value value = parse_value(0);
    skip_space();
    if (at_ < text_.size()) fail("unexpected text after the value");
    return value;
  }

 private:
  static constexpr int kMaxDepth = 64;

  [[noreturn]] void fail(const std::string& what) const { throw ParseError(what, at_); }

  void skip_space() noexcept {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r'))
      ++at_;
  }

  bool consume(std::string_view word) noexcept {
    if (text_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }

  Value parse_value(int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than 64 levels");
    if (at_ >= text_.size()) fail("unexpected end of text");
    const char c = text_[at_];
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (c == '"') return Value(parse_string());
    if (consume("true")) return Value(true);
    if (consume("false")) return Value(false);
    if (consume("null")) return Value(nullptr);
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number();
    fail("unexpected character");
  }

  Value parse_object(int depth) {
    ++at_;  // {
    Object object;
    skip_space();
    if (consume("}")) return Value(std::move(object));
    for (;;) {
      skip_space();
      if (at_ >= text_.size() || text_[at_] != '"') fail("expected a key string");
      const std::size_t key_at = at_;
      std::string key = parse_string();
      for (const Member& member : object) {
        if (member.first == key) throw ParseError("duplicate key '" + key + "'", key_at);
      }
      skip_space();
      if (!consume(":")) fail("expected ':'");
      skip_space();
      Value value = parse_value(depth + 1);
      object.emplace_back(std::move(key), std::move(value));
      skip_space();
      if (consume(",")) continue;
      if (consume("}")) return Value(std::move(object));
      fail("expected ',' or '}'");
    }
  }

  Value parse_array(int depth) {
    ++at_;  // [
    Array array;
    skip_space();
    if (consume("]")) return Value(std::move(array));
    for (;;) {
      skip_space();
      array.push_back(parse_value(depth + 1));
      skip_space();
      if (consume(",")) continue;
      if (consume("]")) return Value(std::move(array));
      fail("expected ',' or ']'");
    }
  }

  unsigned hex4() {
    if (at_ + 4 > text_.size()) fail("short \\u escape");
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[at_++];
      code <<= 4;
      if (h >= '0' && h <= '9')
        code |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f')
        code |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        code |= static_cast<unsigned>(h - 'A' + 10);
      else
        fail("bad \\u escape");
    }
    return code;
  }

  std::string parse_string() {
    ++at_;  // "
    std::string out;
    for (;;) {
      if (at_ >= text_.size()) fail("unterminated string");
      const char c = text_[at_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= text_.size()) fail("unterminated string");
      const char e = text_[at_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned code = hex4();
          if (code >= 0xD800 && code <= 0xDBFF) {
            if (!consume("\\u")) fail("lone surrogate in \\u escape");
            const unsigned low = hex4();
            if (low < 0xDC00 || low > 0xDFFF) fail("bad surrogate pair");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          } else if (code >= 0xDC00 && code <= 0xDFFF) {
            fail("lone surrogate in \\u escape");
          }
          json::append_utf8(out, code);
          break;
        }
        default:
          fail("bad escape");
      }
    }
  }

  Value parse_number() {
    const std::size_t start = at_;
    bool integer = true;
    if (text_[at_] == '-') ++at_;
    auto digits = [&] {
      const std::size_t from = at_;
      while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') ++at_;
      return at_ - from;
    };
    if (at_ < text_.size() && text_[at_] == '0') {
      ++at_;
    } else if (digits() == 0) {
      fail("bad number");
    }
    if (at_ < text_.size() && text_[at_] == '.') {
      integer = false;
      ++at_;
      if (digits() == 0) fail("bad number");
    }
    if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
      integer = false;
      ++at_;
      if (at_ < text_.size() && (text_[at_] == '+' || text_[at_] == '-')) ++at_;
      if (digits() == 0) fail("bad number");
    }
    const std::string literal(text_.substr(start, at_ - start));
    if (integer) {
      errno = 0;
      char* end = nullptr;
      const long long v = std::strtoll(literal.c_str(), &end, 10);
      if (errno == 0) return Value(static_cast<int64_t>(v));
      // Beyond int64: kept as a number.
    }
    const double d = std::strtod(literal.c_str(), nullptr);
    if (!std::isfinite(d)) {
      at_ = start;
      fail("number out of range");
    }
    return Value(d);
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

inline void serialize_to(std::string& out, const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kNull:
      out += "null";
      return;
    case Value::Kind::kBool:
      out += value.as_bool() ? "true" : "false";
      return;
    case Value::Kind::kInteger:
      out += std::to_string(value.as_integer());
      return;
    case Value::Kind::kNumber: {
      char text[32];
      std::snprintf(text, sizeof text, "%.17g", value.as_number());
      out += text;
      return;
    }
    case Value::Kind::kString:
      append_string(out, value.as_string());
      return;
    case Value::Kind::kArray: {
      out += '[';
      bool first = true;
      for (const Value& item : value.as_array()) {
        if (!first) out += ',';
        first = false;
        serialize_to(out, item);
      }
      out += ']';
      return;
    }
    case Value::Kind::kObject: {
      out += '{';
      bool first = true;
      for (const Member& member : value.as_object()) {
        if (!first) out += ',';
        first = false;
        append_string(out, member.first);
        out += ':';
        serialize_to(out, member.second);
      }
      out += '}';
      return;
    }
  }
}

}  // namespace detail

/* Parses one JSON document; throws ParseError. */
inline Value parse(std::string_view text) { return detail::Parser(text).parse_document(); }

/* Compact JSON text of value. */
inline std::string serialize(const Value& value) {
  std::string out;
  detail::serialize_to(out, value);
  return out;
}

}  // namespace tokenspeed::metrics::kit::json

#endif  // TOKENSPEED_KIT_JSON_HPP
