#include <catch2/catch.hpp>

#include <numeric>

#include "pipeline/collector.hpp"
#include "simulator/engine_simulator.hpp"
#include "core/in_process_metric_store.hpp"

using namespace tokenspeed::metrics;

namespace {

// The slots of the one series of metric, summed over its series.
std::vector<double> slots_of(const InProcessMetricStore& store, std::string_view metric) {
  std::vector<double> total;
  store.for_each_series([&](const InProcessMetricStore::Series& series) {
    if (series.metric->name != metric) return;
    const std::size_t n = series_slot_count(*series.metric);
    total.resize(n);
    for (std::size_t i = 0; i < n; ++i) total[i] += series.slots[i];
  });
  return total;
}

double histogram_count(const std::vector<double>& slots) {
  return std::accumulate(slots.begin(), slots.end() - 1, 0.0);  // buckets, not the sum
}

}  // namespace

TEST_CASE(
    "a streamed chunk is one weighted inter-token observation: the count grows by the tokens") {
  InProcessMetricStore store;
  Collector collector(store);
  Recorder recorder(&collector);
  FrontendSimulator frontend(recorder, SimulationOptions{});
  for (int i = 0; i < 50; ++i) frontend.finish_request();

  const double requests = slots_of(store, "tokenspeed:num_requests").at(0);
  const double generated = slots_of(store, "tokenspeed:generation_tokens").at(0);
  CHECK(requests == 50);
  // Every token after the first is one inter-token sample.
  CHECK(histogram_count(slots_of(store, "tokenspeed:inter_token_latency_seconds")) ==
        generated - requests);
  CHECK(histogram_count(slots_of(store, "tokenspeed:e2e_request_latency_seconds")) == requests);
  CHECK(histogram_count(slots_of(store, "tokenspeed:time_to_first_token_seconds")) == requests);
}

TEST_CASE("a scheduler rank records its gauges and iteration histogram under its dp_rank") {
  InProcessMetricStore store;
  Collector collector(store);
  Recorder recorder(&collector);
  SchedulerSimulator scheduler(recorder, SimulationOptions{}, 3);
  for (int i = 0; i < 20; ++i) scheduler.iterate();
  bool saw_running = false;
  store.for_each_series([&](const InProcessMetricStore::Series& series) {
    REQUIRE(series.label_values.size() == 3);
    CHECK(series.label_values[2] == "3");
    if (series.metric->name == "tokenspeed:num_requests_running") {
      saw_running = true;
      CHECK(series.slots[0] >= 8);
    }
    if (series.metric->name == "tokenspeed:kv_cache_usage_perc") {
      CHECK(series.slots[0] >= 0.0);
      CHECK(series.slots[0] <= 1.0);
    }
  });
  CHECK(saw_running);
  CHECK(histogram_count(slots_of(store, "tokenspeed:iteration_tokens_total")) == 20);
}

TEST_CASE("the same seed records the same values") {
  InProcessMetricStore first_store, second_store;
  Collector first(first_store), second(second_store);
  Recorder first_recorder(&first), second_recorder(&second);
  FrontendSimulator a(first_recorder, SimulationOptions{}), b(second_recorder, SimulationOptions{});
  for (int i = 0; i < 10; ++i) {
    a.finish_request();
    b.finish_request();
  }
  CHECK(slots_of(first_store, "tokenspeed:inter_token_latency_seconds") ==
        slots_of(second_store, "tokenspeed:inter_token_latency_seconds"));
}
