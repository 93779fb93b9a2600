// strict_json.hpp — parses configuration JSON with Boost.JSON and rejects
// duplicate object keys at any depth (escaped spellings included), naming the
// key path. Startup only; never used on the hot path.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

namespace tokenspeed::metrics {

// A parse failure: invalid JSON, or a key that appears twice in one object.
// path() holds the object keys and array indices leading to the fault
// ("a", "b", "[2]", "c"); key_path() renders it as "a.b[2].c".
class StrictJsonError : public std::runtime_error {
 public:
  enum class Kind { invalid_json, duplicate_key };

  StrictJsonError(Kind kind, std::vector<std::string> path, const std::string& message);

  Kind kind() const noexcept { return kind_; }
  const std::vector<std::string>& path() const noexcept { return path_; }
  std::string key_path() const;
  // The key at the top level of the document that contains the fault, "" if
  // the fault is not inside a top-level object member.
  std::string top_level_key() const;

 private:
  Kind kind_;
  std::vector<std::string> path_;
};

// Renders a path as "a.b[2].c".
std::string render_key_path(const std::vector<std::string>& path);

// Parses one complete JSON document. Throws StrictJsonError on invalid JSON
// (message "invalid JSON: <reason> at line L, column C") or on a duplicate key
// (message "duplicate key '<key>'", path() naming it). Comments, trailing
// commas and other extensions are rejected, and so is a number too large for
// a double ("exponent overflow"), which would otherwise read as infinity.
boost::json::value parse_strict_json(std::string_view text);

}  // namespace tokenspeed::metrics
