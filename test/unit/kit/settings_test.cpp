// settings_test.cpp — the kit's settings table and JSON parser: unknown keys
// rejected listing the allowed ones, types, ranges and choices checked,
// defaults filled in, the table describing itself.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include <tokenspeed/kit/settings.hpp>

namespace kit = tokenspeed::metrics::kit;
namespace json = tokenspeed::metrics::kit::json;
using kit::SettingType;

namespace {

const kit::SettingsTable& table() {
  static const kit::SettingsTable t{{
      {"endpoint", SettingType::kString, R"("http://127.0.0.1:4318")", 0, 0, "Where to send."},
      {"timeout_ms", SettingType::kInteger, "10000", 1, 600000, "Per request."},
      {"ratio", SettingType::kNumber, "0.5", 0, 1, "A fraction."},
      {"enabled", SettingType::kBoolean, "true", 0, 0, "On or off."},
      {"compression", SettingType::kChoice, R"("gzip")", 0, 0, "Body encoding.", "gzip|none"},
      {"headers", SettingType::kStringMap, "{}", 0, 0, "Extra headers."},
  }};
  return t;
}

std::string rejection(const std::string& config) {
  try {
    table().validate(config);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("an empty object is normalized to every key with its default, in table order") {
  CHECK(table().validate_text("{}") ==
        R"({"endpoint":"http://127.0.0.1:4318","timeout_ms":10000,"ratio":0.5,"enabled":true,)"
        R"("compression":"gzip","headers":{}})");
}

TEST_CASE("given values are kept and the rest defaulted") {
  const kit::Settings s = table().read(R"({"headers": {"api-key": "k"}, "timeout_ms": 5})");
  CHECK(s.integer("timeout_ms") == 5);
  CHECK(s.string("compression") == "gzip");
  REQUIRE(s.string_map("headers").size() == 1);
  CHECK(s.string_map("headers")[0].first == "api-key");
  CHECK(s.string_map("headers")[0].second == "k");
}

TEST_CASE("an unknown key is rejected, naming it and listing the allowed keys") {
  CHECK(rejection(R"({"endpont": "x"})") ==
        "unknown key 'endpont'; allowed keys: endpoint, timeout_ms, ratio, enabled, compression, "
        "headers");
}

TEST_CASE("types, ranges and choices are checked, naming the key") {
  CHECK(rejection(R"({"endpoint": 3})") == "'endpoint' must be a string, got an integer");
  CHECK(rejection(R"({"timeout_ms": 0})") ==
        "'timeout_ms' must be an integer from 1 to 600000, got 0");
  CHECK(rejection(R"({"timeout_ms": 1.5})") ==
        "'timeout_ms' must be an integer from 1 to 600000, got 1.5");
  CHECK(rejection(R"({"ratio": 2})") == "'ratio' must be a number from 0 to 1, got 2");
  CHECK(rejection(R"({"enabled": "yes"})") == "'enabled' must be true or false, got a string");
  CHECK(rejection(R"({"compression": "zstd"})") ==
        R"('compression' must be one of "gzip", "none", got "zstd")");
  CHECK(rejection(R"({"headers": {"a": 1}})") == "'headers': 'a' must be a string, got an integer");
  CHECK(rejection(R"({"headers": []})") == "'headers' must be an object of strings, got an array");
}

TEST_CASE("a required key without default must be given") {
  const kit::SettingsTable required{{{"path", SettingType::kString, "", 0, 0, "File."}}};
  CHECK_THROWS_WITH(required.validate("{}"), "'path' is required");
  CHECK(required.validate_text(R"({"path":"/x"})") == R"({"path":"/x"})");
}

TEST_CASE("settings that are not a JSON object, or not JSON, are rejected") {
  CHECK(rejection("[]") == "settings must be a JSON object");
  CHECK(rejection("{").rfind("settings are not valid JSON: ", 0) == 0);
  CHECK(rejection(R"({"a":1} x)").rfind("settings are not valid JSON: unexpected text", 0) == 0);
}

TEST_CASE("a duplicate key is a parse error, also when spelled with an escape") {
  CHECK_THROWS_AS(json::parse(R"({"a":1,"a":2})"), json::ParseError);
  CHECK_THROWS_WITH(json::parse(R"({"a":1,"\u0061":2})"), Catch::Contains("duplicate key 'a'"));
}

TEST_CASE("the JSON parser reads every value kind and serializes it back") {
  const json::Value v = json::parse(
      R"( {"s":"a\"b\n\u00e9\ud83d\ude00","i":-12,"big":123456789012345678901,"d":1.25e2,)"
      R"("t":true,"f":false,"n":null,"a":[1,[2]],"o":{}} )");
  CHECK(v.at("s").as_string() == "a\"b\n\xc3\xa9\xf0\x9f\x98\x80");
  CHECK(v.at("i").as_integer() == -12);
  CHECK(v.at("big").is_number());
  CHECK_FALSE(v.at("big").is_integer());
  CHECK(v.at("d").as_number() == 125.0);
  CHECK(json::serialize(v.at("a")) == "[1,[2]]");
  CHECK(json::serialize(json::parse(json::serialize(v))) == json::serialize(v));
  CHECK_THROWS_AS(json::parse("[1,]"), json::ParseError);
  CHECK_THROWS_AS(json::parse("\"\x01\""), json::ParseError);
  CHECK_THROWS_AS(json::parse("01"), json::ParseError);
  CHECK_THROWS_AS(json::parse(std::string(100, '[') + std::string(100, ']')), json::ParseError);
}

TEST_CASE("the table describes itself as a JSON array for the descriptor") {
  const json::Value described = json::parse(table().describe());
  REQUIRE(described.as_array().size() == 6);
  const json::Value& timeout = described.as_array()[1];
  CHECK(json::serialize(timeout) ==
        R"({"key":"timeout_ms","type":"integer","default":10000,"min":1,"max":600000,)"
        R"("description":"Per request."})");
  CHECK(json::serialize(described.as_array()[4].at("choices")) == R"(["gzip","none"])");
}

TEST_CASE("append_string escapes, and replaces invalid UTF-8 only when asked") {
  std::string out;
  json::append_string(out, std::string_view("a\"b\\c\n\x01\xc3\xa9", 9));
  CHECK(out == "\"a\\\"b\\\\c\\n\\u0001\xc3\xa9\"");
  out.clear();
  json::append_string(out, std::string_view("x\xff\xc3\xa9", 4), true);
  CHECK(out == "\"x\\ufffd\xc3\xa9\"");
  out.clear();
  json::append_string(out, std::string_view("x\xff", 2));
  CHECK(out == "\"x\xff\"");
}
