// startup_error_test.cpp — a startup error is one line naming the reporter,
// file and key at fault (each only when known), and keeps them apart for
// the caller.
#include <catch2/catch.hpp>

#include <string>

#include "core/startup_error.hpp"

using namespace tokenspeed::metrics;

TEST_CASE("a startup error names its reporter, file and key before the message") {
  const StartupError error({"otlp", "/etc/metrics.json", "otlp.endpoint"}, "is not a URL");
  CHECK(std::string(error.what()) ==
        "reporter 'otlp': file '/etc/metrics.json': key 'otlp.endpoint': is not a URL");
  CHECK(error.reporter() == "otlp");
  CHECK(error.file() == "/etc/metrics.json");
  CHECK(error.key() == "otlp.endpoint");
  CHECK(error.message() == "is not a URL");
}

TEST_CASE("the parts of a startup error that are not known are left out") {
  CHECK(std::string(StartupError({}, "no outputs selected").what()) == "no outputs selected");
  CHECK(std::string(StartupError({"", "", "--metrics-port"}, "out of range").what()) ==
        "key '--metrics-port': out of range");
  CHECK(std::string(StartupError({"jsonl", "", ""}, "failed").what()) ==
        "reporter 'jsonl': failed");
}

TEST_CASE("a startup error is a single line") {
  const StartupError error({"x\ny", "", ""}, "first\r\nsecond");
  CHECK(std::string(error.what()) == "reporter 'x y': first  second");
  CHECK(error.message() == "first\r\nsecond");  // the caller's text, as given
}

TEST_CASE("every startup error exits with status 2") { CHECK(kStartupErrorExitStatus == 2); }
