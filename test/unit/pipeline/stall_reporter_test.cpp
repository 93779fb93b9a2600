// stall_reporter_test.cpp — drop and stall lines come from a thread no
// plugin can hold: while an output's emit is stuck, its drops and the stuck
// call are still reported, rate-limited, naming output and process.
#include <catch2/catch.hpp>

#include <chrono>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

#include "pipeline/collector.hpp"
#include "pipeline/event_router.hpp"
#include "pipeline/stall_reporter.hpp"
#include "core/in_process_metric_store.hpp"
#include "test_sinks.hpp"

using namespace tokenspeed::metrics;
using namespace tokenspeed::metrics::test;
using namespace std::chrono_literals;

namespace {

const MetricDefinition kCounter{
    "tokenspeed:num_requests", MetricKind::counter, "Requests", "", {"model"}, {}, {}};

using Lines = test::LogLines;

}  // namespace

TEST_CASE("counts are written with thousands separators") {
  CHECK(format_count(0) == "0");
  CHECK(format_count(999) == "999");
  CHECK(format_count(1000) == "1,000");
  CHECK(format_count(41424) == "41,424");
  CHECK(format_count(1234567) == "1,234,567");
}

TEST_CASE(
    "while an output's emit is stuck, its drops and the stuck call are reported from another "
    "thread, naming output and process") {
  static TestSink stuck_sink;  // static: the abandoned delivery thread may outlive the test body
  Gate gate;
  stuck_sink.emit_gate = &gate;
  Lines log;
  RouterOptions options;
  options.queue_size = 8;
  options.process.name = "scheduler-0";
  options.stall_check_interval = 20ms;
  options.stall_threshold = 100ms;
  options.log_interval = 1h;  // one line, then nothing until close
  options.log = log.writer();
  InProcessMetricStore store;
  auto router = std::make_unique<EventRouter>(
      std::vector<OutputDefinition>{test_output("x", &stuck_sink)}, options);
  Collector collector(store, router.get());
  Counter counter = collector.counter(kCounter).labels("llama");
  counter.inc();
  REQUIRE(gate.wait_for_waiter());  // the delivery thread is inside emit and stays there
  for (int i = 0; i < 100; ++i) counter.inc();  // 8 queued, 92 dropped (ring full)

  const std::regex shape(
      "^tokenspeed-metrics: output 'x' in scheduler-0: ([0-9,]+) events dropped \\(ring full\\) "
      "in the last [0-9.]+ s; emit has not returned for [0-9.]+ s$");
  REQUIRE(eventually([&] { return !log.matching(shape).empty(); }));
  const std::vector<std::string> lines = log.matching(shape);
  REQUIRE(lines.size() == 1);  // rate-limited: one per interval
  std::smatch match;
  REQUIRE(std::regex_search(lines[0], match, shape));
  CHECK(match[1] == "92");

  CHECK_FALSE(router->close(50ms));  // the stuck delivery thread is abandoned
  CHECK(router->figures().at(0).abandoned);
  gate.open();
  REQUIRE(eventually([&] { return stuck_sink.closes.load() == 1; }));
  router.reset();
}

TEST_CASE("a plugin call that returns promptly is never reported as stuck") {
  TestSink sink;
  Lines log;
  RouterOptions options;
  options.stall_check_interval = 5ms;
  options.stall_threshold = 10s;
  options.log = log.writer();
  InProcessMetricStore store;
  EventRouter router({test_output("fine", &sink)}, options);
  Collector collector(store, &router);
  Counter counter = collector.counter(kCounter).labels("llama");
  for (int i = 0; i < 1000; ++i) counter.inc();
  REQUIRE(eventually([&] { return sink.emits_ok.load() == 1000; }));
  REQUIRE(router.close(5s));
  CHECK(log.matching(std::regex("has not returned")).empty());
  CHECK(log.matching(std::regex("dropped")).empty());
}
