// yaml_json_test.cpp — unit tests of host/config/yaml_json: a YAML tree read
// as the JSON it stands for (YAML 1.2 core-schema scalars, quoted scalars
// always strings, tags refused), and a JSON key path found back in the YAML.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "config/strict_yaml.hpp"
#include "config/yaml_json.hpp"

using namespace tokenspeed::metrics;

namespace {

boost::json::value json_of(const std::string& yaml) {
  return yaml_to_json(parse_strict_yaml(yaml));
}

// The value of "a: <plain>".
boost::json::value scalar(const std::string& plain) {
  return json_of("a: " + plain + "\n").as_object().at("a");
}

// The key path of the error reading yaml, "no error" when it reads.
std::string refused_key(const std::string& yaml, std::size_t* line = nullptr) {
  try {
    json_of(yaml);
  } catch (const StrictYamlError& error) {
    if (line != nullptr) *line = error.line();
    return error.key_path();
  }
  return "no error";
}

}  // namespace

TEST_CASE("plain scalars are read by the YAML 1.2 core schema") {
  for (const char* null_word : {"~", "null", "Null", "NULL", ""}) {
    INFO(null_word);
    CHECK(scalar(null_word).is_null());
  }
  CHECK(scalar("true") == true);
  CHECK(scalar("False") == false);
  CHECK(scalar("TRUE") == true);
  CHECK(scalar("42").as_int64() == 42);
  CHECK(scalar("-7").as_int64() == -7);
  CHECK(scalar("+7").as_int64() == 7);
  CHECK(scalar("0o17").as_int64() == 15);
  CHECK(scalar("0x1F").as_int64() == 31);
  CHECK(scalar("0.25").as_double() == 0.25);
  CHECK(scalar("-.5").as_double() == -0.5);
  CHECK(scalar("1.").as_double() == 1.0);
  CHECK(scalar("1e3").as_double() == 1000.0);
  CHECK(scalar("+2.5E-1").as_double() == 0.25);
  CHECK(scalar(".inf").as_double() == std::numeric_limits<double>::infinity());
  CHECK(scalar("+.Inf").as_double() == std::numeric_limits<double>::infinity());
  CHECK(scalar("-.INF").as_double() == -std::numeric_limits<double>::infinity());
  CHECK(std::isnan(scalar(".nan").as_double()));
  CHECK(std::isnan(scalar(".NaN").as_double()));
  // An empty plain scalar is null, also in a tree made without the parser.
  YamlNode empty;
  empty.kind = YamlNode::Kind::scalar;
  CHECK(yaml_to_json(empty).is_null());
}

TEST_CASE("what the core schema does not resolve stays a string, as YAML 1.1 words do") {
  for (const char* text : {"yes", "no", "on", "off", "y", "0b101", "1_000", "0x", "0o8", "-0x1",
                           "1e", ".", "1.2.3", "nan", "inf", "12:30", "tokenspeed:*"}) {
    INFO(text);
    const boost::json::value value = scalar(text);
    REQUIRE(value.is_string());
    CHECK(value.as_string() == text);
  }
}

TEST_CASE("a quoted or block scalar is always a string") {
  CHECK(scalar("'1'").as_string() == "1");
  CHECK(scalar("\"true\"").as_string() == "true");
  CHECK(scalar("'null'").as_string() == "null");
  CHECK(scalar("''").as_string() == "");
  CHECK(json_of("a: |\n  12\n").as_object().at("a").as_string() == "12\n");
}

TEST_CASE("integers take int64, then uint64, then a double, as Boost.JSON reads JSON") {
  CHECK(scalar("9223372036854775807").is_int64());
  CHECK(scalar("9223372036854775808").as_uint64() == 9223372036854775808ULL);
  CHECK(scalar("0xFFFFFFFFFFFFFFFF").as_uint64() == std::numeric_limits<std::uint64_t>::max());
  CHECK(scalar("100000000000000000000").as_double() == 1e20);
  CHECK(scalar("-100000000000000000000").as_double() == -1e20);
  CHECK(scalar("100000000000000000000") ==
        boost::json::parse("100000000000000000000"));  // as the JSON form reads it
}

TEST_CASE("a number out of the range of a double is refused with its key path and line") {
  std::size_t line = 0;
  CHECK(refused_key("a:\n  - 1\n  - 1e999\n", &line) == "a[1]");
  CHECK(line == 3);
  CHECK(refused_key("a: " + std::string(400, '9') + "\n") == "a");
  CHECK(refused_key("a: 0x1FFFFFFFFFFFFFFFF\n") == "a");
}

TEST_CASE("an explicit tag is refused, naming the key, since it could change a value's type") {
  std::size_t line = 0;
  CHECK(refused_key("a:\n  b: !!str 1\n", &line) == "a.b");
  CHECK(line == 2);
  CHECK(refused_key("a: !custom x\n") == "a");
  CHECK(refused_key("a: !!seq [1]\n") == "a");
  CHECK(refused_key("!!map {a: 1}\n") == "");
}

TEST_CASE("mappings and sequences become objects and arrays in the file's order") {
  const boost::json::value value = json_of(
      "views:\n"
      "  - select: {name: 'a*', kind: histogram}\n"
      "    buckets: [1, 2.5]\n"
      "    drop: false\n");
  CHECK(
      boost::json::serialize(value) ==
      R"({"views":[{"select":{"name":"a*","kind":"histogram"},"buckets":[1,2.5E0],"drop":false}]})");
  CHECK(json_of("").is_null());
  CHECK(json_of("[]").as_array().empty());
}

TEST_CASE("a key path of the JSON is found at its line in the YAML") {
  const YamlNode root = parse_strict_yaml(
      "views:\n"           // 1
      "  - select:\n"      // 2
      "      name: a\n"    // 3
      "    buckets:\n"     // 4
      "      - 1\n"        // 5
      "      - 0.5\n"      // 6
      "    a.b: 1\n"       // 7
      "    a: {b: 2}\n");  // 8
  CHECK(yaml_line_of(root, "views") == 1);
  CHECK(yaml_line_of(root, "views[0]") == 2);
  CHECK(yaml_line_of(root, "views[0].select.name") == 3);
  CHECK(yaml_line_of(root, "views[0].buckets") == 4);
  CHECK(yaml_line_of(root, "views[0].buckets[1]") == 6);
  // A key holding '.' is found whole, before a shorter key it starts with.
  CHECK(yaml_line_of(root, "views[0].a.b") == 7);
  // A path that leaves the tree: the deepest node on it.
  CHECK(yaml_line_of(root, "views[0].select.kind") == 2);
  CHECK(yaml_line_of(root, "views[0].buckets[9]") == 4);
  CHECK(yaml_line_of(root, "") == 1);
  CHECK(yaml_line_of(parse_strict_yaml(""), "views") == 0);
}
