// event_router_test.cpp — delivery and shutdown as the spec's "Asynchronous
// delivery and shutdown" section and issue 3 state them, with in-process
// C-ABI sinks that misbehave on demand.
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/collector.hpp"
#include "pipeline/event_router.hpp"
#include "core/in_process_metric_store.hpp"
#include "test_sinks.hpp"

using namespace tokenspeed::metrics;
using namespace tokenspeed::metrics::test;
using namespace std::chrono_literals;

namespace {

const MetricDefinition kCounter{
    "tokenspeed:num_requests", MetricKind::counter, "Requests", "", {"model", "rank"}, {}, {}};

// Captures log lines (thread-safe: delivery threads and close write) and counts in them.
struct LogCapture : LogLines {
  int count(const std::string& needle) {
    std::lock_guard lock(mutex);
    int n = 0;
    for (const auto& l : lines) n += l.find(needle) != std::string::npos ? 1 : 0;
    return n;
  }
  // Sum of the "<N> <what>" counts over every line (N may carry thousands
  // separators: "41,424").
  std::uint64_t total(const std::string& what) {
    std::lock_guard lock(mutex);
    std::uint64_t sum = 0;
    const std::string needle = " " + what;
    for (const auto& l : lines) {
      for (std::size_t at = l.find(needle); at != std::string::npos; at = l.find(needle, at + 1)) {
        std::size_t begin = at;
        while (begin > 0 && ((l[begin - 1] >= '0' && l[begin - 1] <= '9') || l[begin - 1] == ','))
          --begin;
        std::string digits;
        for (std::size_t i = begin; i < at; ++i)
          if (l[i] != ',') digits.push_back(l[i]);
        if (!digits.empty()) sum += std::stoull(digits);
      }
    }
    return sum;
  }
};

// A router, a store and a collector for one test.
struct Pipeline {
  explicit Pipeline(std::vector<OutputDefinition> outputs, RouterOptions options = {})
      : router(std::move(outputs), with_log(std::move(options))), collector(store, &router) {}
  RouterOptions with_log(RouterOptions options) {
    if (!options.log) options.log = log.writer();
    return options;
  }
  Counter counter(const std::string& rank = "0") {
    return collector.counter(kCounter).labels("llama", rank);
  }
  SinkFigures stats(std::size_t i) { return router.figures().at(i); }

  LogCapture log;
  InProcessMetricStore store;
  EventRouter router;
  Collector collector;
};

}  // namespace

TEST_CASE("no sink is created before its first event; a sink without events is not closed") {
  TestSink sink;
  std::atomic<int> creates{0};
  Pipeline p({test_output("a", &sink, &creates)});
  p.counter();  // interning a series is not an event
  // The delivery thread has looked at its rings, found them empty and gone to sleep.
  REQUIRE(eventually([&] { return p.stats(0).parks >= 1; }));
  CHECK(creates == 0);
  REQUIRE(p.router.close(5s));
  CHECK(creates == 0);
  CHECK(sink.closes == 0);
  CHECK_FALSE(p.stats(0).created);
  CHECK(p.stats(0).closed);
}

TEST_CASE(
    "one sink per output is created lazily on the first event, at most once when first events "
    "race, "
    "and reused by every collector thread") {
  TestSink a, b;
  std::atomic<int> creates_a{0}, creates_b{0};
  Pipeline p({test_output("a", &a, &creates_a), test_output("b", &b, &creates_b)});
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      Counter c = p.counter(std::to_string(t));
      while (!go) std::this_thread::yield();
      for (int i = 0; i < 100; ++i) c.inc();
    });
  }
  go = true;
  for (auto& t : threads) t.join();
  REQUIRE(p.router.close(30s));
  CHECK(creates_a == 1);
  CHECK(creates_b == 1);
  CHECK(a.emits_ok == 800);
  CHECK(b.emits_ok == 800);
  std::set<std::string> ranks;
  for (const auto& e : a.snapshot()) ranks.insert(e.labels[1].second);
  CHECK(ranks.size() == 8);
  CHECK_FALSE(a.overlapping_emits);  // one emit at a time per sink
}

TEST_CASE(
    "emit returns without waiting for create_sink: events queue while the delivery thread creates "
    "the "
    "sink") {
  TestSink sink;
  Gate create_gate;
  std::atomic<int> creates{0};
  Pipeline p({test_output("a", &sink, &creates, TSM_OK, &create_gate)});
  Counter c = p.counter();
  for (int i = 0; i < 10; ++i) c.inc();  // would hang here if the hot path waited
  REQUIRE(create_gate.wait_for_waiter());
  CHECK(sink.emits == 0);
  create_gate.open();
  REQUIRE(p.router.close(30s));
  CHECK(sink.emits_ok == 10);
  CHECK(p.stats(0).delivered == 10);
}

TEST_CASE(
    "a sink whose emit fails is disabled without stopping other outputs; its later events are "
    "counted "
    "as dropped; it is never rebuilt and is still closed at shutdown") {
  TestSink bad, good;
  bad.fail_emit_at = 2;
  std::atomic<int> creates_bad{0};
  Pipeline p({test_output("bad", &bad, &creates_bad), test_output("good", &good)});
  Counter c = p.counter();
  for (int i = 0; i < 10; ++i) c.inc();
  REQUIRE(eventually([&] { return p.stats(0).queue_depth == 0; }));
  for (int i = 0; i < 10; ++i) c.inc();
  REQUIRE_FALSE(p.router.close(30s) == false);
  const SinkFigures s = p.stats(0);
  CHECK(bad.emits == 3);  // two delivered, the third failed, nothing after
  CHECK(s.delivered == 2);
  CHECK(s.dropped_sink_disabled == 18);
  CHECK(s.disabled);
  CHECK(creates_bad == 1);
  CHECK(bad.closes == 1);
  CHECK(good.emits_ok == 20);
  CHECK(p.stats(1).delivered == 20);
  CHECK(identity_holds(s));
  CHECK(p.log.count("emit failed (destination rejected the event)") == 1);
}

TEST_CASE("a sink that raises during emit is disabled like one that returns an error") {
  TestSink bad;
  bad.fail_emit_at = 0;
  bad.throw_in_emit = true;
  Pipeline p({test_output("bad", &bad)});
  Counter c = p.counter();
  for (int i = 0; i < 5; ++i) c.inc();
  p.router.close(30s);
  CHECK(bad.emits == 1);
  CHECK(p.stats(0).dropped_sink_disabled == 5);
  CHECK(bad.closes == 1);
  CHECK(p.log.count("emit threw an exception") == 1);
}

TEST_CASE(
    "a failed create_sink is counted, logged once, never retried; its events are dropped "
    "(disabled); "
    "nothing is closed for it") {
  TestSink sink, other;
  std::atomic<int> creates{0};
  Pipeline p({test_output("broken", &sink, &creates, TSM_ERROR), test_output("other", &other)});
  Counter c = p.counter();
  for (int i = 0; i < 50; ++i) c.inc();
  REQUIRE(eventually([&] { return p.stats(0).queue_depth == 0; }));
  for (int i = 0; i < 50; ++i) c.inc();
  REQUIRE(p.router.close(30s));
  const SinkFigures s = p.stats(0);
  CHECK(creates == 1);
  CHECK(s.create_failed);
  CHECK_FALSE(s.created);
  CHECK(s.dropped_sink_disabled == 100);
  CHECK(s.delivered == 0);
  CHECK(sink.closes == 0);
  CHECK(other.emits_ok == 100);
  CHECK(p.log.count("create_sink failed (cannot reach the collector)") == 1);
  CHECK(identity_holds(s));
}

TEST_CASE("an error or exception while closing one sink does not skip the others") {
  TestSink failing, throwing, fine;
  failing.close_rc = TSM_ERROR;
  throwing.throw_in_close = true;
  Pipeline p({test_output("failing", &failing), test_output("throwing", &throwing),
              test_output("fine", &fine)});
  p.counter().inc();
  CHECK_FALSE(p.router.close(30s));
  CHECK(failing.closes == 1);
  CHECK(throwing.closes == 1);
  CHECK(fine.closes == 1);
  CHECK(p.stats(0).close_failed);
  CHECK(p.stats(1).close_failed);
  CHECK_FALSE(p.stats(2).close_failed);
  CHECK(p.stats(2).delivered == 1);
  CHECK(p.log.count("close failed (flush failed)") == 1);
  CHECK(p.log.count("close threw an exception") == 1);
}

TEST_CASE("close stops accepting new events; repeated close is safe") {
  TestSink sink;
  Pipeline p({test_output("a", &sink)});
  Counter c = p.counter();
  c.inc();
  REQUIRE(p.router.close(30s));
  for (int i = 0; i < 5; ++i) c.inc();
  CHECK(p.router.close(30s));
  CHECK(p.router.close(0s));
  const SinkFigures s = p.stats(0);
  CHECK(s.delivered == 1);
  CHECK(s.dropped_after_close == 5);
  CHECK(s.accepted == 6);
  CHECK(sink.closes == 1);
  CHECK(identity_holds(s));
}

TEST_CASE("concurrent close calls are safe and close each sink once") {
  TestSink sink;
  sink.close_delay = 20ms;
  Pipeline p({test_output("a", &sink)});
  p.counter().inc();
  std::thread other([&] { p.router.close(30s); });
  p.router.close(30s);
  other.join();
  CHECK(p.router.close(30s));
  CHECK(sink.closes == 1);
}

TEST_CASE(
    "close drains what was accepted, then calls the plugin's close after the last emit returned") {
  TestSink sink;
  sink.emit_delay = 1ms;
  Pipeline p({test_output("a", &sink)});
  Counter c = p.counter();
  for (int i = 0; i < 50; ++i) c.inc();
  REQUIRE(p.router.close(30s));
  CHECK(sink.emits_ok == 50);
  CHECK(p.stats(0).delivered == 50);
  CHECK(p.stats(0).discarded_at_deadline == 0);
  CHECK_FALSE(sink.emit_during_or_after_close);
  CHECK(sink.closes == 1);
  CHECK(sink.close_timeout_ns > 0);
  CHECK(sink.close_timeout_ns <= std::chrono::nanoseconds(30s).count());
  CHECK(sink.info_valid_at_close);
}

TEST_CASE("sinks are closed one after another, each with what remains of one shared budget") {
  TestSink first, second;
  first.close_delay = 200ms;  // honours its timeout: sleeps 200 ms of it
  Pipeline p({test_output("first", &first), test_output("second", &second)});
  p.counter().inc();
  REQUIRE(p.router.close(10s));
  CHECK(first.close_order < second.close_order);
  CHECK(first.close_timeout_ns <= std::chrono::nanoseconds(10s).count());
  // The second close began after the first returned, so at least 200 ms of
  // the shared budget were gone.
  CHECK(second.close_timeout_ns <=
        first.close_timeout_ns - std::chrono::nanoseconds(200ms).count());
}

TEST_CASE(
    "a plugin that blocks in emit cannot make close overrun the budget: the stuck delivery thread "
    "is "
    "abandoned, "
    "what it had queued is discarded at the deadline, and it is closed when emit returns") {
  static TestSink stuck_sink;  // static: an abandoned delivery thread may outlive the test body
  auto* stuck = &stuck_sink;
  Gate gate;
  stuck->emit_gate = &gate;
  TestSink fine;
  auto p = std::make_unique<Pipeline>(
      std::vector<OutputDefinition>{test_output("stuck", stuck), test_output("fine", &fine)});
  Counter c = p->counter();
  for (int i = 0; i < 20; ++i) c.inc();
  REQUIRE(gate.wait_for_waiter());
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(p->router.close(100ms));  // returns although emit is still blocked
  const auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed < 100ms + p->router.options().close_grace + 5s);  // hang guard, generous
  const SinkFigures s = p->stats(0);
  CHECK(s.abandoned);
  CHECK(s.discarded_at_deadline == 20);  // one inside emit, 19 queued
  CHECK(s.delivered == 0);
  CHECK(identity_holds(s));
  CHECK(stuck->closes == 0);  // never closed while emit runs
  CHECK(fine.emits_ok == 20);
  CHECK(fine.closes == 1);
  CHECK(p->log.count("20 events discarded at the deadline") == 1);
  gate.open();
  REQUIRE(eventually([&] { return stuck->closes.load() == 1; }));
  CHECK(stuck->close_timeout_ns == 0);
  CHECK(stuck->emits == 1);                        // nothing more was emitted after the deadline
  CHECK(p->stats(0).discarded_at_deadline == 20);  // final
  p.reset();
}

TEST_CASE(
    "a plugin that ignores its close timeout is abandoned after a small grace; the others are "
    "still closed") {
  static TestSink ignoring_sink;  // static: an abandoned delivery thread may outlive the test body
  auto* ignoring = &ignoring_sink;
  Gate gate;
  ignoring->close_gate = &gate;
  TestSink after;
  auto p = std::make_unique<Pipeline>(std::vector<OutputDefinition>{
      test_output("ignoring", ignoring), test_output("after", &after)});
  p->counter().inc();
  // Both sinks exist and hold their event before close begins: on a slow
  // machine a 100 ms budget may otherwise end before a sink is created.
  REQUIRE(eventually([&] { return p->stats(0).delivered == 1 && p->stats(1).delivered == 1; }));
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(p->router.close(100ms));
  CHECK(std::chrono::steady_clock::now() - start <
        100ms + p->router.options().close_grace + 5s);  // hang guard
  CHECK(p->stats(0).abandoned);
  CHECK(p->stats(0).delivered == 1);
  REQUIRE(eventually([&] { return after.closes.load() == 1; }));
  CHECK(after.close_timeout_ns == 0);  // nothing of the budget was left
  gate.open();
  REQUIRE(eventually([&] { return ignoring->closes.load() == 1; }));
  p.reset();
}

TEST_CASE(
    "a full ring drops the event and counts it; drops are logged at most once per interval per "
    "sink") {
  TestSink sink;
  sink.emit_delay = 200us;
  sink.record = false;
  RouterOptions options;
  options.queue_size = 8;
  options.log_interval = 1h;
  Pipeline p({test_output("slow", &sink)}, options);
  Counter c = p.counter();
  for (int i = 0; i < 2000; ++i) c.inc();
  REQUIRE(p.router.close(60s));
  const SinkFigures s = p.stats(0);
  CHECK(s.accepted == 2000);
  CHECK(s.dropped_ring_full > 0);
  CHECK(s.delivered + s.dropped_ring_full == 2000);
  CHECK(identity_holds(s));
  // First occurrence at once, then (interval 1 h) only the summary at close.
  CHECK(p.log.count("events dropped (ring full)") <= 2);
  CHECK(p.log.count("events dropped (ring full)") >= 1);
  CHECK(p.log.total("events dropped (ring full)") == s.dropped_ring_full);
}

TEST_CASE(
    "collector threads do not wake a delivery thread that is awake: no system call per event") {
  TestSink sink;
  Gate gate;
  sink.emit_gate = &gate;
  sink.record = false;
  RouterOptions options;
  options.queue_size = 10000;
  Pipeline p({test_output("a", &sink)}, options);
  Counter c = p.counter();
  c.inc();
  REQUIRE(gate.wait_for_waiter());  // the delivery thread is inside emit, not parked
  const std::uint64_t before = p.stats(0).wakeups;
  for (int i = 0; i < 5000; ++i) c.inc();
  CHECK(p.stats(0).wakeups == before);
  gate.open();
  REQUIRE(p.router.close(30s));
  CHECK(p.stats(0).delivered == 5001);
}

TEST_CASE("an idle delivery thread parks: an idle process uses about no CPU") {
  TestSink sink;
  Pipeline p({test_output("a", &sink)});
  Counter c = p.counter();
  c.inc();
  REQUIRE(eventually([&] { return p.stats(0).delivered == 1; }));
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(500ms);  // the idle interval measured, not a wait for a condition
  getrusage(RUSAGE_SELF, &after);
  const auto wall = std::chrono::steady_clock::now() - start;
  auto cpu = [](const rusage& r) {
    return std::chrono::seconds(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           std::chrono::microseconds(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
  };
  // A spinning delivery thread would use about all of the 500 ms; allow a tenth.
  CHECK(cpu(after) - cpu(before) < wall / 10);
  CHECK(p.stats(0).parks >= 1);
  p.router.close(30s);
}

TEST_CASE("a parked delivery thread is woken by the producer, not by its park timeout") {
  TestSink sink;
  RouterOptions options;
  // Once parked, the delivery thread stays parked until woken: with the default
  // timeout a busy machine could let it wake on its own just before the
  // event and deliver it without a wake call.
  options.idle_park_timeout = std::chrono::hours(1);
  Pipeline p({test_output("a", &sink)}, options);
  Counter c = p.counter();
  c.inc();
  // Parked with every ring empty, the thread sleeps until an event wakes it.
  REQUIRE(eventually([&] {
    const SinkFigures s = p.stats(0);
    return s.delivered == 1 && s.parked;
  }));
  const std::uint64_t before = p.stats(0).wakeups;
  c.inc();
  REQUIRE(eventually([&] { return p.stats(0).delivered == 2; }));
  CHECK(p.stats(0).wakeups == before + 1);
  REQUIRE(p.router.close(30s));
}

TEST_CASE(
    "memory stays bounded whatever a plugin does: a blocked sink's ring stays at queue_size, "
    "the rest is dropped and counted") {
  TestSink sink;
  Gate gate;
  sink.emit_gate = &gate;
  RouterOptions options;
  options.queue_size = 64;
  Pipeline p({test_output("a", &sink)}, options);
  Counter c = p.counter();
  c.inc();
  REQUIRE(gate.wait_for_waiter());
  for (int i = 0; i < 100000; ++i) c.inc();  // a blocked plugin: the ring stays 64 slots
  const SinkFigures s = p.stats(0);
  CHECK(s.dropped_ring_full >= 100000 - 64);
  CHECK(s.queue_depth <= 64 + 1);  // the ring plus the event inside emit
  CHECK(p.router.ring_sets() == 1);
  gate.open();
  p.router.close(30s);
  CHECK(identity_holds(p.stats(0)));
}

TEST_CASE("a router destroyed without close still closes its sinks") {
  TestSink sink;
  InProcessMetricStore store;
  {
    auto router =
        std::make_unique<EventRouter>(std::vector<OutputDefinition>{test_output("a", &sink)});
    Collector collector(store, router.get());  // outlives the router, as collector.hpp requires
    collector.counter(kCounter).labels("llama", "0").inc();
    REQUIRE(eventually([&] { return router->figures()[0].delivered == 1; }));
    router.reset();
  }
  REQUIRE(eventually([&] { return sink.closes.load() == 1; }));
}

TEST_CASE(
    "collector threads that come and go reuse the ring sets of exited threads: memory stays "
    "bounded") {
  TestSink sink;
  sink.record = false;
  Pipeline p({test_output("a", &sink)});
  for (int t = 0; t < 50; ++t) {
    std::thread([&] {
      Counter c = p.counter();
      for (int i = 0; i < 10; ++i) c.inc();
    }).join();
  }
  CHECK(p.router.ring_sets() == 1);
  REQUIRE(p.router.close(30s));
  CHECK(p.stats(0).delivered == 500);
  CHECK(identity_holds(p.stats(0)));
}

TEST_CASE(
    "a slow sink still draining at the deadline stops after its current emit and is closed within "
    "the grace") {
  TestSink slow;
  slow.emit_delay = 5ms;
  slow.record = false;
  RouterOptions options;
  options.close_grace = 10s;  // generous: the rule is that close waits for it, not how fast it is
  Pipeline p({test_output("slow", &slow)}, options);
  Counter c = p.counter();
  for (int i = 0; i < 200; ++i) c.inc();
  REQUIRE(eventually([&] { return slow.emits.load() >= 1; }));
  CHECK_FALSE(p.router.close(20ms));  // 200 x 5 ms cannot drain in 20 ms
  CHECK(slow.closes == 1);            // closed before close() returned
  CHECK(slow.close_timeout_ns == 0);  // the budget was spent
  const SinkFigures s = p.stats(0);
  CHECK_FALSE(s.abandoned);
  CHECK(s.closed);
  CHECK(s.discarded_at_deadline > 0);
  CHECK(s.delivered + s.discarded_at_deadline == 200);
  CHECK(identity_holds(s));
  CHECK_FALSE(slow.emit_during_or_after_close);
}
