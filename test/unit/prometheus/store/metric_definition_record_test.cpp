// metric_definition_record_test.cpp — a definition written into a producer's
// metric file reads back exactly (bucket bounds included), and a record that
// is corrupt or names what the exposition rejects reads back as nothing.
#include <catch2/catch.hpp>

#include <string>

#include "prometheus/store/metric_definition_record.hpp"

using namespace tokenspeed::metrics;

namespace {

MetricDefinition latency() {
  MetricDefinition metric;
  metric.name = "tokenspeed:request_latency_seconds";
  metric.kind = MetricKind::histogram;
  metric.help = "Request latency, \"end to end\".";
  metric.unit = "seconds";
  metric.label_names = {"model_name", "dp_rank"};
  metric.buckets = {1e-9, 0.1, 1.0 / 3.0, 1.0, 2.5};
  return metric;
}

}  // namespace

TEST_CASE("a definition reads back as it was written, its bounds exactly") {
  const MetricDefinition metric = latency();
  const auto decoded = decode_definition(metric.name, encode_definition(metric));
  REQUIRE(decoded.has_value());
  CHECK(*decoded == metric);
}

TEST_CASE("a gauge reads back with its merge mode") {
  MetricDefinition gauge;
  gauge.name = "tokenspeed:queue_length";
  gauge.kind = MetricKind::gauge;
  gauge.gauge_mode = GaugeMode::livesum;
  const auto decoded = decode_definition(gauge.name, encode_definition(gauge));
  REQUIRE(decoded.has_value());
  CHECK(decoded->gauge_mode == GaugeMode::livesum);
  CHECK(*decoded == gauge);
}

TEST_CASE("bounds are written as hexadecimal floating-point text") {
  MetricDefinition metric = latency();
  metric.buckets = {1.0};
  CHECK(encode_definition(metric).find("\"0x1p+0\"") != std::string::npos);
}

TEST_CASE("a corrupt or foreign record reads back as nothing") {
  const std::string good = encode_definition(latency());
  const std::string name = latency().name;
  CHECK_FALSE(decode_definition(name, "").has_value());
  CHECK_FALSE(decode_definition(name, "not json").has_value());
  CHECK_FALSE(decode_definition(name, "[]").has_value());
  CHECK_FALSE(decode_definition(name, good.substr(0, good.size() / 2)).has_value());
  std::string unknown_kind = good;
  unknown_kind.replace(unknown_kind.find("histogram"), 9, "histogrum");
  CHECK_FALSE(decode_definition(name, unknown_kind).has_value());
  std::string bad_bound = good;
  bad_bound.replace(bad_bound.find("0x1p+0"), 6, "one");
  CHECK_FALSE(decode_definition(name, bad_bound).has_value());
}

TEST_CASE("a record naming what the exposition rejects reads back as nothing") {
  const std::string good = encode_definition(latency());
  CHECK_FALSE(decode_definition("1 not a metric name", good).has_value());
  std::string bad_label = good;
  bad_label.replace(bad_label.find("\"dp_rank\""), 9, "\"__rank\"");
  CHECK_FALSE(decode_definition(latency().name, bad_label).has_value());
}

TEST_CASE("an exponential histogram reads back with its options, under a kind of its own") {
  MetricDefinition metric = latency();
  metric.exponential = ExponentialHistogramOptions{40, 5, 1.0 / 3.0};
  const std::string record = encode_definition(metric);
  // A launcher that knows no such kind leaves the family out by name.
  CHECK(record.find("\"kind\":\"exponential_histogram\"") != std::string::npos);
  const auto decoded = decode_definition(metric.name, record);
  REQUIRE(decoded.has_value());
  CHECK(*decoded == metric);
  // Options out of range, or of the wrong type, read back as nothing.
  for (const char* bad :
       {"\"max_buckets\":1,", "\"max_buckets\":-3,", "\"max_scale\":21,", "\"max_scale\":\"x\","}) {
    std::string changed = record;
    const std::string key = std::string(bad).substr(0, std::string(bad).find(':') + 1);
    const std::size_t at = changed.find(key);
    REQUIRE(at != std::string::npos);
    changed.replace(at, changed.find(',', at) - at + 1, bad);
    CHECK_FALSE(decode_definition(metric.name, changed).has_value());
  }
}

TEST_CASE("exponential options are refused on another kind and out of their ranges") {
  MetricDefinition counter{"events", MetricKind::counter, "", "", {}, {}, GaugeMode::livemax};
  counter.exponential = ExponentialHistogramOptions{};
  CHECK_THROWS_WITH(checked_definition(counter),
                    Catch::Contains("events") && Catch::Contains("only a histogram"));
  MetricDefinition histogram = latency();
  histogram.exponential = ExponentialHistogramOptions{4097, 20, 0};
  CHECK_THROWS_WITH(checked_definition(histogram), Catch::Contains("max_buckets"));
  histogram.exponential = ExponentialHistogramOptions{160, 20, -1};
  CHECK_THROWS_WITH(checked_definition(histogram), Catch::Contains("zero_threshold"));
  histogram.exponential = ExponentialHistogramOptions{160, 20, 0};
  histogram.buckets.clear();
  CHECK(checked_definition(histogram).buckets.front() == 0x1p-10);  // powers of two by default
}
