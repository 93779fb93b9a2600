// view_renames_test.cpp — a view's new name that another family of the
// process holds never makes the engine's definition fail: the renamed family
// keeps its engine name, an engine family whose name a view gave away records
// nothing, and either is counted in
// tokenspeed_metrics_view_renames_refused_total and written once. Every order
// of definition is tried; a clash of the engine's own still throws.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/in_process_metric_store.hpp"
#include "core/series_bound.hpp"
#include "core/strict_json.hpp"
#include "pipeline/collector.hpp"
#include "pipeline/view_renames.hpp"
#include "test_sinks.hpp"

using namespace tokenspeed::metrics;
using namespace tokenspeed::metrics::test;

namespace {

const MetricDefinition kRunning{
    "tokenspeed:num_requests_running", MetricKind::gauge, "Running.", "", {"model"}, {}, {}};
const MetricDefinition kWaiting{
    "tokenspeed:num_requests_waiting", MetricKind::gauge, "Waiting.", "", {"model"}, {}, {}};

std::shared_ptr<const MetricViews> views(const std::string& list) {
  return std::make_shared<const MetricViews>(
      metric_views_from_json(parse_strict_json(R"({"views": )" + list + "}"), "views.json"));
}

// The first slot of each series of the family called name, by label values.
std::map<std::vector<std::string>, double> values_of(const InProcessMetricStore& store,
                                                     const std::string& name) {
  std::map<std::vector<std::string>, double> out;
  store.for_each_series([&](const InProcessMetricStore::Series& series) {
    if (series.metric->name == name) out[series.label_values] = series.slots[0];
  });
  return out;
}

// A process that defines the families in the given order, each defined twice
// (as an engine that asks for its family again does), and sets each family's
// series to its position + 1.
struct Process {
  LogLines logs;
  InProcessMetricStore store{SeriesBound{10'000, logs.writer()}};
  std::unique_ptr<Collector> collector;

  Process(std::shared_ptr<const MetricViews> views, const std::vector<MetricDefinition>& order) {
    CollectorOptions options;
    options.views = std::move(views);
    collector = std::make_unique<Collector>(store, nullptr, options);
    for (int round = 0; round < 2; ++round) {
      for (std::size_t i = 0; i < order.size(); ++i)
        collector->gauge(order[i]).labels("m").set(static_cast<double>(i + 1));
    }
  }
  double refused(const std::string& family) {
    return values_of(store, view_renames_refused_definition().name)[{family}];
  }
  std::size_t lines_naming(const std::string& family) {
    return logs.matching(std::regex("'" + family + "'")).size();
  }
};

}  // namespace

TEST_CASE("two views that give two families one name: the later keeps its engine name") {
  const auto both = views(
      R"([{"select": {"name": "tokenspeed:num_requests_running"}, "name": "llm:requests"},
          {"select": {"name": "tokenspeed:num_requests_waiting"}, "name": "llm:requests"}])");
  for (const bool running_first : {true, false}) {
    INFO("running defined first: " << running_first);
    const MetricDefinition& first = running_first ? kRunning : kWaiting;
    const MetricDefinition& later = running_first ? kWaiting : kRunning;
    Process process(both, {first, later});
    CHECK(values_of(process.store, "llm:requests") ==
          std::map<std::vector<std::string>, double>{{{"m"}, 1.0}});
    CHECK(values_of(process.store, later.name) ==
          std::map<std::vector<std::string>, double>{{{"m"}, 2.0}});
    CHECK(values_of(process.store, first.name).empty());
    CHECK(process.refused(later.name) == 1);
    CHECK(process.refused(first.name) == 0);
    // Written once, though the family was defined twice, naming the file.
    const auto lines = process.logs.matching(std::regex("keeps the name '" + later.name + "'"));
    REQUIRE(lines.size() == 1);
    CHECK_THAT(lines[0], Catch::Contains("views.json") && Catch::Contains("llm:requests") &&
                             Catch::Contains("tokenspeed_metrics_view_renames_refused_total"));
  }
}

TEST_CASE("families a view gives one name and that are defined alike share the family") {
  const MetricDefinition other{
      "vllm:num_requests_running", MetricKind::gauge, "Running.", "", {"model"}, {}, {}};
  Process process(
      views(R"([{"select": {"name": "tokenspeed:num_requests_running"}, "name": "llm:running"},
                {"select": {"name": "vllm:num_requests_running"}, "name": "llm:running"}])"),
      {kRunning, other});
  CHECK(values_of(process.store, "llm:running") ==
        std::map<std::vector<std::string>, double>{{{"m"}, 2.0}});
  CHECK(process.refused(kRunning.name) == 0);
  CHECK(process.refused(other.name) == 0);
  CHECK(process.logs.all().empty());
}

TEST_CASE("a view that gives a family the name of an engine family: neither definition fails") {
  const auto taken = views(R"([{"select": {"name": "tokenspeed:num_requests_running"},
                 "name": "tokenspeed:num_requests_waiting"}])");
  SECTION("the engine's family first: the renamed one keeps its engine name") {
    Process process(taken, {kWaiting, kRunning});
    CHECK(values_of(process.store, kWaiting.name) ==
          std::map<std::vector<std::string>, double>{{{"m"}, 1.0}});
    CHECK(values_of(process.store, kRunning.name) ==
          std::map<std::vector<std::string>, double>{{{"m"}, 2.0}});
    CHECK(process.refused(kRunning.name) == 1);
    CHECK(process.lines_naming(kRunning.name) == 1);
  }
  SECTION("the renamed family first: the engine's records nothing, counted and written") {
    Process process(taken, {kRunning, kWaiting});
    CHECK(values_of(process.store, kWaiting.name) ==
          std::map<std::vector<std::string>, double>{{{"m"}, 1.0}});
    CHECK(values_of(process.store, kRunning.name).empty());
    CHECK(process.refused(kWaiting.name) == 1);
    const auto lines = process.logs.matching(std::regex("records nothing"));
    REQUIRE(lines.size() == 1);
    CHECK_THAT(lines[0], Catch::Contains("'" + kWaiting.name + "'"));
  }
}

TEST_CASE("a clash of the engine's own definitions still throws, views or not") {
  const MetricDefinition running_again{
      kRunning.name, MetricKind::gauge, "Other help.", "", {"model"}, {}, {}};
  const MetricDefinition running_counter{
      kRunning.name, MetricKind::counter, "Running.", "", {"model"}, {}, {}};
  for (const bool with_views : {false, true}) {
    INFO("views: " << with_views);
    InProcessMetricStore store;
    CollectorOptions options;
    if (with_views) options.views = views(R"([{"select": {"name": "*"}, "outputs": ["x"]}])");
    Collector collector(store, nullptr, options);
    collector.gauge(kRunning);
    CHECK_THROWS_AS(collector.gauge(running_again), std::invalid_argument);
    CHECK_THROWS_AS(collector.counter(running_counter), std::invalid_argument);
    CHECK(values_of(store, view_renames_refused_definition().name).empty());
  }
}
