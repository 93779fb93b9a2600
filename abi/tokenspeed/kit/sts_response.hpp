/*
 * tokenspeed/kit/sts_response.hpp — what AWS STS answers to AssumeRole:
 * the temporary credentials of a 200 (AccessKeyId, SecretAccessKey,
 * SessionToken, Expiration under AssumeRoleResponse/AssumeRoleResult/
 * Credentials) and the code and message of a refusal (ErrorResponse/Error),
 * read by a minimal, strict XML reader: elements, attributes, character
 * data, the five named entities, character references and comments; no
 * DOCTYPE, CDATA or processing instruction but the XML declaration. A
 * malformed answer is an error naming what is wrong, never quoting a value.
 *
 *   kit::StsTemporaryCredentials role;
 *   std::string problem = kit::parse_assume_role_response(response.body, role);
 *   std::string why = kit::sts_error_summary(refusal.body);  // "AccessDenied: ..."
 *
 * Header-only C++17, no library. Never used on the event path.
 */
#ifndef TOKENSPEED_KIT_STS_RESPONSE_HPP
#define TOKENSPEED_KIT_STS_RESPONSE_HPP

#include <tokenspeed/kit/json.hpp>
#include <tokenspeed/kit/sigv4.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenspeed::metrics::kit {

/* Temporary credentials and when they expire (UTC). */
struct StsTemporaryCredentials {
  SigV4Credentials credentials;  // with a session token
  std::chrono::system_clock::time_point expiration{};
};

namespace detail {

/* One element of an XML document: its name as written (with any prefix),
 * its character data (entities decoded, the text between its children
 * joined) and its child elements. Attributes are checked, not kept. */
struct XmlElement {
  std::string name;
  std::string text;
  std::vector<XmlElement> children;

  /* The number of children named name. */
  std::size_t count(std::string_view child_name) const noexcept {
    std::size_t n = 0;
    for (const XmlElement& child : children) n += child.name == child_name ? 1 : 0;
    return n;
  }
  /* The first child named name, or null. */
  const XmlElement* child(std::string_view child_name) const noexcept {
    for (const XmlElement& child : children) {
      if (child.name == child_name) return &child;
    }
    return nullptr;
  }
  /* Overwrites the text of this element and of its descendants (it may
   * hold a secret) before it is freed. */
  void forget() noexcept {
    wipe(text);
    for (XmlElement& child : children) child.forget();
  }
};

/* Reads one XML document into root; returns "" or why not (an offset and
 * what was expected, never the text). */
class XmlReader {
 public:
  explicit XmlReader(std::string_view text) : text_(text) {}

  std::string read(XmlElement& root) {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // a UTF-8 byte order mark
    skip_space();
    if (text_.substr(pos_, 5) == "<?xml") {
      const std::size_t end = text_.find("?>", pos_);
      if (end == std::string_view::npos) return fail("an unterminated XML declaration");
      pos_ = end + 2;
    }
    if (!skip_misc()) return problem_;
    if (text_.substr(pos_, 2) == "<!" || text_.substr(pos_, 2) == "<?")
      return fail("markup other than elements and comments");  // a DOCTYPE: entities
    if (pos_ >= text_.size() || text_[pos_] != '<') return fail("no root element");
    if (!element(root, 0)) return problem_;
    if (!skip_misc()) return problem_;
    if (pos_ != text_.size()) return fail("text after the root element");
    return {};
  }

 private:
  static constexpr int kMaxDepth = 32;

  std::string fail(std::string_view what) {
    problem_ = std::string(what) + " at byte " + std::to_string(pos_);
    return problem_;
  }
  bool failed(std::string_view what) {
    fail(what);
    return false;
  }

  static bool space(char c) noexcept { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
  static bool name_char(char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.' || c == ':' || static_cast<unsigned char>(c) >= 0x80;
  }

  void skip_space() noexcept {
    while (pos_ < text_.size() && space(text_[pos_])) ++pos_;
  }

  // Blanks and comments between elements.
  bool skip_misc() {
    for (;;) {
      skip_space();
      if (text_.substr(pos_, 4) != "<!--") return true;
      if (!comment()) return false;
    }
  }

  bool comment() {
    const std::size_t end = text_.find("-->", pos_ + 4);
    if (end == std::string_view::npos) return failed("an unterminated comment");
    pos_ = end + 3;
    return true;
  }

  bool name(std::string& out) {
    const std::size_t start = pos_;
    while (pos_ < text_.size() && name_char(text_[pos_])) ++pos_;
    if (pos_ == start) return failed("no name");
    out.assign(text_.substr(start, pos_ - start));
    return true;
  }

  // &...; at pos_, appended to out decoded.
  bool reference(std::string& out) {
    const std::size_t end = text_.find(';', pos_);
    if (end == std::string_view::npos || end - pos_ > 12) return failed("a bad entity reference");
    const std::string_view entity = text_.substr(pos_ + 1, end - pos_ - 1);
    static constexpr std::pair<std::string_view, char> kNamed[] = {
        {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
    for (const auto& [named, c] : kNamed) {
      if (entity == named) {
        out += c;
        pos_ = end + 1;
        return true;
      }
    }
    if (entity.size() < 2 || entity[0] != '#') return failed("an unknown entity");
    const bool hex = entity[1] == 'x';
    const std::string_view digits = entity.substr(hex ? 2 : 1);
    if (digits.empty()) return failed("a bad character reference");
    uint32_t code = 0;
    for (const char c : digits) {
      const int digit = hex ? hex_digit(c) : (c >= '0' && c <= '9' ? c - '0' : -1);
      if (digit < 0) return failed("a bad character reference");
      code = code * (hex ? 16 : 10) + static_cast<uint32_t>(digit);
      if (code > 0x10FFFF) return failed("a bad character reference");
    }
    if (code == 0 || (code >= 0xD800 && code <= 0xDFFF)) return failed("a bad character reference");
    json::append_utf8(out, code);
    pos_ = end + 1;
    return true;
  }

  // name="value" pairs up to '>' or "/>"; sets empty for the latter.
  bool attributes(bool& empty) {
    std::vector<std::string> seen;
    for (;;) {
      const std::size_t before = pos_;
      skip_space();
      if (pos_ >= text_.size()) return failed("an unterminated start tag");
      if (text_[pos_] == '>') {
        ++pos_;
        empty = false;
        return true;
      }
      if (text_.substr(pos_, 2) == "/>") {
        pos_ += 2;
        empty = true;
        return true;
      }
      if (pos_ == before) return failed("no blank before an attribute");
      std::string attribute;
      if (!name(attribute)) return false;
      for (const std::string& other : seen) {
        if (other == attribute) return failed("a repeated attribute");
      }
      seen.push_back(attribute);
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != '=') return failed("no '=' after an attribute");
      ++pos_;
      skip_space();
      if (pos_ >= text_.size() || (text_[pos_] != '"' && text_[pos_] != '\''))
        return failed("an unquoted attribute value");
      const char quote = text_[pos_++];
      std::string ignored;
      while (pos_ < text_.size() && text_[pos_] != quote) {
        if (text_[pos_] == '<') return failed("'<' in an attribute value");
        if (text_[pos_] == '&') {
          if (!reference(ignored)) return false;
        } else {
          ++pos_;
        }
      }
      if (pos_ >= text_.size()) return failed("an unterminated attribute value");
      ++pos_;
    }
  }

  bool element(XmlElement& out, int depth) {
    if (depth >= kMaxDepth) return failed("elements nested too deep");
    ++pos_;  // '<'
    if (!name(out.name)) return false;
    bool empty = false;
    if (!attributes(empty)) return false;
    if (empty) return true;
    for (;;) {
      if (pos_ >= text_.size()) return failed("an unclosed element");
      const char c = text_[pos_];
      if (c == '&') {
        if (!reference(out.text)) return false;
        continue;
      }
      if (c != '<') {
        out.text += c;
        ++pos_;
        continue;
      }
      if (text_.substr(pos_, 4) == "<!--") {
        if (!comment()) return false;
        continue;
      }
      if (text_.substr(pos_, 2) == "</") {
        pos_ += 2;
        std::string closing;
        if (!name(closing)) return false;
        if (closing != out.name) return failed("an end tag that does not match its start tag");
        skip_space();
        if (pos_ >= text_.size() || text_[pos_] != '>') return failed("an unterminated end tag");
        ++pos_;
        return true;
      }
      if (text_.substr(pos_, 2) == "<!" || text_.substr(pos_, 2) == "<?")
        return failed("markup other than elements and comments");
      out.children.emplace_back();
      if (!element(out.children.back(), depth + 1)) return false;
    }
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  std::string problem_;
};

/* text without leading and trailing XML blanks. */
inline std::string_view xml_trimmed(std::string_view text) noexcept {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\r' ||
                           text.front() == '\n'))
    text.remove_prefix(1);
  while (!text.empty() &&
         (text.back() == ' ' || text.back() == '\t' || text.back() == '\r' || text.back() == '\n'))
    text.remove_suffix(1);
  return text;
}

/* The one child element of parent named name, its text trimmed into out;
 * returns "" or why not (naming the element, never the text). */
inline std::string only_child_text(const XmlElement& parent, std::string_view name,
                                   std::string& out) {
  const std::size_t n = parent.count(name);
  const std::string quoted = "<" + std::string(name) + ">";
  if (n == 0) return "no " + quoted + " in <" + parent.name + ">";
  if (n > 1) return "more than one " + quoted + " in <" + parent.name + ">";
  const XmlElement& child = *parent.child(name);
  if (!child.children.empty()) return quoted + " holds elements";
  out.assign(xml_trimmed(child.text));
  if (out.empty()) return "an empty " + quoted;
  return {};
}

inline bool two_digits(std::string_view text, std::size_t at, int& out) noexcept {
  if (at + 2 > text.size() || text[at] < '0' || text[at] > '9' || text[at + 1] < '0' ||
      text[at + 1] > '9')
    return false;
  out = (text[at] - '0') * 10 + (text[at + 1] - '0');
  return true;
}

/* Days from 1970-01-01 to year-month-day of the proleptic Gregorian
 * calendar (Howard Hinnant's days_from_civil). */
inline int64_t days_from_civil(int64_t year, int month, int day) noexcept {
  year -= month <= 2 ? 1 : 0;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const int64_t year_of_era = year - era * 400;
  const int64_t day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

}  // namespace detail

/* An ISO 8601 UTC time as STS writes Expiration, "2019-11-09T13:34:41Z",
 * maybe with a fraction of a second ("...41.123Z", dropped); into out.
 * Returns false for anything else (another zone, a date that does not
 * exist). */
inline bool parse_iso8601_utc(std::string_view text, std::chrono::system_clock::time_point& out) {
  if (text.size() < 20 || text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' ||
      text[16] != ':' || text.back() != 'Z')
    return false;
  int century = 0, year_in_century = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!detail::two_digits(text, 0, century) || !detail::two_digits(text, 2, year_in_century) ||
      !detail::two_digits(text, 5, month) || !detail::two_digits(text, 8, day) ||
      !detail::two_digits(text, 11, hour) || !detail::two_digits(text, 14, minute) ||
      !detail::two_digits(text, 17, second))
    return false;
  const std::string_view fraction = text.substr(19, text.size() - 20);
  if (!fraction.empty()) {
    if (fraction.size() < 2 || fraction[0] != '.') return false;
    for (const char c : fraction.substr(1)) {
      if (c < '0' || c > '9') return false;
    }
  }
  const int year = century * 100 + year_in_century;
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (month < 1 || month > 12 || day < 1 || day > kDays[month - 1] + (month == 2 && leap ? 1 : 0) ||
      hour > 23 || minute > 59 || second > 60)
    return false;
  const int64_t seconds =
      detail::days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second;
  out = std::chrono::system_clock::time_point(std::chrono::seconds(seconds));
  return true;
}

/* The credentials of a 200 answer to AssumeRole into out. Returns "" or why
 * the answer is not one (naming the element, never a value): not XML, not
 * an AssumeRoleResponse, an element of Credentials missing, repeated or
 * empty, a key or token that could not go into a header, an Expiration that
 * is not a UTC time. */
inline std::string parse_assume_role_response(std::string_view xml, StsTemporaryCredentials& out) {
  out.credentials.forget();
  out.expiration = {};
  detail::XmlElement root;
  std::string problem = detail::XmlReader(xml).read(root);
  if (!problem.empty()) {
    root.forget();
    return "not XML: " + problem;
  }
  const auto done = [&](std::string why) {
    root.forget();
    if (!why.empty()) out.credentials.forget();
    return why;
  };
  if (root.name != "AssumeRoleResponse") return done("not an <AssumeRoleResponse>");
  if (root.count("AssumeRoleResult") != 1)
    return done("not one <AssumeRoleResult> in <AssumeRoleResponse>");
  const detail::XmlElement& result = *root.child("AssumeRoleResult");
  if (result.count("Credentials") != 1) return done("not one <Credentials> in <AssumeRoleResult>");
  const detail::XmlElement& credentials = *result.child("Credentials");
  problem = detail::only_child_text(credentials, "AccessKeyId", out.credentials.access_key_id);
  if (problem.empty())
    problem =
        detail::only_child_text(credentials, "SecretAccessKey", out.credentials.secret_access_key);
  if (problem.empty())
    problem = detail::only_child_text(credentials, "SessionToken", out.credentials.session_token);
  if (!problem.empty()) return done(problem);
  for (const char c : out.credentials.access_key_id) {
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
      return done("an <AccessKeyId> that is not letters and digits");
  }
  // Both go into headers: printable ASCII only.
  for (const std::string* secret :
       {&out.credentials.secret_access_key, &out.credentials.session_token}) {
    for (const char c : *secret) {
      if (c <= 0x20 || c >= 0x7f)
        return done(secret == &out.credentials.session_token
                        ? "a <SessionToken> with a blank or a byte outside printable ASCII"
                        : "a <SecretAccessKey> with a blank or a byte outside printable ASCII");
    }
  }
  std::string expiration;
  problem = detail::only_child_text(credentials, "Expiration", expiration);
  if (!problem.empty()) return done(problem);
  if (!parse_iso8601_utc(expiration, out.expiration))
    return done("an <Expiration> that is not a UTC time (YYYY-MM-DDTHH:MM:SSZ)");
  return done({});
}

/* What a refusal of STS says, for a log line: "Code: Message" of its
 * ErrorResponse/Error (printable ASCII, at most 200 bytes of the message),
 * or "" when the answer is not one. */
inline std::string sts_error_summary(std::string_view xml) {
  detail::XmlElement root;
  if (!detail::XmlReader(xml).read(root).empty() || root.name != "ErrorResponse") return {};
  const detail::XmlElement* error = root.child("Error");
  if (error == nullptr) return {};
  std::string code, message;
  if (!detail::only_child_text(*error, "Code", code).empty()) return {};
  (void)detail::only_child_text(*error, "Message", message);  // optional
  const auto printable = [](std::string_view text, std::size_t limit) {
    std::string out;
    for (const char c : text.substr(0, limit)) out += (c >= 0x20 && c < 0x7f) ? c : '.';
    return out;
  };
  std::string summary = printable(code, 64);
  if (!message.empty()) summary += ": " + printable(message, 200);
  return summary;
}

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_STS_RESPONSE_HPP
