// cardinality_limit_test.cpp — a view's cardinality_limit: a process holds at
// most that many series of the family, its overflow series included; the
// first limit - 1 label sets keep series of their own, every later one
// records into the series otel_metric_overflow="true" (its other labels ""),
// counted in tokenspeed_metrics_series_overflowed_total and logged once.
// Nothing is refused and nothing is lost: the family's sums stay exact.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/collector.hpp"
#include "pipeline/event_router.hpp"
#include "core/in_process_metric_store.hpp"
#include "core/series_bound.hpp"
#include "core/strict_json.hpp"
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
                                {"model", "request"},
                                {0.1, 1.0},
                                {}};

std::shared_ptr<const MetricViews> capped(std::size_t limit, const std::string& more = "") {
  const std::string text =
      R"({"views": [{"select": {"name": "tokenspeed:*"}, "cardinality_limit": )" +
      std::to_string(limit) + more + "}]}";
  return std::make_shared<const MetricViews>(
      metric_views_from_json(parse_strict_json(text), "views.json"));
}

// Each series of a family by its label values: its first slot (a counter's
// value, a histogram's first bucket).
std::map<std::vector<std::string>, std::vector<double>> series_of(const InProcessMetricStore& store,
                                                                  const std::string& name,
                                                                  std::size_t slots) {
  std::map<std::vector<std::string>, std::vector<double>> out;
  store.for_each_series([&](const InProcessMetricStore::Series& series) {
    if (series.metric->name == name)
      out[series.label_values] = std::vector<double>(series.slots, series.slots + slots);
  });
  return out;
}

double self_count(const InProcessMetricStore& store, const MetricDefinition& self,
                  const std::string& family) {
  double value = 0;
  store.for_each_series([&](const InProcessMetricStore::Series& series) {
    if (series.metric->name == self.name && series.label_values == std::vector<std::string>{family})
      value = series.slots[0];
  });
  return value;
}

const std::vector<std::string> kOverflowSeries{"", "", "true"};

}  // namespace

TEST_CASE("past a view's cardinality limit new label sets record into the overflow series") {
  LogLines logs;
  InProcessMetricStore store(SeriesBound{10'000, logs.writer()});
  TestSink sink;
  EventRouter router({test_output("rec", &sink)});
  CollectorOptions options;
  options.views = capped(3);
  Collector collector(store, &router, options);
  auto& family = collector.counter(kRequests);
  CHECK(family.definition().label_names ==
        std::vector<std::string>{"model", "request", "otel_metric_overflow"});
  family.labels("a", "0").inc(1);
  family.labels("a", "1").inc(2);
  const Counter overflowed = family.labels("b", "0");
  CHECK(overflowed);
  CHECK(overflowed.overflow());
  overflowed.inc(4);
  family.labels("c", "9").inc(8);
  CHECK_FALSE(family.labels("a", "0").overflow());
  family.labels("a", "0").inc(16);  // an existing series keeps its own
  REQUIRE(router.close(std::chrono::seconds(10)));

  const auto series = series_of(store, "tokenspeed:requests", 1);
  CHECK(series.size() == 3);  // the limit counts the overflow series
  CHECK(series.at({"a", "0", ""})[0] == 17);
  CHECK(series.at({"a", "1", ""})[0] == 2);
  CHECK(series.at(kOverflowSeries)[0] == 12);
  CHECK(self_count(store, series_overflowed_definition(), "tokenspeed:requests") == 2);
  CHECK(self_count(store, series_refused_definition(), "tokenspeed:requests") == 0);
  REQUIRE(logs.lines.size() == 1);
  CHECK(logs.lines[0].find("'tokenspeed:requests' has 3 series") != std::string::npos);
  CHECK(logs.lines[0].find("first: {model=\"b\", request=\"0\"}") != std::string::npos);
  // Plugins see the overflow label on every event: "true" on the overflow series.
  std::multiset<std::string> markers;
  for (const auto& event : sink.snapshot()) {
    REQUIRE(event.labels.size() == 3);
    CHECK(event.labels[2].first == "otel_metric_overflow");
    markers.insert(event.labels[2].second);
  }
  CHECK(markers == std::multiset<std::string>{"", "", "", "true", "true"});
}

TEST_CASE("a cardinality limit above the bound on series overflows at the bound, refusing none") {
  InProcessMetricStore store(SeriesBound{4, [](std::string_view) {}});
  CollectorOptions options;
  options.views = capped(100);
  Collector collector(store, nullptr, options);
  auto& family = collector.counter(kRequests);
  for (int i = 0; i < 10; ++i) family.labels("m", std::to_string(i)).inc();
  const auto series = series_of(store, "tokenspeed:requests", 1);
  CHECK(series.size() == 4);
  CHECK(series.at(kOverflowSeries)[0] == 7);
  CHECK(self_count(store, series_refused_definition(), "tokenspeed:requests") == 0);
}

TEST_CASE("the overflow rule holds for random label sets, limits and dropped labels") {
  std::mt19937 random(20261207);
  for (int round = 0; round < 200; ++round) {
    const std::size_t limit = std::vector<std::size_t>{1, 2, 3, 5, 17, 64}[random() % 6];
    const bool drop_request = random() % 2 == 0;
    InProcessMetricStore store(SeriesBound{10'000, [](std::string_view) {}});
    CollectorOptions options;
    options.views = capped(limit, drop_request ? R"(, "drop_labels": ["request"])" : "");
    Collector collector(store, nullptr, options);
    auto& counters = collector.counter(kRequests);
    auto& histograms = collector.histogram(kLatency);
    // The model: label sets keep their own series in order of first use, up to limit - 1.
    std::map<std::vector<std::string>, double> expected;
    std::vector<std::vector<std::string>> order;
    double overflow = 0;
    double overflowed_calls = 0;
    const int calls = 1 + static_cast<int>(random() % 300);
    for (int call = 0; call < calls; ++call) {
      const std::string model = "m" + std::to_string(random() % 7);
      const std::string request = std::to_string(random() % (1 + random() % 90));
      const double delta = std::vector<double>{0, 1, 0.5, 1e15, 3}[random() % 5];
      std::vector<std::string> kept{model};
      if (!drop_request) kept.push_back(request);
      kept.push_back("");
      const bool own = expected.count(kept) != 0 || order.size() + 1 < limit;
      if (own && expected.count(kept) == 0) order.push_back(kept);
      if (own) {
        expected[kept] += delta;
      } else {
        overflow += delta;
        ++overflowed_calls;
      }
      counters.labels(model, request).inc(delta);
      histograms.labels(model, request).observe(0.05);
    }
    INFO("round " << round << " limit " << limit << " drop " << drop_request);
    auto counted = series_of(store, "tokenspeed:requests", 1);
    const auto observed = series_of(store, "tokenspeed:latency_seconds", 1);
    CHECK(counted.size() <= limit);
    CHECK(observed.size() == counted.size());
    std::vector<std::string> marker(drop_request ? 1 : 2, "");
    marker.push_back("true");
    if (overflowed_calls > 0) {
      CHECK(counted.at(marker)[0] == overflow);
      CHECK(observed.at(marker)[0] == overflowed_calls);
      counted.erase(marker);
    }
    std::map<std::vector<std::string>, double> got;
    for (const auto& [labels, slots] : counted) got[labels] = slots[0];
    CHECK(got == expected);
    CHECK(self_count(store, series_overflowed_definition(), "tokenspeed:requests") ==
          overflowed_calls);
  }
}

TEST_CASE("threads naming new label sets at once never pass the limit and lose nothing") {
  InProcessMetricStore store(SeriesBound{10'000, [](std::string_view) {}});
  CollectorOptions options;
  options.views = capped(50);
  Collector collector(store, nullptr, options);
  auto& family = collector.counter(kRequests);
  constexpr int kThreads = 4;
  constexpr int kCalls = 2'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&family, t] {
      for (int i = 0; i < kCalls; ++i) family.labels(std::to_string(t), std::to_string(i)).inc();
    });
  }
  for (std::thread& thread : threads) thread.join();
  const auto series = series_of(store, "tokenspeed:requests", 1);
  CHECK(series.size() == 50);
  double total = 0;
  for (const auto& [labels, slots] : series) total += slots[0];
  CHECK(total == kThreads * kCalls);
  CHECK(series.at(kOverflowSeries)[0] == kThreads * kCalls - 49);
}
