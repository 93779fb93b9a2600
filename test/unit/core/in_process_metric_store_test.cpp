// in_process_metric_store_test.cpp — a series in this process's heap gets
// zeroed slots of its own, on cache lines of its own, that stay where they
// are while other series are added; a scrape sees every series in the order
// it was made.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/in_process_metric_store.hpp"

using namespace tokenspeed::metrics;

namespace {

MetricDefinition histogram() {
  MetricDefinition metric;
  metric.name = "latency_seconds";
  metric.kind = MetricKind::histogram;
  metric.label_names = {"model_name"};
  metric.buckets = {0.1, 1.0, 10.0};
  return metric;
}

}  // namespace

TEST_CASE("a series gets zeroed slots for its kind, on a cache line of its own") {
  const MetricDefinition metric = histogram();
  InProcessMetricStore store;
  const std::vector<std::string> labels{"llama"};
  double* slots = store.allocate_series(metric, labels);
  REQUIRE(slots != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(slots) % 64 == 0);
  for (std::size_t i = 0; i < series_slot_count(metric); ++i) CHECK(slots[i] == 0.0);
}

TEST_CASE("a series keeps its slots while others are added") {
  const MetricDefinition metric = histogram();
  InProcessMetricStore store;
  double* first = store.allocate_series(metric, std::vector<std::string>{"a"});
  first[0] = 42.0;
  std::vector<double*> others;
  for (int i = 0; i < 1000; ++i) {
    others.push_back(store.allocate_series(metric, std::vector<std::string>{std::to_string(i)}));
  }
  CHECK(first[0] == 42.0);
  for (double* other : others) {
    // No two series share a cache line.
    const auto distance =
        reinterpret_cast<std::uintptr_t>(other) > reinterpret_cast<std::uintptr_t>(first)
            ? reinterpret_cast<std::uintptr_t>(other) - reinterpret_cast<std::uintptr_t>(first)
            : reinterpret_cast<std::uintptr_t>(first) - reinterpret_cast<std::uintptr_t>(other);
    CHECK(distance >= 64);
  }
}

TEST_CASE("a scrape visits every series in the order it was made, with its labels and slots") {
  const MetricDefinition metric = histogram();
  MetricDefinition counter;
  counter.name = "requests";
  InProcessMetricStore store;
  double* a = store.allocate_series(metric, std::vector<std::string>{"a"});
  double* b = store.allocate_series(counter, std::vector<std::string>{});
  std::vector<const InProcessMetricStore::Series*> seen;
  store.for_each_series(
      [&](const InProcessMetricStore::Series& series) { seen.push_back(&series); });
  REQUIRE(seen.size() == 2);
  CHECK(seen[0]->metric == &metric);
  CHECK(seen[0]->label_values == std::vector<std::string>{"a"});
  CHECK(seen[0]->slots == a);
  CHECK(seen[1]->metric == &counter);
  CHECK(seen[1]->label_values.empty());
  CHECK(seen[1]->slots == b);
}
