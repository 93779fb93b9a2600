// metric_series_test.cpp — a family as plugins see it: its sample name, kind,
// help, unit, label names and bucket bounds in tsm_metric_info, and the
// operation of its events; a summary is a histogram without bounds.
#include <catch2/catch.hpp>

#include <string>

#include "pipeline/metric_series.hpp"

using namespace tokenspeed::metrics;

namespace {

MetricDefinition definition(MetricKind kind) {
  MetricDefinition metric;
  metric.name = "tokenspeed:latency_seconds";
  metric.kind = kind;
  metric.help = "Latency.";
  metric.unit = "seconds";
  metric.label_names = {"model_name", "dp_rank"};
  if (kind == MetricKind::histogram) metric.buckets = {0.1, 1.0};
  return metric;
}

}  // namespace

TEST_CASE("a histogram family is described to plugins with its labels and bounds") {
  const MetricDefinition metric = definition(MetricKind::histogram);
  const SeriesFamily family(metric);
  CHECK(family.info.struct_size == sizeof(tsm_metric_info));
  CHECK(family.info.kind == TSM_KIND_HISTOGRAM);
  CHECK(std::string(family.info.name) == "tokenspeed:latency_seconds");
  CHECK(std::string(family.info.help) == "Latency.");
  CHECK(std::string(family.info.unit) == "seconds");
  REQUIRE(family.info.label_count == 2);
  CHECK(std::string(family.info.label_names[1]) == "dp_rank");
  REQUIRE(family.info.bucket_count == 2);
  CHECK(family.info.bucket_bounds[1] == 1.0);
  CHECK(family.operation == TSM_OP_OBSERVE);
}

TEST_CASE("a counter family's name is its sample name, ending in _total, and its events inc") {
  MetricDefinition metric = definition(MetricKind::counter);
  metric.name = "tokenspeed:requests";
  metric.label_names.clear();
  const SeriesFamily family(metric);
  CHECK(std::string(family.info.name) == "tokenspeed:requests_total");
  CHECK(family.info.kind == TSM_KIND_COUNTER);
  CHECK(family.info.label_count == 0);
  CHECK(family.info.label_names == nullptr);
  CHECK(family.info.bucket_bounds == nullptr);
  CHECK(family.operation == TSM_OP_INC);
}

TEST_CASE("a gauge's events set; a summary is a histogram without bounds to plugins") {
  CHECK(SeriesFamily(definition(MetricKind::gauge)).operation == TSM_OP_SET);
  const MetricDefinition summary = definition(MetricKind::summary);
  const SeriesFamily family(summary);
  CHECK(family.info.kind == TSM_KIND_HISTOGRAM);
  CHECK(family.info.bucket_count == 0);
  CHECK(family.operation == TSM_OP_OBSERVE);
}
