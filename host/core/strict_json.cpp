// strict_json.cpp — a Boost.JSON basic_parser handler that builds the value on
// a value_stack and keeps one key set per open object. The only translation
// unit that includes basic_parser_impl.hpp. Never used on the hot path.
#include "core/strict_json.hpp"

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/error.hpp>
#include <boost/json/value_stack.hpp>

#include <charconv>
#include <cmath>
#include <string>
#include <unordered_set>
#include <utility>

namespace tokenspeed::metrics {
namespace {

// Builds a boost::json::value and remembers where the parser is, so that a
// duplicate key can be reported with its full path. Single-threaded.
class StrictHandler {
 public:
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);

  bool on_document_begin(boost::json::error_code&) {
    stack_.reset();
    return true;
  }
  bool on_document_end(boost::json::error_code&) { return true; }

  bool on_object_begin(boost::json::error_code&) {
    frames_.push_back(Frame{true, {}, 0, {}});
    return true;
  }
  bool on_object_end(std::size_t n, boost::json::error_code&) {
    stack_.push_object(n);
    frames_.pop_back();
    value_done();
    return true;
  }
  bool on_array_begin(boost::json::error_code&) {
    frames_.push_back(Frame{false, {}, 0, {}});
    return true;
  }
  bool on_array_end(std::size_t n, boost::json::error_code&) {
    stack_.push_array(n);
    frames_.pop_back();
    value_done();
    return true;
  }

  bool on_key_part(boost::json::string_view s, std::size_t, boost::json::error_code&) {
    stack_.push_chars(s);
    key_.append(s.data(), s.size());
    return true;
  }
  bool on_key(boost::json::string_view s, std::size_t, boost::json::error_code& ec) {
    key_.append(s.data(), s.size());
    Frame& frame = frames_.back();
    frame.current_key = key_;
    if (!frame.keys.insert(key_).second) {
      duplicate_ = true;
      duplicate_key_ = std::move(key_);
      key_.clear();
      duplicate_path_ = path();
      ec = boost::json::error::syntax;
      return false;
    }
    key_.clear();
    stack_.push_key(s);
    return true;
  }

  bool on_string_part(boost::json::string_view s, std::size_t, boost::json::error_code&) {
    stack_.push_chars(s);
    return true;
  }
  bool on_string(boost::json::string_view s, std::size_t, boost::json::error_code&) {
    stack_.push_string(s);
    value_done();
    return true;
  }
  bool on_number_part(boost::json::string_view s, boost::json::error_code&) {
    number_.append(s.data(), s.size());
    return true;
  }
  bool on_int64(std::int64_t i, boost::json::string_view, boost::json::error_code&) {
    number_.clear();
    stack_.push_int64(i);
    value_done();
    return true;
  }
  bool on_uint64(std::uint64_t u, boost::json::string_view, boost::json::error_code&) {
    number_.clear();
    stack_.push_uint64(u);
    value_done();
    return true;
  }
  bool on_double(double d, boost::json::string_view s, boost::json::error_code& ec) {
    // 1e400 reads as infinity, which Boost.JSON would write back as
    // "Infinity", not JSON: a plugin would be handed text it cannot parse.
    if (!std::isfinite(d)) {
      ec = boost::json::error::exponent_overflow;
      return false;
    }
    // Boost.JSON 1.81 reads some decimals as a neighbouring double
    // (996.8988906033817 as ...816); from_chars gives the nearest one, in
    // any locale. An underflow (1e-400) keeps Boost.JSON's zero.
    number_.append(s.data(), s.size());
    double nearest = d;
    std::from_chars(number_.data(), number_.data() + number_.size(), nearest);
    number_.clear();
    stack_.push_double(nearest);
    value_done();
    return true;
  }
  bool on_bool(bool b, boost::json::error_code&) {
    stack_.push_bool(b);
    value_done();
    return true;
  }
  bool on_null(boost::json::error_code&) {
    stack_.push_null();
    value_done();
    return true;
  }
  bool on_comment_part(boost::json::string_view, boost::json::error_code&) { return true; }
  bool on_comment(boost::json::string_view, boost::json::error_code&) { return true; }

  boost::json::value release() { return stack_.release(); }
  bool duplicate() const noexcept { return duplicate_; }
  const std::string& duplicate_key() const noexcept { return duplicate_key_; }
  const std::vector<std::string>& duplicate_path() const noexcept { return duplicate_path_; }

  // The path to the value being parsed now.
  std::vector<std::string> path() const {
    std::vector<std::string> result;
    result.reserve(frames_.size());
    for (const Frame& frame : frames_) {
      if (frame.is_object) {
        result.push_back(frame.current_key);
      } else {
        result.push_back("[" + std::to_string(frame.count) + "]");
      }
    }
    return result;
  }

 private:
  struct Frame {
    bool is_object;
    std::unordered_set<std::string> keys;  // objects: keys seen so far
    std::size_t count;                     // arrays: elements completed
    std::string current_key;               // objects: key of the current member
  };

  void value_done() noexcept {
    if (!frames_.empty() && !frames_.back().is_object) ++frames_.back().count;
  }

  boost::json::value_stack stack_;
  std::vector<Frame> frames_;
  std::string key_;
  std::string number_;  // the text of a number split by the parser
  bool duplicate_ = false;
  std::string duplicate_key_;
  std::vector<std::string> duplicate_path_;
};

std::string line_and_column(std::string_view text, std::size_t offset) {
  if (offset > text.size()) offset = text.size();
  std::size_t line = 1;
  std::size_t column = 1;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

}  // namespace

StrictJsonError::StrictJsonError(Kind kind, std::vector<std::string> path,
                                 const std::string& message)
    : std::runtime_error(message), kind_(kind), path_(std::move(path)) {}

std::string StrictJsonError::key_path() const { return render_key_path(path_); }

std::string StrictJsonError::top_level_key() const {
  if (path_.empty() || (!path_.front().empty() && path_.front().front() == '[')) return {};
  return path_.front();
}

std::string render_key_path(const std::vector<std::string>& path) {
  std::string rendered;
  for (const std::string& part : path) {
    if (!part.empty() && part.front() == '[') {
      rendered += part;
    } else {
      if (!rendered.empty()) rendered += '.';
      rendered += part;
    }
  }
  return rendered;
}

boost::json::value parse_strict_json(std::string_view text) {
  boost::json::basic_parser<StrictHandler> parser(boost::json::parse_options{});
  boost::json::error_code ec;
  const std::size_t consumed = parser.write_some(false, text.data(), text.size(), ec);
  if (parser.handler().duplicate()) {
    throw StrictJsonError(StrictJsonError::Kind::duplicate_key, parser.handler().duplicate_path(),
                          "duplicate key '" + parser.handler().duplicate_key() + "'");
  }
  if (!ec && consumed < text.size()) ec = boost::json::error::extra_data;
  if (ec) {
    throw StrictJsonError(
        StrictJsonError::Kind::invalid_json, {},
        "invalid JSON: " + ec.message() + " at " + line_and_column(text, consumed));
  }
  return parser.handler().release();
}

}  // namespace tokenspeed::metrics
