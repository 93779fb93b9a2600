// merge_conflicts_test.cpp — a definition the merge left out of /metrics is
// described in one line naming both definitions and who holds each, logged
// once per family, and counted on the merge's own gauges by family.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "prometheus/scrape/merge_conflicts.hpp"
#include "prometheus/scrape/prometheus_merge.hpp"

using namespace tokenspeed::metrics;

namespace {

std::shared_ptr<const MetricDefinition> definition(std::string name, MetricKind kind,
                                                   std::string help) {
  auto metric = std::make_shared<MetricDefinition>();
  metric->name = std::move(name);
  metric->kind = kind;
  metric->help = std::move(help);
  metric->label_names = {"model_name"};
  if (kind == MetricKind::histogram) metric->buckets = {0.5, 1.0};
  return metric;
}

// "queue" defined as a gauge by two producers and as a counter by one.
MergeConflict redefined() {
  MergeConflict conflict;
  conflict.family = "queue";
  conflict.exposed = {definition("queue", MetricKind::gauge, "Queue length."),
                      {"scheduler-0_41.db", "scheduler-1_42.db"},
                      false,
                      2};
  conflict.left_out = {
      {definition("queue", MetricKind::counter, "Queued."), {"frontend_43.db"}, false, 3}};
  conflict.left_out_series = 3;
  return conflict;
}

}  // namespace

TEST_CASE("a family defined differently is described with both definitions and their holders") {
  CHECK(describe_merge_conflict(redefined()) ==
        "tokenspeed-metrics: warning: metric queue is defined differently by two or more "
        "processes; /metrics shows the gauge queue (help \"Queue length.\", labels "
        "[model_name], mode livemax) of scheduler-0_41.db, scheduler-1_42.db; left out: "
        "counter queue (help \"Queued.\", labels [model_name]) of frontend_43.db (3 series; "
        "counted in tokenspeed_metrics_merge_series_left_out)");
}

TEST_CASE("a collision names the sample name both families claim and the launcher's catalog") {
  MergeConflict conflict;
  conflict.family = "h:c_total";
  conflict.exposed = {definition("h:c", MetricKind::counter, "C."), {}, true, 1};
  conflict.shared_name = "h:c_total";
  conflict.left_out = {
      {definition("h:c_total", MetricKind::histogram, "H."), {"scheduler-0_41.db"}, false, 1}};
  conflict.left_out_series = 1;
  const std::string line = describe_merge_conflict(conflict);
  CHECK(line.find("metric h:c_total collides with h:c: both claim the sample name h:c_total") !=
        std::string::npos);
  CHECK(line.find("counter h:c (help \"C.\", labels [model_name]) of the launcher's catalog") !=
        std::string::npos);
  CHECK(line.find("histogram h:c_total (help \"H.\", labels [model_name], buckets [0.5, 1]) of "
                  "scheduler-0_41.db") != std::string::npos);
}

TEST_CASE("each family's conflict is logged once, however many scrapes meet it") {
  std::vector<std::string> lines;
  MergeConflictLog log([&](std::string_view line) { lines.emplace_back(line); });
  MergeConflict other = redefined();
  other.family = "other";
  log.report({redefined()});
  log.report({redefined(), other});
  log.report({other, redefined()});
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].find("metric queue ") != std::string::npos);
  CHECK(lines[1].find("metric other ") != std::string::npos);
}

TEST_CASE("the merge's own gauges count the left-out definitions and series by family") {
  CHECK(merge_conflict_families({}).empty());
  const std::vector<MergedFamily> families = merge_conflict_families({redefined()});
  REQUIRE(families.size() == 2);
  CHECK(families[0].metric->name == "tokenspeed_metrics_merge_conflicting_definitions");
  CHECK(families[1].metric->name == "tokenspeed_metrics_merge_series_left_out");
  REQUIRE(families[0].series.size() == 1);
  CHECK(families[0].series[0].labels ==
        std::vector<std::pair<std::string, std::string>>{{"family", "queue"}});
  CHECK(families[0].series[0].slots == std::vector<double>{1});
  CHECK(families[1].series[0].slots == std::vector<double>{3});
}
