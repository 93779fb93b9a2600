// otlp_encoder_test.cpp — the otlp output's request bodies read back with
// libprotobuf: counters monotonic cumulative Sums named without "_total",
// gauges Gauges, histograms explicit-bucket Histograms with the event's
// bounds, labels as attributes, units UCUM, this process's resource on every
// request, and requests split by data point count.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include <tokenspeed/kit/aggregation.hpp>

#include "otlp_encoder.hpp"
#include "otlp_metrics.pb.h"

namespace kit = tokenspeed::metrics::kit;
namespace otlp = tokenspeed::metrics::otlp;
namespace pb = tokenspeed::otlp;

namespace {

const char* const kLabelNames[] = {"model_name", "dp_rank"};
const double kBounds[] = {0.1, 1.0, 2.5};
const char* const kValues[] = {"llama", "0"};

tsm_metric_info info_of(uint32_t kind, const char* name, const char* unit) {
  tsm_metric_info i{};
  i.struct_size = sizeof i;
  i.kind = kind;
  i.name = name;
  i.help = "Help.";
  i.unit = unit;
  i.label_count = 2;
  i.label_names = kLabelNames;
  if (kind == TSM_KIND_HISTOGRAM) {
    i.bucket_count = 3;
    i.bucket_bounds = kBounds;
  }
  return i;
}

const tsm_metric_info kCounter =
    info_of(TSM_KIND_COUNTER, "tokenspeed:generation_tokens_total", "tokens");
const tsm_metric_info kGauge = info_of(TSM_KIND_GAUGE, "tokenspeed:num_requests_running", "");
const tsm_metric_info kHistogram =
    info_of(TSM_KIND_HISTOGRAM, "tokenspeed:ttft_seconds", "seconds");

void add(kit::Aggregator& aggregator, const tsm_metric_info& info, uint32_t op, double value,
         const char* const* values = kValues) {
  tsm_metric_event e{};
  e.struct_size = sizeof e;
  e.info = &info;
  e.metric = info.name;
  e.operation = op;
  e.value = value;
  e.weight = 1;
  e.timestamp_ns = 1000;
  e.label_count = 2;
  e.label_names = kLabelNames;
  e.label_values = values;
  aggregator.add(e);
}

std::vector<pb::ExportMetricsServiceRequest> decode(
    const std::vector<otlp::EncodedRequest>& requests) {
  std::vector<pb::ExportMetricsServiceRequest> out;
  for (const auto& request : requests) {
    REQUIRE(out.emplace_back().ParseFromString(request.body));
  }
  return out;
}

std::map<std::string, pb::Metric> metrics_of(const pb::ExportMetricsServiceRequest& request) {
  std::map<std::string, pb::Metric> out;
  for (const auto& resource : request.resource_metrics()) {
    for (const auto& scope : resource.scope_metrics()) {
      for (const auto& metric : scope.metrics()) out[metric.name()] = metric;
    }
  }
  return out;
}

template <class Attributes>
std::map<std::string, std::string> attributes_of(const Attributes& attributes) {
  std::map<std::string, std::string> out;
  for (const auto& attribute : attributes) out[attribute.key()] = attribute.value().string_value();
  return out;
}

}  // namespace

TEST_CASE("each kind becomes its OTLP metric, named and with units as OTLP writes them") {
  kit::Aggregator aggregator({});
  add(aggregator, kCounter, TSM_OP_INC, 5);
  add(aggregator, kGauge, TSM_OP_SET, 3);
  add(aggregator, kHistogram, TSM_OP_OBSERVE, 0.5);
  add(aggregator, kHistogram, TSM_OP_OBSERVE, 2.0);
  std::vector<otlp::EncodedRequest> requests;
  otlp::Encoder({}).encode(aggregator.collect(5'000'000), requests);
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].points == 3);
  const auto metrics = metrics_of(decode(requests)[0]);

  const pb::Metric& counter = metrics.at("tokenspeed:generation_tokens");
  CHECK(counter.unit() == "{token}");
  CHECK(counter.description() == "Help.");
  REQUIRE(counter.has_sum());
  CHECK(counter.sum().is_monotonic());
  CHECK(counter.sum().aggregation_temporality() == pb::AGGREGATION_TEMPORALITY_CUMULATIVE);
  REQUIRE(counter.sum().data_points_size() == 1);
  CHECK(counter.sum().data_points(0).as_double() == 5);
  CHECK(attributes_of(counter.sum().data_points(0).attributes()) ==
        std::map<std::string, std::string>{{"dp_rank", "0"}, {"model_name", "llama"}});

  const pb::Metric& gauge = metrics.at("tokenspeed:num_requests_running");
  REQUIRE(gauge.has_gauge());
  CHECK(gauge.gauge().data_points(0).as_double() == 3);

  const pb::Metric& histogram = metrics.at("tokenspeed:ttft_seconds");
  CHECK(histogram.unit() == "s");
  REQUIRE(histogram.has_histogram());
  const pb::HistogramDataPoint& point = histogram.histogram().data_points(0);
  CHECK(point.count() == 2);
  CHECK(point.sum() == 2.5);
  CHECK(std::vector<double>(point.explicit_bounds().begin(), point.explicit_bounds().end()) ==
        std::vector<double>{0.1, 1.0, 2.5});
  CHECK(std::vector<uint64_t>(point.bucket_counts().begin(), point.bucket_counts().end()) ==
        std::vector<uint64_t>{0, 1, 1, 0});
}

TEST_CASE("every request carries this process's resource and the scope") {
  kit::Aggregator aggregator({});
  add(aggregator, kGauge, TSM_OP_SET, 1);
  otlp::EncoderOptions options;
  options.resource_attributes = {{"service.name", "tokenspeed"}};
  options.process_id = 4242;
  options.scope_version = "0.1.0";
  std::vector<otlp::EncodedRequest> requests;
  otlp::Encoder(options).encode(aggregator.collect(1), requests);
  const auto decoded = decode(requests);
  REQUIRE(decoded.size() == 1);
  REQUIRE(decoded[0].resource_metrics_size() == 1);
  const auto& resource = decoded[0].resource_metrics(0);
  const auto& attributes = resource.resource().attributes();
  REQUIRE(attributes.size() == 2);
  CHECK(attributes[0].key() == "service.name");
  CHECK(attributes[0].value().string_value() == "tokenspeed");
  CHECK(attributes[1].key() == "process.pid");
  CHECK(attributes[1].value().int_value() == 4242);
  CHECK(resource.scope_metrics(0).scope().name() == "tokenspeed-metrics");
  CHECK(resource.scope_metrics(0).scope().version() == "0.1.0");
}

TEST_CASE("requests hold at most the given number of data points; an empty snapshot sends none") {
  kit::Aggregator aggregator({});
  const char* const values[][2] = {{"a", "0"}, {"b", "0"}, {"c", "0"}, {"d", "0"}, {"e", "0"}};
  for (const auto& v : values) add(aggregator, kGauge, TSM_OP_SET, 1, v);
  otlp::EncoderOptions options;
  options.max_points_per_request = 2;
  std::vector<otlp::EncodedRequest> requests;
  otlp::Encoder(options).encode(aggregator.collect(1), requests);
  REQUIRE(requests.size() == 3);
  CHECK(requests[0].points == 2);
  CHECK(requests[2].points == 1);
  for (const auto& request : decode(requests)) {
    CHECK(request.resource_metrics(0).resource().attributes_size() == 1);  // process.pid
  }
  kit::Aggregator empty({});
  std::vector<otlp::EncodedRequest> none;
  otlp::Encoder({}).encode(empty.collect(1), none);
  CHECK(none.empty());
}
