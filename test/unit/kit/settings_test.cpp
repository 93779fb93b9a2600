// settings_test.cpp — the kit's settings table and JSON parser: unknown keys
// rejected listing the allowed ones, types, ranges and choices checked,
// defaults filled in, the table describing itself; nested object rows
// checked field by field, secret rows described as such and never quoted;
// rows bound to fields, filled through each conversion, refused when unfit.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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

namespace {

const kit::SettingsTable& http_table() {
  static const kit::SettingsTable t{{
      {"url", SettingType::kUrl, R"("http://127.0.0.1:9090/w")", 0, 0, "Where."},
      kit::Setting("secret_url", SettingType::kUrl, R"("http://a")", 0, 0, "Where.").secret(),
      kit::Setting("headers", SettingType::kHeaderMap, "{}", 0, 0, "Headers.").secret(),
      {"labels", SettingType::kStringMap, "{}", 0, 0, "Labels."},
  }};
  return t;
}

// The one-line error of {key: value} (value as JSON text), or "accepted".
std::string http_rejection(const std::string& key, const std::string& value) {
  try {
    http_table().validate("{\"" + key + "\": " + value + "}");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

std::string url_rejection(const std::string& url) {
  return http_rejection("url", json::serialize(json::Value(url)));
}

}  // namespace

TEST_CASE("a url setting is an absolute http or https URL with a host and an optional port") {
  for (const char* url :
       {"http://a", "https://example.com/v1/metrics?x=1#f", "http://127.0.0.1:9090/api/v1/write",
        "https://[::1]:4318/v1/metrics", "http://[2001:db8::7]", "http://host-1.example_x:1",
        "https://h:65535/", "http://a/p@th", "http://xn--bcher-kva.example/"}) {
    CAPTURE(url);
    CHECK(url_rejection(url) == "accepted");
  }
  CHECK(url_rejection("ftp://example.com") ==
        R"('url' must start with http:// or https://, got "ftp://example.com")");
  CHECK(url_rejection("127.0.0.1:9090/w") ==
        R"('url' must start with http:// or https://, got "127.0.0.1:9090/w")");
  CHECK(url_rejection("HTTP://a").rfind("'url' must start with http:// or https://", 0) == 0);
  CHECK(url_rejection("http://") == R"('url' must name a host, got "http://")");
  CHECK(url_rejection("http:///w") == R"('url' must name a host, got "http:///w")");
  CHECK(url_rejection("http://:80/w") == R"('url' must name a host, got "http://:80/w")");
  CHECK(url_rejection("http://a,b/") == R"('url' must name a host, got "http://a,b/")");
  CHECK(url_rejection("http://a:0") ==
        R"('url' must have a port from 1 to 65535, got "http://a:0")");
  CHECK(url_rejection("http://a:65536/").rfind("'url' must have a port from 1 to 65535", 0) == 0);
  CHECK(url_rejection("http://a:/").rfind("'url' must have a port from 1 to 65535", 0) == 0);
  CHECK(url_rejection("http://a:8x").rfind("'url' must have a port from 1 to 65535", 0) == 0);
  CHECK(url_rejection("http://::1/") == R"('url' must name a host, got "http://::1/")");
  CHECK(url_rejection("http://[::1/") ==
        R"('url' must have an IPv6 address in brackets, got "http://[::1/")");
  CHECK(url_rejection("http://[a.b]/").rfind("'url' must have an IPv6 address in brackets", 0) ==
        0);
  CHECK(url_rejection("http://[::1]x/").rfind("'url' must have an IPv6 address", 0) == 0);
  CHECK(http_rejection("url", "3") == "'url' must be an http:// or https:// URL, got an integer");
}

TEST_CASE("a url with a space, a control character or a line break is refused, quoted escaped") {
  CHECK(url_rejection("http://a/b c") ==
        R"('url' must not hold a space, a control character or a line break, got "http://a/b c")");
  const std::string line_break = url_rejection("http://a/\r\nX-Injected: 1");
  CHECK(line_break ==
        "'url' must not hold a space, a control character or a line break, got "
        R"("http://a/\r\nX-Injected: 1")");
  CHECK(line_break.find_first_of("\r\n") == std::string::npos);
  CHECK(url_rejection(std::string("http://a/\0", 10)).rfind("'url' must not hold a space", 0) == 0);
  CHECK(url_rejection("http://a/\x7f").rfind("'url' must not hold a space", 0) == 0);
  CHECK(url_rejection(" http://a").rfind("'url' must start with http://", 0) == 0);
}

TEST_CASE("a url with user:password@ is refused pointing to basic_auth, never quoting it") {
  const std::string expected =
      "'url' must not hold a user name or password (user:password@); set them with basic_auth";
  CHECK(url_rejection("https://user:hunter2@example.com/w") == expected);
  CHECK(url_rejection("https://hunter2@example.com/w") == expected);
  CHECK(url_rejection("http://u:hunter2@[::1]:80") == expected);
  // Other faults of such a URL are not quoted either.
  const std::string scheme = url_rejection("ftp://u:hunter2@example.com");
  CHECK(scheme == "'url' must start with http:// or https://");
  const std::string space = url_rejection("http://u:hunt er2@example.com");
  CHECK(space == expected);
  for (const std::string& message : {scheme, space})
    CHECK(message.find("hunter2") == std::string::npos);
  // An '@' after the host is part of the path, not user information.
  CHECK(url_rejection("http://a/x@y") == "accepted");
}

TEST_CASE("a secret url setting is never quoted") {
  CHECK(http_rejection("secret_url", R"("http://tok3n.example.com:0")") ==
        "'secret_url' must have a port from 1 to 65535");
}

TEST_CASE("a url setting is described with the type url") {
  const json::Value described = json::parse(http_table().describe());
  CHECK(described.as_array()[0].at("type").as_string() == "url");
  CHECK(described.as_array()[2].at("type").as_string() == "object of headers");
  CHECK(described.as_array()[3].at("type").as_string() == "object of strings");
  CHECK(std::string(kit::setting_type_name(SettingType::kUrl)) == "url");
  CHECK(std::string(kit::setting_type_name(SettingType::kHeaderMap)) == "object of headers");
}

TEST_CASE("a header name must be an RFC 9110 token") {
  CHECK(http_rejection("headers", R"({"X-Api-Key": "k", "a!#$%&'*+-.^_`|~9": "v"})") == "accepted");
  const std::string rule =
      " is not a valid header name (letters, digits and !#$%&'*+-.^_`|~; no "
      "space or ':')";
  CHECK(http_rejection("headers", R"({"": "v"})") == "'headers': ''" + rule);
  CHECK(http_rejection("headers", R"({"a b": "v"})") == "'headers': 'a b'" + rule);
  CHECK(http_rejection("headers", R"({"a:b": "v"})") == "'headers': 'a:b'" + rule);
  CHECK(http_rejection("headers", "{\"a(b)\": \"v\"}") == "'headers': 'a(b)'" + rule);
  CHECK(http_rejection("headers", R"({"a\nInjected": "v"})") ==
        "'headers': 'a\\x0aInjected'" + rule);
  CHECK(http_rejection("headers", R"({"a\u0000": "v"})") == "'headers': 'a\\x00'" + rule);
  CHECK(http_rejection("headers", R"({"caf\u00e9": "v"})") == "'headers': 'caf\\xc3\\xa9'" + rule);
}

TEST_CASE("a header value must hold no CR, LF, NUL or other control character but tab") {
  CHECK(http_rejection("headers", R"({"a": "Bearer x\ty z \u00e9"})") == "accepted");
  const std::string expected =
      "'headers': 'api-key' must not hold a line break, NUL or another control character (but "
      "tab) in its value";
  for (const char* value : {R"("s3cr3t\r\nInjected: 1")", R"("s3cr3t\n")", R"("s3cr3t\r")",
                            R"("s3cr3t\u0000")", R"("s3cr3t\u001b")", R"("s3cr3t\u007f")"}) {
    CAPTURE(value);
    const std::string message =
        http_rejection("headers", std::string(R"({"api-key": )") + value + "}");
    CHECK(message == expected);
    CHECK(message.find("s3cr3t") == std::string::npos);
  }
  CHECK(http_rejection("headers", R"({"a": 1})") ==
        "'headers': 'a' must be a string, got an integer");
  CHECK(http_rejection("headers", "[]") == "'headers' must be an object of headers, got an array");
}

TEST_CASE("a plain string map takes any string: a label or attribute may hold a line break") {
  CHECK(http_rejection("labels", R"({"note": "two\nlines", "a b": "\u0000"})") == "accepted");
}

// ------------------------------------------------------------------ binding

namespace {

enum class Mode { kFast, kSafe, kSlow };
inline constexpr Mode kModeChoices[] = {Mode::kFast, Mode::kSafe, Mode::kSlow};
inline constexpr bool kOnChoices[] = {true, false};

struct Limits {
  int depth = -1;
  Mode mode = Mode::kFast;
};

struct BoundOptions {
  std::string name = "unset";
  std::string url;
  std::string level;
  bool enabled = false;
  int64_t offset = 0;
  std::size_t count = 0;
  int small = 0;
  double ratio = 0;
  double whole = 0;
  std::chrono::milliseconds interval{0};
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<std::pair<std::string, std::string>> headers;
  bool on = false;
  Limits limits;
  std::string untouched = "kept";
};

struct OtherOptions {
  std::string name = "other";
};

// Sub-rows bound into BoundOptions::limits; a constexpr array binds at compile time.
inline constexpr kit::Setting kLimitFields[] = {
    kit::Setting("depth", SettingType::kInteger, "3", 0, 100, "Depth.")
        .bind<&BoundOptions::limits, &Limits::depth>(),
    kit::Setting("mode", SettingType::kChoice, R"("fast")", 0, 0, "Mode.", "fast|safe|slow")
        .bind_choices<kModeChoices, &BoundOptions::limits, &Limits::mode>(),
};

const kit::SettingsTable& bound_table() {
  static const kit::SettingsTable t{{
      kit::Setting("name", SettingType::kString, R"("n")", 0, 0, "Name.")
          .bind<&BoundOptions::name>(),
      kit::Setting("url", SettingType::kUrl, R"("http://h:1/p")", 0, 0, "URL.")
          .bind<&BoundOptions::url>(),
      kit::Setting("level", SettingType::kChoice, R"("low")", 0, 0, "Level.", "low|high")
          .bind<&BoundOptions::level>(),
      kit::Setting("enabled", SettingType::kBoolean, "true", 0, 0, "On.")
          .bind<&BoundOptions::enabled>(),
      kit::Setting("offset", SettingType::kInteger, "-5", -10, 10, "Offset.")
          .bind<&BoundOptions::offset>(),
      kit::Setting("count", SettingType::kInteger, "7", 0, 1e9, "Count.")
          .bind<&BoundOptions::count>(),
      kit::Setting("small", SettingType::kInteger, "8", 0, 1000, "Small.")
          .bind<&BoundOptions::small>(),
      kit::Setting("ratio", SettingType::kNumber, "0.25", 0, 1, "Ratio.")
          .bind<&BoundOptions::ratio>(),
      kit::Setting("whole", SettingType::kInteger, "4", 0, 10, "Whole.")
          .bind<&BoundOptions::whole>(),
      kit::Setting("interval_ms", SettingType::kInteger, "1500", 1, 60000, "Interval.")
          .bind<&BoundOptions::interval>(),
      kit::Setting("labels", SettingType::kStringMap, R"({"a": "1", "b": "2"})", 0, 0, "Labels.")
          .bind<&BoundOptions::labels>(),
      kit::Setting("headers", SettingType::kHeaderMap, R"({"X-Key": "k"})", 0, 0, "Headers.")
          .bind<&BoundOptions::headers>(),
      kit::Setting("switch", SettingType::kChoice, R"("on")", 0, 0, "Switch.", "on|off")
          .bind_choices<kOnChoices, &BoundOptions::on>(),
      kit::Setting::object("limits", kLimitFields, "Limits."),
      {"free", SettingType::kString, R"("f")", 0, 0, "Read by hand."},
      kit::Setting("other", SettingType::kString, R"("o")", 0, 0, "Another struct's.")
          .bind<&OtherOptions::name>(),
  }};
  return t;
}

std::string binding_refusal(const kit::Setting& (*make)()) {
  try {
    make();
  } catch (const std::logic_error& e) {
    return e.what();
  }
  return "bound";
}

}  // namespace

TEST_CASE("fill writes each bound row's value into its field, converted by the field's type") {
  BoundOptions options;
  bound_table().fill(bound_table().read("{}"), options);
  CHECK(options.name == "n");
  CHECK(options.url == "http://h:1/p");
  CHECK(options.level == "low");
  CHECK(options.enabled);
  CHECK(options.offset == -5);
  CHECK(options.count == 7);
  CHECK(options.small == 8);
  CHECK(options.ratio == 0.25);
  CHECK(options.whole == 4.0);
  CHECK(options.interval == std::chrono::milliseconds(1500));
  CHECK(options.labels == std::vector<std::pair<std::string, std::string>>{{"a", "1"}, {"b", "2"}});
  CHECK(options.headers == std::vector<std::pair<std::string, std::string>>{{"X-Key", "k"}});
  CHECK(options.on);
  CHECK(options.limits.depth == 3);
  CHECK(options.limits.mode == Mode::kFast);
}

TEST_CASE("fill takes the given values, a choice through its values, a nested object's fields") {
  BoundOptions options;
  options.labels = {{"stale", "x"}};
  bound_table().fill(bound_table().read(R"({"name": "x", "enabled": false, "count": 900000000,
      "interval_ms": 2, "labels": {}, "switch": "off", "limits": {"depth": 0, "mode": "slow"}})"),
                     options);
  CHECK(options.name == "x");
  CHECK_FALSE(options.enabled);
  CHECK(options.count == 900000000);
  CHECK(options.interval == std::chrono::milliseconds(2));
  CHECK(options.labels.empty());
  CHECK_FALSE(options.on);
  CHECK(options.limits.depth == 0);
  CHECK(options.limits.mode == Mode::kSlow);
}

TEST_CASE("an unbound row is untouched by fill and read as before; another struct's row too") {
  BoundOptions options;
  const kit::Settings settings = bound_table().read(R"({"free": "g", "other": "p"})");
  bound_table().fill(settings, options);
  CHECK(options.untouched == "kept");
  CHECK(settings.string("free") == "g");
  OtherOptions other;
  bound_table().fill(settings, other);
  CHECK(other.name == "p");
  Limits limits;  // no row is bound to Limits itself: the paths start at BoundOptions
  bound_table().fill(settings, limits);
  CHECK(limits.depth == -1);
}

TEST_CASE("a bound row is described and validated as it would be unbound") {
  const kit::SettingsTable unbound{{
      {"count", SettingType::kInteger, "7", 0, 1e9, "Count."},
      {"switch", SettingType::kChoice, R"("on")", 0, 0, "Switch.", "on|off"},
  }};
  const kit::SettingsTable bound{{
      kit::Setting("count", SettingType::kInteger, "7", 0, 1e9, "Count.")
          .bind<&BoundOptions::count>(),
      kit::Setting("switch", SettingType::kChoice, R"("on")", 0, 0, "Switch.", "on|off")
          .bind_choices<kOnChoices, &BoundOptions::on>(),
  }};
  CHECK(bound.describe() == unbound.describe());
  for (const char* config : {"{}", R"({"count": -1})", R"({"switch": "maybe"})"}) {
    CAPTURE(config);
    std::string expected = "accepted";
    std::string got = "accepted";
    try {
      unbound.validate(config);
    } catch (const std::invalid_argument& e) {
      expected = e.what();
    }
    try {
      bound.validate(config);
    } catch (const std::invalid_argument& e) {
      got = e.what();
    }
    CHECK(got == expected);
  }
}

TEST_CASE("a row that does not fit its field is refused when bound, naming the key") {
  // The key is the row's own: a binding without a row cannot be written.
  CHECK(binding_refusal([]() -> const kit::Setting& {
          static const kit::Setting row =
              kit::Setting("flag", SettingType::kString, R"("")", 0, 0, "")
                  .bind<&BoundOptions::enabled>();
          return row;
        }) == "setting 'flag' (string) cannot be bound: its type does not fit the field");
  CHECK(binding_refusal([]() -> const kit::Setting& {
          static const kit::Setting row =
              kit::Setting("count", SettingType::kInteger, "0", -1, 10, "")
                  .bind<&BoundOptions::count>();
          return row;
        }) ==
        "setting 'count' (integer) cannot be bound: its range does not fit the field's "
        "integer type");
  CHECK(binding_refusal([]() -> const kit::Setting& {
          static const kit::Setting row =
              kit::Setting("small", SettingType::kInteger, "0", 0, 1e12, "")
                  .bind<&BoundOptions::small>();
          return row;
        }) ==
        "setting 'small' (integer) cannot be bound: its range does not fit the field's "
        "integer type");
  CHECK(binding_refusal([]() -> const kit::Setting& {
          static const kit::Setting row = kit::Setting("ratio", SettingType::kNumber, "0", 0, 1, "")
                                              .bind<&BoundOptions::interval>();
          return row;
        }) == "setting 'ratio' (number) cannot be bound: its type does not fit the field");
  CHECK(binding_refusal([]() -> const kit::Setting& {
          static const kit::Setting row =
              kit::Setting("on", SettingType::kBoolean, "true", 0, 0, "")
                  .bind_choices<kOnChoices, &BoundOptions::on>();
          return row;
        }) == "setting 'on' (boolean) cannot be bound: bind_choices needs a choice");
  CHECK(binding_refusal([]() -> const kit::Setting& {
          static const kit::Setting row =
              kit::Setting("mode", SettingType::kChoice, R"("a")", 0, 0, "", "a|b")
                  .bind_choices<kModeChoices, &BoundOptions::limits, &Limits::mode>();
          return row;
        }) == "setting 'mode' (choice) cannot be bound: Values must hold one value per choice");
}
