// secret_redaction_test.cpp — unit tests of host/config/secret_redaction: a
// secret value reads "<secret>" wherever the host shows an output's settings,
// at any depth of the settings description, and nothing else changes.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <boost/json.hpp>

#include "config/secret_redaction.hpp"

using namespace tokenspeed::metrics;

namespace {

// A description in the contract's form: a secret string, a secret map beside
// its file variant, an object with a secret field beside its file variant,
// an object with no secret, and plain rows.
constexpr const char* kDescription = R"([
  {"key": "endpoint", "type": "string", "default": "http://127.0.0.1:4318"},
  {"key": "token", "type": "string", "default": "", "secret": true},
  {"key": "headers", "type": "object of strings", "default": {}, "secret": true},
  {"key": "header_files", "type": "object of strings", "default": {}},
  {"key": "basic_auth", "type": "object", "default": {}, "fields": [
    {"key": "username", "type": "string", "default": ""},
    {"key": "password", "type": "string", "default": "", "secret": true},
    {"key": "password_file", "type": "string", "default": ""}]},
  {"key": "tls", "type": "object", "default": {}, "fields": [
    {"key": "ca_file", "type": "string", "default": ""},
    {"key": "cert_file", "type": "string", "default": ""}]},
  {"key": "timeout_ms", "type": "integer", "default": 1000, "min": 1, "max": 60000}
])";

boost::json::object object(const char* text) { return boost::json::parse(text).as_object(); }

std::vector<std::string> key_paths(const std::vector<HeldSecret>& held) {
  std::vector<std::string> paths;
  for (const HeldSecret& secret : held) paths.push_back(secret.key_path);
  return paths;
}

}  // namespace

TEST_CASE("a secret string reads <secret> and every other setting is shown as given",
          "[config][secrets]") {
  const SecretSettings secrets(kDescription);
  CHECK_FALSE(secrets.empty());
  const boost::json::object config = object(
      R"({"endpoint": "https://otlp.example", "token": "s3cr3t", "timeout_ms": 5,
          "undescribed": "shown"})");
  CHECK(secrets.redact(config) ==
        object(R"({"endpoint": "https://otlp.example", "token": "<secret>", "timeout_ms": 5,
                   "undescribed": "shown"})"));
}

TEST_CASE("every value of a secret map reads <secret>, its names are kept", "[config][secrets]") {
  const SecretSettings secrets(kDescription);
  CHECK(secrets.redact(object(R"({"headers": {"api-key": "k1", "x-tenant": "acme"},
                                  "header_files": {"authorization": "/run/auth"}})")) ==
        object(R"({"headers": {"api-key": "<secret>", "x-tenant": "<secret>"},
                   "header_files": {"authorization": "/run/auth"}})"));
}

TEST_CASE("a secret field of a nested object reads <secret>, its other fields are kept",
          "[config][secrets]") {
  const SecretSettings secrets(kDescription);
  CHECK(secrets.redact(object(R"({"basic_auth": {"username": "bob", "password": "hunter2",
                                                  "password_file": ""},
                                  "tls": {"ca_file": "/ca.pem"}})")) ==
        object(R"({"basic_auth": {"username": "bob", "password": "<secret>", "password_file": ""},
                   "tls": {"ca_file": "/ca.pem"}})"));
}

TEST_CASE("an empty or null secret is shown as it is: nothing is set", "[config][secrets]") {
  const SecretSettings secrets(kDescription);
  const boost::json::object config =
      object(R"({"token": "", "headers": {}, "basic_auth": {"password": null}})");
  CHECK(secrets.redact(config) == config);
  CHECK(secrets.held(config).empty());
}

TEST_CASE("a secret of any JSON type reads <secret>, at any depth inside it", "[config][secrets]") {
  const SecretSettings secrets(kDescription);
  CHECK(secrets.redact(object(R"({"token": 1234, "headers": {"a": true, "b": ["x", 2, null],
                                                             "c": {"d": "e"}}})")) ==
        object(R"({"token": "<secret>", "headers": {"a": "<secret>",
                   "b": ["<secret>", "<secret>", null], "c": {"d": "<secret>"}}})"));
}

TEST_CASE("a secret object row makes every field of its value secret", "[config][secrets]") {
  const SecretSettings secrets(R"([{"key": "auth", "type": "object", "secret": true,
                                    "fields": [{"key": "user", "type": "string"}]}])");
  CHECK(secrets.redact(object(R"({"auth": {"user": "bob", "other": "x"}})")) ==
        object(R"({"auth": {"user": "<secret>", "other": "<secret>"}})"));
}

TEST_CASE("nested objects are redacted to any depth and in arrays of objects",
          "[config][secrets]") {
  const SecretSettings secrets(R"([{"key": "a", "type": "object", "fields": [
      {"key": "b", "type": "object", "fields": [
        {"key": "c", "type": "string", "secret": true}]}]}])");
  CHECK(secrets.redact(object(R"({"a": {"b": {"c": "deep", "d": "kept"}}})")) ==
        object(R"({"a": {"b": {"c": "<secret>", "d": "kept"}}})"));
  CHECK(secrets.redact(object(R"({"a": [{"b": {"c": "one"}}, 3]})")) ==
        object(R"({"a": [{"b": {"c": "<secret>"}}, 3]})"));
  CHECK(key_paths(secrets.held(object(R"({"a": [{"b": {"c": "one"}}]})"))) ==
        std::vector<std::string>{"a[0].b.c"});
}

TEST_CASE("a value of the wrong shape under a non-secret object row is shown as given",
          "[config][secrets]") {
  const SecretSettings secrets(kDescription);
  const boost::json::object config = object(R"({"basic_auth": "bob:hunter2"})");
  CHECK(secrets.redact(config) == config);
}

TEST_CASE("only \"secret\": true marks a secret", "[config][secrets]") {
  const SecretSettings secrets(R"([{"key": "a", "secret": "yes"}, {"key": "b", "secret": 1},
                                   {"key": "c", "secret": false}])");
  CHECK(secrets.empty());
  const boost::json::object config = object(R"({"a": "x", "b": "y", "c": "z"})");
  CHECK(secrets.redact(config) == config);
}

TEST_CASE("a missing or malformed description names no secret", "[config][secrets]") {
  const boost::json::object config = object(R"({"token": "s3cr3t"})");
  for (const char* description : {"", "not json", R"({"key": "token", "secret": true})",
                                  R"([1, "token", null])", R"([{"secret": true}])"}) {
    const SecretSettings secrets(description);
    CHECK(secrets.empty());
    CHECK(secrets.redact(config) == config);
  }
  CHECK(SecretSettings().redact(config) == config);
}

TEST_CASE("held lists the key path of each secret value a configuration holds, never the value",
          "[config][secrets]") {
  const SecretSettings secrets(kDescription);
  const std::vector<HeldSecret> held = secrets.held(object(
      R"({"token": "t", "headers": {"api-key": "k", "x-empty": ""},
          "basic_auth": {"username": "bob", "password": "p"}, "endpoint": "e"})"));
  REQUIRE(held.size() == 3);
  CHECK(held[0].key_path == "token");
  CHECK(held[1].key_path == "headers.api-key");
  CHECK(held[2].key_path == "basic_auth.password");
}

TEST_CASE("held names a setting beside a secret that reads it from a file", "[config][secrets]") {
  const SecretSettings secrets(kDescription);
  const std::vector<HeldSecret> held = secrets.held(
      object(R"({"token": "t", "headers": {"api-key": "k"}, "basic_auth": {"password": "p"}})"));
  REQUIRE(held.size() == 3);
  CHECK(held[0].file_setting.empty());  // no token_file in the description
  CHECK(held[1].file_setting == "header_files");
  CHECK(held[2].file_setting == "basic_auth.password_file");
}

TEST_CASE("a long key in a held secret's path is cut, as every quoted input is",
          "[config][secrets]") {
  const SecretSettings secrets(kDescription);
  const std::string name(5000, 'h');
  boost::json::object config;
  config["headers"] = boost::json::object{{name, "k"}};
  const std::vector<HeldSecret> held = secrets.held(config);
  REQUIRE(held.size() == 1);
  CHECK(held[0].key_path.size() < 200);
  CHECK(held[0].key_path.find("(5000 bytes)") != std::string::npos);
}

TEST_CASE("redaction leaves the configuration it was given unchanged", "[config][secrets]") {
  const SecretSettings secrets(kDescription);
  const boost::json::object config = object(R"({"token": "s3cr3t"})");
  (void)secrets.redact(config);
  (void)secrets.held(config);
  CHECK(config == object(R"({"token": "s3cr3t"})"));
}

TEST_CASE("a description's secret defaults read <secret>, at any depth of fields",
          "[config][secrets]") {
  const boost::json::value description = boost::json::parse(R"([
    {"key": "token", "type": "string", "default": "built-in", "secret": true},
    {"key": "empty", "type": "string", "default": "", "secret": true},
    {"key": "plain", "type": "string", "default": "shown"},
    {"key": "auth", "type": "object", "default": {"user": "u", "password": "p"}, "fields": [
      {"key": "user", "type": "string", "default": "u"},
      {"key": "password", "type": "string", "default": "p", "secret": true}]}
  ])");
  CHECK(redact_settings_description(description) == boost::json::parse(R"([
    {"key": "token", "type": "string", "default": "<secret>", "secret": true},
    {"key": "empty", "type": "string", "default": "", "secret": true},
    {"key": "plain", "type": "string", "default": "shown"},
    {"key": "auth", "type": "object", "default": {"user": "u", "password": "<secret>"}, "fields": [
      {"key": "user", "type": "string", "default": "u"},
      {"key": "password", "type": "string", "default": "<secret>", "secret": true}]}
  ])"));
  const boost::json::value not_rows = boost::json::parse(R"({"key": "token"})");
  CHECK(redact_settings_description(not_rows) == not_rows);
}
