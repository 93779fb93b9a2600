// strict_json_test.cpp — unit tests of host/strict_json: duplicate keys at any
// depth (escaped spellings too) are rejected with their key path; invalid JSON
// is rejected with its position.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include <boost/json.hpp>

#include "core/strict_json.hpp"

using tokenspeed::metrics::parse_strict_json;
using tokenspeed::metrics::StrictJsonError;

namespace {

StrictJsonError parse_error(const std::string& text) {
  try {
    parse_strict_json(text);
  } catch (const StrictJsonError& error) {
    return error;
  }
  FAIL("parse_strict_json accepted: " << text);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("a well-formed document parses to the same value as boost::json::parse",
          "[strict_json]") {
  const std::string text =
      R"({"a":{"endpoint":"https://x/\u00e9","queue_size":10000,"ratio":0.5,"big":18446744073709551615},)"
      R"("b":[1,-2,{"c":null,"d":true}],"e":"line\nbreak"})";
  CHECK(parse_strict_json(text) == boost::json::parse(text));
}

TEST_CASE("a long key and string split by the parser are kept whole", "[strict_json]") {
  const std::string key(5000, 'k');
  const std::string value(70000, 'v');
  const std::string text = "{\"" + key + "\":\"" + value + "\"}";
  const boost::json::value parsed = parse_strict_json(text);
  CHECK(parsed.as_object().at(key).as_string() == value);
}

TEST_CASE("duplicate keys at the top level are rejected with the key", "[strict_json]") {
  const StrictJsonError error = parse_error(R"({"jsonl":{},"jsonl":{}})");
  CHECK(error.kind() == StrictJsonError::Kind::duplicate_key);
  CHECK(error.key_path() == "jsonl");
  CHECK(error.top_level_key() == "jsonl");
  CHECK(std::string(error.what()).find("duplicate key") != std::string::npos);
}

TEST_CASE("duplicate keys at any depth are rejected with the key path", "[strict_json]") {
  const StrictJsonError nested = parse_error(R"({"out":{"tls":{"ca":"a","ca":"b"}}})");
  CHECK(nested.kind() == StrictJsonError::Kind::duplicate_key);
  CHECK(nested.key_path() == "out.tls.ca");
  CHECK(nested.top_level_key() == "out");

  const StrictJsonError in_array =
      parse_error(R"({"out":{"targets":[{"port":1},{"host":"h","port":2,"port":3}]}})");
  CHECK(in_array.key_path() == "out.targets[1].port");

  const StrictJsonError top_array = parse_error(R"([[0],{"x":1,"x":2}])");
  CHECK(top_array.key_path() == "[1].x");
  CHECK(top_array.top_level_key().empty());
}

TEST_CASE("escaped duplicate keys are rejected too", "[strict_json]") {
  const StrictJsonError error = parse_error(R"({"out":{"port":1,"\u0070ort":2}})");
  CHECK(error.kind() == StrictJsonError::Kind::duplicate_key);
  CHECK(error.key_path() == "out.port");
}

TEST_CASE("the same key in different objects is not a duplicate", "[strict_json]") {
  CHECK_NOTHROW(
      parse_strict_json(R"({"a":{"k":1,"n":{"k":2}},"b":{"k":1},"c":[{"k":1},{"k":2}]})"));
}

TEST_CASE("invalid JSON is rejected with its position", "[strict_json]") {
  for (const std::string text : {"", "{", "{\"a\":}", "{} x", "{\"a\":1,}", "{} // comment",
                                 "{\"a\":1}\n{\"b\":2}", "{'a':1}"}) {
    INFO(text);
    const StrictJsonError error = parse_error(text);
    CHECK(error.kind() == StrictJsonError::Kind::invalid_json);
    CHECK(std::string(error.what()).rfind("invalid JSON: ", 0) == 0);
    CHECK(std::string(error.what()).find("line ") != std::string::npos);
  }
  const StrictJsonError error = parse_error("{\n  \"a\": 1,\n  \"b\": ]\n}");
  CHECK(std::string(error.what()).find("line 3") != std::string::npos);
}

TEST_CASE("surrounding whitespace is allowed", "[strict_json]") {
  CHECK(parse_strict_json("  \n{\"a\":1}\n\n") == boost::json::parse("{\"a\":1}"));
}

TEST_CASE("a number too large for a double is invalid JSON, not infinity", "[strict_json]") {
  // Found by the strict_json fuzzer: 1e400 read as infinity, which
  // Boost.JSON writes back as "Infinity", text no plugin can parse.
  for (const std::string text : {"{\"a\":1e400}", "[-1.5e343]", "{\"x\":{\"y\":[1,2e308]}}"}) {
    INFO(text);
    const StrictJsonError error = parse_error(text);
    CHECK(error.kind() == StrictJsonError::Kind::invalid_json);
    CHECK(std::string(error.what()).find("exponent overflow") != std::string::npos);
  }
  // Underflow reads as zero (or a subnormal), which is harmless.
  CHECK(parse_strict_json("[1e-400]") == boost::json::parse("[0.0]"));
  CHECK(parse_strict_json("[1.7976931348623157e308]").at(0).as_double() > 1e308);
}

TEST_CASE("a decimal number reads as the double nearest to it", "[strict_json]") {
  // Boost.JSON 1.81's own conversion reads some decimals as a neighbouring
  // double (996.8988906033817 as ...816): a views file's bucket bound would
  // then not be the bound written, and an observation equal to it would fall
  // in the next bucket. strtod is correctly rounded.
  for (const char* number :
       {"996.8988906033817", "0.1", "0.3", "123456789.125", "1e-09", "2.2250738585072014e-308",
        "1.7976931348623157e308", "-7.0064923216240854e-46", "5e-324", "0.30000000000000004",
        "2.2250738585072011e-308", "4.0661838611e-309"}) {
    INFO(number);
    const boost::json::value parsed = parse_strict_json(std::string("[") + number + "]");
    CHECK(parsed.at(0).as_double() == std::strtod(number, nullptr));
  }
}
