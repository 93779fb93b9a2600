// strict_json_fuzzer.cpp — fuzzes parse_strict_json (host/core/strict_json)
// with arbitrary text. It must agree with Boost.JSON on what is JSON (but for
// numbers too large for a double, which it rejects), fail only with StrictJsonError, name a key
// path for every duplicate, and accept every document Boost.JSON writes (which has no duplicates)
// as the same value.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <boost/json.hpp>

#include "core/strict_json.hpp"
#include "fuzz_support.hpp"

namespace {

using tokenspeed::metrics::parse_strict_json;
using tokenspeed::metrics::StrictJsonError;

// Doubles within eight units in the last place of the larger (subnormals
// too, where a relative bound would not hold): parse_strict_json reads a
// number as the nearest double, Boost.JSON 1.81 sometimes as one up to three
// places away (seen in two million random decimals).
bool close_doubles(double x, double y) {
  if (x == y) return true;
  const double larger = std::max(std::fabs(x), std::fabs(y));
  return std::fabs(x - y) <= 8 * (std::nextafter(larger, INFINITY) - larger);
}

// Equal values, doubles as close_doubles says.
bool same_value(const boost::json::value& a, const boost::json::value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case boost::json::kind::double_: {
      const double x = a.get_double();
      const double y = b.get_double();
      return close_doubles(x, y);
    }
    case boost::json::kind::array: {
      const auto& left = a.get_array();
      const auto& right = b.get_array();
      if (left.size() != right.size()) return false;
      for (std::size_t i = 0; i < left.size(); ++i) {
        if (!same_value(left[i], right[i])) return false;
      }
      return true;
    }
    case boost::json::kind::object: {
      const auto& left = a.get_object();
      const auto& right = b.get_object();
      if (left.size() != right.size()) return false;
      for (const auto& member : left) {
        const boost::json::value* other = right.if_contains(member.key());
        if (other == nullptr || !same_value(member.value(), *other)) return false;
      }
      return true;
    }
    default:
      return a == b;
  }
}

// True when every number of value is finite.
bool finite(const boost::json::value& value) {
  switch (value.kind()) {
    case boost::json::kind::double_:
      return std::isfinite(value.get_double());
    case boost::json::kind::array:
      for (const boost::json::value& element : value.get_array()) {
        if (!finite(element)) return false;
      }
      return true;
    case boost::json::kind::object:
      for (const auto& member : value.get_object()) {
        if (!finite(member.value())) return false;
      }
      return true;
    default:
      return true;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  boost::json::error_code ec;
  const boost::json::value reference = boost::json::parse(text, ec);
  if (!ec && !finite(reference)) ec = boost::json::error::exponent_overflow;

  boost::json::value strict;
  bool parsed = false;
  try {
    strict = parse_strict_json(text);
    parsed = true;
  } catch (const StrictJsonError& error) {
    static_cast<void>(error.top_level_key());
    if (error.kind() == StrictJsonError::Kind::duplicate_key) {
      // The first fault in reading order is reported: a duplicate may come
      // before the text turns invalid.
      FUZZ_CHECK(!error.path().empty());
      FUZZ_CHECK(!error.key_path().empty() || error.path().back().empty());
    } else {
      FUZZ_CHECK(ec);  // what Boost.JSON accepts is not invalid here
      FUZZ_CHECK(std::string_view(error.what()).starts_with("invalid JSON: "));
    }
  }
  if (parsed) {
    FUZZ_CHECK(!ec);
    FUZZ_CHECK(same_value(strict, reference));
  }
  // What Boost.JSON writes has unique keys: strictly the same value.
  if (!ec) {
    const std::string written = boost::json::serialize(reference);
    const boost::json::value again = parse_strict_json(written);
    FUZZ_CHECK(same_value(again, reference));
  }
  return 0;
}
