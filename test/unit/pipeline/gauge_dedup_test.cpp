// gauge_dedup_test.cpp — the spec's gauge de-duplication rule, on the
// GaugeDedup state alone and through the collector with an injected clock.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "pipeline/collector.hpp"
#include "pipeline/event_router.hpp"
#include "pipeline/gauge_dedup.hpp"
#include "core/in_process_metric_store.hpp"
#include "test_sinks.hpp"

using namespace tokenspeed::metrics;
using namespace tokenspeed::metrics::test;

namespace {
constexpr std::int64_t kSecond = 1'000'000'000;

std::atomic<std::int64_t> fake_now{0};
std::int64_t fake_clock() noexcept { return fake_now.load(); }
}  // namespace

TEST_CASE("plugins receive the first gauge value and every value change") {
  GaugeDedup d;
  CHECK(d.should_emit(5.0, 0, kSecond));
  CHECK(d.should_emit(6.0, 1, kSecond));
  CHECK(d.should_emit(5.0, 2, kSecond));
  CHECK(d.should_emit(0.0, 3, kSecond));
}

TEST_CASE("repeated assignments of the same value are suppressed") {
  GaugeDedup d;
  CHECK(d.should_emit(7.0, 0, kSecond));
  CHECK_FALSE(d.should_emit(7.0, 1, kSecond));
  CHECK_FALSE(d.should_emit(7.0, kSecond / 2, kSecond));
  CHECK_FALSE(d.should_emit(7.0, kSecond - 1, kSecond));
}

TEST_CASE(
    "the next assignment at least one second after the last emitted event produces a fresh "
    "snapshot") {
  GaugeDedup d;
  CHECK(d.should_emit(7.0, 0, kSecond));
  CHECK_FALSE(d.should_emit(7.0, 900'000'000, kSecond));  // measured from the emitted event,
  CHECK(d.should_emit(7.0, kSecond, kSecond));            // not from the last assignment
  CHECK_FALSE(d.should_emit(7.0, kSecond + 500'000'000, kSecond));
  CHECK(d.should_emit(7.0, 2 * kSecond + 1, kSecond));
}

TEST_CASE("a change restarts the snapshot interval") {
  GaugeDedup d;
  CHECK(d.should_emit(1.0, 0, kSecond));
  CHECK(d.should_emit(2.0, 800'000'000, kSecond));
  CHECK_FALSE(d.should_emit(2.0, kSecond + 100'000'000, kSecond));  // 0.3 s after the change
  CHECK(d.should_emit(2.0, 1'800'000'000, kSecond));
}

TEST_CASE("a long gap does not backfill snapshots: one assignment gives one event") {
  GaugeDedup d;
  CHECK(d.should_emit(3.0, 0, kSecond));
  int emitted = 0;
  emitted += d.should_emit(3.0, 3600 * kSecond, kSecond) ? 1 : 0;
  emitted += d.should_emit(3.0, 3600 * kSecond + 1, kSecond) ? 1 : 0;
  CHECK(emitted == 1);
}

TEST_CASE("NaN repeated is suppressed and NaN payloads compare equal") {
  GaugeDedup d;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double other_nan = std::bit_cast<double>(0x7ff8dead00000001ull);
  const double negative_nan = -nan;
  CHECK(d.should_emit(nan, 0, kSecond));
  CHECK_FALSE(d.should_emit(nan, 1, kSecond));
  CHECK_FALSE(d.should_emit(other_nan, 2, kSecond));
  CHECK_FALSE(d.should_emit(negative_nan, 3, kSecond));
  CHECK(d.should_emit(1.0, 4, kSecond));
  CHECK(d.should_emit(nan, 5, kSecond));
}

TEST_CASE("-0.0 and 0.0 are different values; infinities compare like values") {
  GaugeDedup d;
  CHECK(d.should_emit(0.0, 0, kSecond));
  CHECK(d.should_emit(-0.0, 1, kSecond));
  CHECK_FALSE(d.should_emit(-0.0, 2, kSecond));
  CHECK(d.should_emit(0.0, 3, kSecond));
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(d.should_emit(inf, 4, kSecond));
  CHECK_FALSE(d.should_emit(inf, 5, kSecond));
  CHECK(d.should_emit(-inf, 6, kSecond));
}

TEST_CASE("the very first assignment is emitted whatever the clock reads, even NaN bit patterns") {
  GaugeDedup d;
  // kNoValue is a NaN pattern; a NaN with that pattern is canonicalized, so
  // it still counts as a first value.
  CHECK(d.should_emit(std::bit_cast<double>(GaugeDedup::kNoValue), -5 * kSecond, kSecond));
  GaugeDedup zero;
  CHECK(zero.should_emit(0.0, 0, kSecond));  // +0.0 at time 0 is also a first value
  CHECK_FALSE(zero.should_emit(0.0, 1, kSecond));
}

TEST_CASE("several threads setting the same unchanged gauge emit it once per interval") {
  GaugeDedup d;
  std::atomic<std::int64_t> now{0};
  std::atomic<int> emitted{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      while (!go) std::this_thread::yield();
      for (int i = 0; i < 20000; ++i) {
        if (d.should_emit(42.0, now.load(), kSecond)) emitted++;
      }
    });
  }
  go = true;
  for (auto& t : threads) t.join();
  CHECK(emitted == 1);

  // Several intervals: exactly one emission per interval boundary crossed,
  // however many threads assign meanwhile.
  emitted = 0;
  threads.clear();
  std::atomic<bool> done{false};
  std::atomic<long> assignments{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      while (!done.load()) {
        if (d.should_emit(42.0, now.load(), kSecond)) emitted++;
        assignments++;
      }
    });
  }
  for (int step = 1; step <= 5; ++step) {
    now.store(step * kSecond);
    const long seen = assignments.load();
    while (assignments.load() < seen + 1000) std::this_thread::yield();
  }
  done = true;
  for (auto& t : threads) t.join();
  CHECK(emitted == 5);
}

TEST_CASE(
    "several threads alternating values: every change is emitted, no repeat within the interval") {
  // Two threads, each assigning its own value: every assignment differs from
  // the last emitted value unless the same thread's previous assignment was
  // the last emitted. With the clock frozen no value may be emitted twice in
  // a row.
  GaugeDedup d;
  std::mutex log_mutex;
  std::vector<double> emitted;
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        const double v = t;
        if (d.should_emit(v, 0, kSecond)) {
          std::lock_guard lock(log_mutex);
          emitted.push_back(v);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  REQUIRE(!emitted.empty());
  // The emission order recorded under log_mutex may interleave, but the total
  // number of emissions of each value is at most one more than the other's.
  const auto zeros = std::count(emitted.begin(), emitted.end(), 0.0);
  const auto ones = std::count(emitted.begin(), emitted.end(), 1.0);
  CHECK(std::abs(zeros - ones) <= 1);
}

TEST_CASE(
    "through the collector: Prometheus receives every gauge update, plugins only changes and "
    "snapshots") {
  InProcessMetricStore store;
  TestSink sink;
  RouterOptions options;
  EventRouter router({test_output("rec", &sink)}, options);
  CollectorOptions copts;
  copts.monotonic_now = &fake_clock;
  fake_now = 100 * kSecond;
  Collector collector(store, &router, copts);
  MetricDefinition def{
      "tokenspeed:num_requests_running", MetricKind::gauge, "running", "", {"model_name"}, {}, {}};
  Gauge g = collector.gauge(def).labels("llama");
  double* slot = nullptr;
  store.for_each_series([&](const InProcessMetricStore::Series& s) { slot = s.slots; });
  REQUIRE(slot != nullptr);

  g.set(1);  // first
  g.set(1);  // suppressed
  CHECK(*slot == 1);
  g.set(2);  // change
  g.set(2);  // suppressed
  fake_now += kSecond - 1;
  g.set(2);  // suppressed: 1 s minus 1 ns
  fake_now += 1;
  g.set(2);                  // snapshot
  fake_now += 10 * kSecond;  // no timer: nothing is emitted during the gap
  g.set(3);
  CHECK(*slot == 3);
  REQUIRE(router.close(std::chrono::seconds(10)));
  const auto events = sink.snapshot();
  std::vector<double> values;
  for (const auto& e : events) values.push_back(e.value);
  CHECK(values == std::vector<double>{1, 2, 2, 3});
  for (const auto& e : events) {
    CHECK(e.operation == TSM_OP_SET);
    CHECK(e.weight == 1);
  }
}

TEST_CASE(
    "the interval uses the monotonic clock; event timestamps remain wall-clock observation times") {
  InProcessMetricStore store;
  TestSink sink;
  EventRouter router({test_output("rec", &sink)});
  CollectorOptions copts;
  copts.monotonic_now = &fake_clock;
  fake_now = 5;  // a monotonic reading nowhere near Unix time
  Collector collector(store, &router, copts);
  MetricDefinition def{"g", MetricKind::gauge, "", "", {}, {}, {}};
  Gauge g = collector.gauge(def).labels();
  const std::int64_t before = event_clock::realtime_ns();
  g.set(1);
  g.set(1);  // suppressed: the monotonic clock did not move although wall time did
  const std::int64_t after = event_clock::realtime_ns();
  REQUIRE(router.close(std::chrono::seconds(10)));
  const auto events = sink.snapshot();
  REQUIRE(events.size() == 1);
  // TSC conversion error is microseconds; a millisecond of slack is generous.
  CHECK(events[0].timestamp_ns >= before - 1'000'000);
  CHECK(events[0].timestamp_ns <= after + 1'000'000);
}

TEST_CASE("several threads setting the same gauge through the collector produce one event") {
  InProcessMetricStore store;
  TestSink sink;
  EventRouter router({test_output("rec", &sink)});
  CollectorOptions copts;
  copts.monotonic_now = &fake_clock;
  fake_now = 0;
  Collector collector(store, &router, copts);
  MetricDefinition def{"g", MetricKind::gauge, "", "", {"rank"}, {}, {}};
  auto& family = collector.gauge(def);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5000; ++i) family.labels("0").set(9.5);
    });
  }
  for (auto& t : threads) t.join();
  REQUIRE(router.close(std::chrono::seconds(10)));
  CHECK(sink.snapshot().size() == 1);
  CHECK(router.figures()[0].accepted == 1);
}
