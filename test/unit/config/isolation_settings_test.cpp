// isolation_settings_test.cpp — the host's own keys of an output's settings
// are taken out before the plugin sees them, checked with a startup error
// naming reporter, file and key, and cross the handoff unchanged.
#include <catch2/catch.hpp>

#include <chrono>
#include <stdexcept>

#include <boost/json.hpp>

#include "config/isolation_settings.hpp"
#include "core/startup_error.hpp"

using namespace tokenspeed::metrics;
using namespace std::chrono_literals;

namespace {

boost::json::object settings_of(const char* json) { return boost::json::parse(json).as_object(); }

// The startup error take_isolation_settings throws on config, or "" if none.
std::string error_of(const char* json) {
  boost::json::object config = settings_of(json);
  try {
    take_isolation_settings(config, "otlp", "/etc/metrics.json");
  } catch (const StartupError& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("without the host's keys an output runs in its process and its settings stay whole") {
  boost::json::object config = settings_of(R"({"endpoint": "http://x"})");
  const IsolationSettings settings = take_isolation_settings(config, "otlp", "m.json");
  CHECK_FALSE(settings.process);
  CHECK(settings.deadlock_timeout == 10s);
  CHECK(config == settings_of(R"({"endpoint": "http://x"})"));
}

TEST_CASE("the host's keys are taken out of the settings the plugin sees") {
  boost::json::object config = settings_of(
      R"({"endpoint": "http://x", "isolation": "process", "isolation_deadlock_timeout_ms": 2500})");
  const IsolationSettings settings = take_isolation_settings(config, "otlp", "m.json");
  CHECK(settings.process);
  CHECK(settings.deadlock_timeout == 2500ms);
  CHECK(config == settings_of(R"({"endpoint": "http://x"})"));
  boost::json::object none = settings_of(R"({"isolation": "none"})");
  CHECK_FALSE(take_isolation_settings(none, "otlp", "m.json").process);
  CHECK(none.empty());
}

TEST_CASE("an isolation that is not \"process\" or \"none\" is a startup error naming its key") {
  CHECK(error_of(R"({"isolation": "thread"})") ==
        "reporter 'otlp': file '/etc/metrics.json': key 'otlp.isolation': unknown isolation "
        "'thread' (expected \"process\" or \"none\")");
  CHECK(error_of(R"({"isolation": true})").find("key 'otlp.isolation': must be a string") !=
        std::string::npos);
}

TEST_CASE("the deadlock timeout is an integer from 100 ms to one hour, with process isolation") {
  const std::string range =
      "key 'otlp.isolation_deadlock_timeout_ms': must be an integer "
      "number of milliseconds from 100 to 3600000";
  CHECK(error_of(R"({"isolation": "process", "isolation_deadlock_timeout_ms": 99})")
            .ends_with(range));
  CHECK(error_of(R"({"isolation": "process", "isolation_deadlock_timeout_ms": 3600001})")
            .ends_with(range));
  CHECK(error_of(R"({"isolation": "process", "isolation_deadlock_timeout_ms": 1.5})")
            .ends_with(range));
  CHECK(error_of(R"({"isolation": "process", "isolation_deadlock_timeout_ms": "5000"})")
            .ends_with(range));
  CHECK(error_of(R"({"isolation": "process", "isolation_deadlock_timeout_ms": 100})").empty());
  CHECK(error_of(R"({"isolation": "process", "isolation_deadlock_timeout_ms": 3600000})").empty());
  CHECK(error_of(R"({"isolation_deadlock_timeout_ms": 5000})")
            .ends_with("key 'otlp.isolation_deadlock_timeout_ms': applies only with "
                       "\"isolation\": \"process\""));
}

TEST_CASE("the settings cross the handoff as they were, and a malformed object is refused") {
  IsolationSettings settings;
  settings.process = true;
  settings.deadlock_timeout = 1234ms;
  const IsolationSettings back = IsolationSettings::from_json(settings.to_json());
  CHECK(back.process);
  CHECK(back.deadlock_timeout == 1234ms);
  CHECK_THROWS_AS(IsolationSettings::from_json(settings_of(R"({"mode": "thread"})")),
                  std::invalid_argument);
  CHECK_THROWS_AS(
      IsolationSettings::from_json(settings_of(R"({"mode": "none", "deadlock_timeout_ms": "1"})")),
      std::invalid_argument);
}
