// fault_log_test.cpp — c_complain-style logging: the first occurrence
// at once, then at most one line per interval with the count since the last.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/fault_log.hpp"

using namespace tokenspeed::metrics;
using namespace std::chrono_literals;

namespace {
struct Lines {
  std::vector<std::string> lines;
  LogWriter writer() {
    return [this](std::string_view l) { lines.emplace_back(l); };
  }
};
}  // namespace

TEST_CASE("the first occurrence is logged at once") {
  Lines out;
  FaultLog log("output 'x'", 10s, out.writer());
  const auto t0 = FaultLog::Clock::time_point{} + 1h;
  log.report("events dropped (queue full)", 3, t0);
  REQUIRE(out.lines.size() == 1);
  CHECK(out.lines[0] == "tokenspeed-metrics: output 'x': 3 events dropped (queue full)");
}

TEST_CASE("at most one line per interval, carrying the count since the last line") {
  Lines out;
  FaultLog log("output 'x'", 10s, out.writer());
  const auto t0 = FaultLog::Clock::time_point{} + 1h;
  log.report("events dropped (queue full)", 1, t0);
  for (int i = 1; i <= 9; ++i) log.report("events dropped (queue full)", 100, t0 + i * 1s);
  CHECK(out.lines.size() == 1);
  log.report("events dropped (queue full)", 5, t0 + 10s);
  REQUIRE(out.lines.size() == 2);
  CHECK(out.lines[1] ==
        "tokenspeed-metrics: output 'x': 905 events dropped (queue full) (since the last report)");
  log.report("events dropped (queue full)", 1, t0 + 11s);
  CHECK(out.lines.size() == 2);
}

TEST_CASE("several problems of one sink share one line") {
  Lines out;
  FaultLog log("output 'x'", 10s, out.writer());
  const auto t0 = FaultLog::Clock::time_point{} + 1h;
  log.report("a", 1, t0);
  log.report("a", 2, t0 + 1s);
  log.report("b", 4, t0 + 2s);
  log.report("b", 1, t0 + 12s);
  REQUIRE(out.lines.size() == 2);
  CHECK(out.lines[1] == "tokenspeed-metrics: output 'x': 2 a; 5 b (since the last report)");
}

TEST_CASE("flush writes what is pending regardless of the interval, and nothing when nothing is") {
  Lines out;
  FaultLog log("output 'x'", 10s, out.writer());
  const auto t0 = FaultLog::Clock::time_point{} + 1h;
  log.flush(t0);
  CHECK(out.lines.empty());
  log.report("a", 1, t0);
  log.report("a", 7, t0 + 1s);
  log.flush(t0 + 2s);
  REQUIRE(out.lines.size() == 2);
  CHECK(out.lines[1] == "tokenspeed-metrics: output 'x': 7 a (since the last report)");
  log.flush(t0 + 3s);
  CHECK(out.lines.size() == 2);
}

TEST_CASE("one-off messages are rate-limited too and the suppressed ones are counted") {
  Lines out;
  FaultLog log("output 'x'", 10s, out.writer());
  const auto t0 = FaultLog::Clock::time_point{} + 1h;
  log.message("emit failed (boom)", t0);
  log.message("emit failed (boom)", t0 + 1s);
  log.message("emit failed (boom)", t0 + 2s);
  REQUIRE(out.lines.size() == 1);
  CHECK(out.lines[0] == "tokenspeed-metrics: output 'x': emit failed (boom)");
  log.flush(t0 + 3s);
  REQUIRE(out.lines.size() == 2);
  CHECK(out.lines[1] ==
        "tokenspeed-metrics: output 'x': 2 further messages suppressed (since the last report)");
}

TEST_CASE("separate sinks are limited separately") {
  Lines out;
  FaultLog a("output 'a'", 10s, out.writer());
  FaultLog b("output 'b'", 10s, out.writer());
  const auto t0 = FaultLog::Clock::time_point{} + 1h;
  a.report("x", 1, t0);
  b.report("x", 1, t0);
  CHECK(out.lines.size() == 2);
}
