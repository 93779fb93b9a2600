// series_bound_test.cpp — the per-family bound on series: past it a new label
// set is refused (an empty handle, nothing recorded), counted per family in
// tokenspeed_metrics_series_refused_total, logged once per family with the
// refused label set; the series that exist keep recording, and the refused
// path neither locks into interning nor allocates.
#include <catch2/catch.hpp>

#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/collector.hpp"
#include "core/series_bound.hpp"
#include "core/in_process_metric_store.hpp"
#include "allocation_counter.hpp"
#include "test_sinks.hpp"

using namespace tokenspeed::metrics;
using namespace tokenspeed::metrics::test;

namespace {

const MetricDefinition kRequests{
    "tokenspeed:requests", MetricKind::counter, "Requests", "", {"model", "request"}, {}, {}};
const MetricDefinition kLatency{"tokenspeed:latency_seconds",
                                MetricKind::histogram,
                                "Latency",
                                "seconds",
                                {"request"},
                                {0.1, 1.0},
                                {}};

// The value of the refused-series counter of one family (0 when absent).
double refused_count(const InProcessMetricStore& store, const std::string& family) {
  double value = 0;
  store.for_each_series([&](const InProcessMetricStore::Series& series) {
    if (series.metric->name == series_refused_definition().name &&
        series.label_values == std::vector<std::string>{family}) {
      value = series.slots[0];
    }
  });
  return value;
}

std::size_t series_of(const InProcessMetricStore& store, const std::string& name) {
  std::size_t count = 0;
  store.for_each_series([&](const InProcessMetricStore::Series& series) {
    if (series.metric->name == name) ++count;
  });
  return count;
}

}  // namespace

TEST_CASE("past the bound a new label set is refused: an empty handle that records nothing") {
  LogLines logs;
  InProcessMetricStore store(SeriesBound{3, logs.writer()});
  Collector collector(store);
  auto& family = collector.counter(kRequests);
  std::vector<Counter> kept;
  for (int i = 0; i < 3; ++i) kept.push_back(family.labels("llama", "r" + std::to_string(i)));
  for (const Counter& counter : kept) CHECK(counter);

  const Counter refused = family.labels("llama", "r3");
  CHECK_FALSE(refused);
  refused.inc(5);  // does nothing, and does not throw
  CHECK(family.series_count() == 3);
  CHECK(series_of(store, kRequests.name) == 3);
}

TEST_CASE("the series that exist keep recording after the family reached its bound") {
  InProcessMetricStore store(SeriesBound{2, [](std::string_view) {}});
  Collector collector(store);
  auto& family = collector.counter(kRequests);
  const Counter first = family.labels("llama", "a");
  family.labels("llama", "b");
  CHECK_FALSE(family.labels("llama", "c"));
  first.inc(2);
  family.labels("llama", "b").inc(3);  // an existing label set is found, not refused
  CHECK(first.series()->slots[0] == 2);
  CHECK(family.labels("llama", "b").series()->slots[0] == 3);
}

TEST_CASE("refusals are counted per family in tokenspeed_metrics_series_refused_total") {
  InProcessMetricStore store(SeriesBound{1, [](std::string_view) {}});
  Collector collector(store);
  auto& requests = collector.counter(kRequests);
  auto& latency = collector.histogram(kLatency);
  requests.labels("llama", "a");
  latency.labels("a");
  for (int i = 0; i < 5; ++i) CHECK_FALSE(requests.labels("llama", "x" + std::to_string(i)));
  // The same refused label set again is refused (and counted) again.
  CHECK_FALSE(requests.labels("llama", "x0"));
  CHECK_FALSE(latency.labels("b"));
  CHECK(refused_count(store, kRequests.name) == 6);
  CHECK(refused_count(store, kLatency.name) == 1);
  CHECK(series_refused_definition().sample_name() == "tokenspeed_metrics_series_refused_total");
}

TEST_CASE("a family's first refusal is logged once, with the family, the bound and the label set") {
  LogLines logs;
  InProcessMetricStore store(SeriesBound{1, logs.writer()});
  Collector collector(store);
  auto& requests = collector.counter(kRequests);
  auto& latency = collector.histogram(kLatency);
  requests.labels("llama", "a");
  latency.labels("a");
  const std::string long_value(5000, 'z');
  for (int i = 0; i < 100; ++i) requests.labels("llama", long_value + std::to_string(i));
  CHECK(logs.lines.size() == 1);
  latency.labels("b");
  latency.labels("c");
  REQUIRE(logs.lines.size() == 2);
  const std::string& line = logs.lines[0];
  CHECK_THAT(line, Catch::Contains("metric 'tokenspeed:requests' has 1 series"));
  CHECK_THAT(line, Catch::Contains("--metrics-max-series-per-family"));
  CHECK_THAT(line, Catch::Contains("tokenspeed_metrics_series_refused_total"));
  CHECK_THAT(line, Catch::Contains("model=\"llama\", request=\"zzzz"));
  CHECK_THAT(line, Catch::Contains("(5001 bytes)"));  // a long value is cut
  CHECK(line.size() < 600);
  CHECK(line.find('\n') == std::string::npos);
  CHECK_THAT(logs.lines[1], Catch::Contains("metric 'tokenspeed:latency_seconds' has 1 series"));
  CHECK_THAT(logs.lines[1], Catch::Contains("{request=\"b\"}"));
}

TEST_CASE("the refused path allocates nothing once the family is at its bound") {
  InProcessMetricStore store(SeriesBound{1, [](std::string_view) {}});
  Collector collector(store);
  auto& family = collector.counter(kRequests);
  family.labels("llama", "a");
  CHECK_FALSE(family.labels("llama", "first refused"));  // the counter's series is made here
  const std::string values[] = {"b", "c", "d", "e"};
  bool any_granted = false;
  long allocations = 0;
  {
    CountAllocations counting;
    for (const std::string& value : values) {
      const Counter refused = family.labels(std::string_view("llama"), std::string_view(value));
      refused.inc();
      any_granted = any_granted || static_cast<bool>(refused);
    }
    allocations = counting.count();
  }
  CHECK_FALSE(any_granted);
  CHECK(allocations == 0);
  CHECK(refused_count(store, kRequests.name) == 5);
}

TEST_CASE("threads racing past the bound intern exactly the bound and count every refusal") {
  InProcessMetricStore store(SeriesBound{100, [](std::string_view) {}});
  Collector collector(store);
  auto& family = collector.counter(kRequests);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 500;
  std::vector<std::thread> threads;
  std::atomic<int> granted{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        if (family.labels("m", std::to_string(t) + "-" + std::to_string(i))) granted.fetch_add(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(granted == 100);
  CHECK(family.series_count() == 100);
  CHECK(refused_count(store, kRequests.name) == kThreads * kPerThread - 100);
}

TEST_CASE("the default bound is generous: 10000 series per family") {
  CHECK(kDefaultMaxSeriesPerFamily == 10000);
  InProcessMetricStore store;
  CHECK(store.series_bound().max_series_per_family == kDefaultMaxSeriesPerFamily);
}
