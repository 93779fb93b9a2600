// settings_test.cpp — the kit's settings table and JSON parser: unknown keys
// rejected listing the allowed ones, types, ranges and choices checked,
// defaults filled in, the table describing itself; nested object rows
// checked field by field, secret rows described as such and never quoted.
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

namespace {

inline constexpr kit::Setting kTlsFields[] = {
    {"ca_file", SettingType::kString, R"("")", 0, 0, "CA."},
    {"cert_file", SettingType::kString, R"("")", 0, 0, "Certificate."},
    {"min_version", SettingType::kChoice, R"("TLS12")", 0, 0, "Lowest.", "TLS12|TLS13"},
};

inline constexpr kit::Setting kAuthFields[] = {
    {"username", SettingType::kString, "", 0, 0, "User."},
    kit::Setting("password", SettingType::kChoice, "", 0, 0, "Password.", "a|b").secret(),
};

// A table of object rows, built at compile time.
constexpr kit::Setting kTlsRow = kit::Setting::object("tls", kTlsFields, "TLS.");
static_assert(kTlsRow.type == SettingType::kObject && kTlsRow.field_count == 3);
static_assert(kit::Setting("k", SettingType::kString, "", 0, 0, "K.").secret().is_secret);

const kit::SettingsTable& nested() {
  static const kit::SettingsTable t{{
      {"url", SettingType::kString, R"("https://a")", 0, 0, "Where."},
      kit::Setting("headers", SettingType::kStringMap, "{}", 0, 0, "Headers.").secret(),
      kit::Setting("retries", SettingType::kInteger, "1", 0, 5, "Retries.").secret(),
      kTlsRow,
      kit::Setting::object("auth", kAuthFields, "Credentials.", ""),
  }};
  return t;
}

std::string nested_rejection(const std::string& config) {
  try {
    nested().validate(config);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("an object row is filled with the defaults of its fields, in their order") {
  CHECK(nested().validate_text(R"({"auth": {"username": "u", "password": "a"}})") ==
        R"({"url":"https://a","headers":{},"retries":1,)"
        R"("tls":{"ca_file":"","cert_file":"","min_version":"TLS12"},)"
        R"("auth":{"username":"u","password":"a"}})");
  const kit::Settings s = nested().read(
      R"({"tls": {"min_version": "TLS13"}, "auth": {"username": "u", "password": "b"}})");
  CHECK(s.object("tls").string("min_version") == "TLS13");
  CHECK(s.object("tls").string("ca_file") == "");
  CHECK(s.object("auth").string("password") == "b");
}

TEST_CASE("an unknown key of an object is named with its object, listing the object's keys") {
  CHECK(nested_rejection(
            R"({"auth": {"username": "u", "password": "a"}, "tls": {"cert_fil": ""}})") ==
        "unknown key 'tls.cert_fil'; allowed keys: ca_file, cert_file, min_version");
}

TEST_CASE("the fields of an object are checked, named with their object") {
  const std::string auth = R"("auth": {"username": "u", "password": "a"})";
  CHECK(nested_rejection("{" + auth + R"(, "tls": {"ca_file": 3}})") ==
        "'tls.ca_file' must be a string, got an integer");
  CHECK(nested_rejection("{" + auth + R"(, "tls": {"min_version": "TLS11"}})") ==
        R"('tls.min_version' must be one of "TLS12", "TLS13", got "TLS11")");
  CHECK(nested_rejection("{" + auth + R"(, "tls": "yes"})") ==
        "'tls' must be an object, got a string");
  CHECK(nested_rejection("{}") == "'auth' is required");
  CHECK(nested_rejection(R"({"auth": {"password": "a"}})") == "'auth.username' is required");
}

TEST_CASE("no error quotes the value of a secret, only its key and kind") {
  CHECK(nested_rejection(R"({"auth": {"username": "u", "password": "hunter2"}})") ==
        R"('auth.password' must be one of "a", "b", got a string)");
  CHECK(nested_rejection(R"({"auth": {"username": "u", "password": "a"}, "retries": 987654})") ==
        "'retries' must be an integer from 0 to 5, got an integer");
  const std::string header = nested_rejection(
      R"({"auth": {"username": "u", "password": "a"}, "headers": {"api-key": 12345}})");
  CHECK(header == "'headers': 'api-key' must be a string, got an integer");
  CHECK(header.find("12345") == std::string::npos);
}

TEST_CASE("a secret row is described with secret true, an object row with its fields") {
  const json::Value described = json::parse(nested().describe());
  const json::Array& rows = described.as_array();
  REQUIRE(rows.size() == 5);
  CHECK(rows[0].find("secret") == nullptr);
  CHECK(json::serialize(rows[1]) ==
        R"({"key":"headers","type":"object of strings","default":{},"secret":true,)"
        R"("description":"Headers."})");
  CHECK(json::serialize(rows[3]) ==
        R"({"key":"tls","type":"object","default":{},"fields":[)"
        R"({"key":"ca_file","type":"string","default":"","description":"CA."},)"
        R"({"key":"cert_file","type":"string","default":"","description":"Certificate."},)"
        R"({"key":"min_version","type":"choice","default":"TLS12","choices":["TLS12","TLS13"],)"
        R"("description":"Lowest."}],"description":"TLS."})");
  const json::Value& auth = rows[4];
  CHECK(auth.find("default") == nullptr);  // required
  CHECK(auth.at("fields").as_array()[1].at("secret").as_bool());
}
