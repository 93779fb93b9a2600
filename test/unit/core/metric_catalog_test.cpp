#include <catch2/catch.hpp>

#include <algorithm>

#include "core/metric_catalog.hpp"

using namespace tokenspeed::metrics;

TEST_CASE("counters are exposed with the _total suffix") {
  MetricDefinition counter{"tokenspeed:prompt_tokens", MetricKind::counter, "", "", {}, {}, {}};
  CHECK(counter.sample_name() == "tokenspeed:prompt_tokens_total");
  MetricDefinition histogram{
      "tokenspeed:iteration_tokens_total", MetricKind::histogram, "", "", {}, {1}, {}};
  CHECK(histogram.sample_name() == "tokenspeed:iteration_tokens_total");
}

TEST_CASE("the engine catalog has ascending histogram buckets and the documented labels") {
  const auto& catalog = tokenspeed_catalog();
  REQUIRE(catalog.size() == 18);
  for (const MetricDefinition& metric : catalog) {
    INFO(metric.name);
    CHECK(std::is_sorted(metric.buckets.begin(), metric.buckets.end()));
    CHECK(std::adjacent_find(metric.buckets.begin(), metric.buckets.end()) == metric.buckets.end());
    CHECK(metric.buckets.empty() == (metric.kind != MetricKind::histogram));
  }
  auto func = std::find_if(catalog.begin(), catalog.end(), [](const auto& m) {
    return m.name == "tokenspeed:func_latency_seconds";
  });
  REQUIRE(func != catalog.end());
  CHECK(func->buckets.size() == 18);
  CHECK(func->buckets.front() == Approx(0.05));
  CHECK(func->label_names == std::vector<std::string>{"model_name", "app_key", "name"});
}
