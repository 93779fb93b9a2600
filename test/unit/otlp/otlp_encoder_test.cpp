// otlp_encoder_test.cpp — the otlp output's request bodies read back with
// libprotobuf: counters monotonic cumulative Sums named without "_total",
// gauges Gauges, histograms explicit-bucket Histograms with the event's
// bounds, families with exponential buckets ExponentialHistograms (scale,
// zero bucket, both signs, min and max; delta windows start empty), labels as
// attributes, units UCUM, this process's resource on every request, and
// requests split by data point count.
#include <catch2/catch.hpp>

#include <limits>
#include <map>
#include <string>
#include <vector>

#include <tokenspeed/kit/aggregation.hpp>

#include "metric_events.hpp"
#include "otlp_encoder.hpp"
#include "otlp_metrics.pb.h"

namespace kit = tokenspeed::metrics::kit;
namespace otlp = tokenspeed::metrics::otlp;
namespace pb = tokenspeed::otlp;
namespace test = tokenspeed::metrics::test;

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

// A histogram family with exponential buckets (an info of ABI minor 4):
// scale 2 at most, so that the indices below are easy to check by hand.
tsm_metric_info exponential_info() {
  tsm_metric_info i =
      info_of(TSM_KIND_HISTOGRAM, "tokenspeed:e2e_request_latency_seconds", "seconds");
  i.histogram_layout = TSM_HISTOGRAM_EXPONENTIAL;
  i.max_buckets = 160;
  i.max_scale = 2;
  i.zero_threshold = 0.001;
  return i;
}

const tsm_metric_info kExponential = exponential_info();

kit::AggregationOptions exponential_options(kit::Temporality temporality) {
  kit::AggregationOptions options;
  options.temporality = temporality;
  options.exponential_histograms = true;  // as the otlp plugin sets it
  return options;
}

void add(kit::Aggregator& aggregator, const tsm_metric_info& info, uint32_t op, double value,
         const char* const* values = kValues, uint64_t weight = 1) {
  aggregator.add(test::metric_event(info, op, value, values, weight));
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

std::vector<uint64_t> counts_of(const pb::ExponentialHistogramDataPoint::Buckets& buckets) {
  return {buckets.bucket_counts().begin(), buckets.bucket_counts().end()};
}

// The only ExponentialHistogram point of one encoded snapshot.
pb::ExponentialHistogramDataPoint only_exponential_point(const kit::Snapshot& snapshot,
                                                         pb::AggregationTemporality temporality) {
  std::vector<otlp::EncodedRequest> requests;
  otlp::Encoder({}).encode(snapshot, requests);
  REQUIRE(requests.size() == 1);
  const auto metrics = metrics_of(decode(requests)[0]);
  const pb::Metric& metric = metrics.at("tokenspeed:e2e_request_latency_seconds");
  REQUIRE(metric.has_exponential_histogram());
  CHECK(metric.exponential_histogram().aggregation_temporality() == temporality);
  REQUIRE(metric.exponential_histogram().data_points_size() == 1);
  return metric.exponential_histogram().data_points(0);
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

TEST_CASE(
    "a family with exponential buckets becomes an ExponentialHistogram: scale, zero bucket, "
    "both signs, min and max") {
  kit::Aggregator aggregator(exponential_options(kit::Temporality::kCumulative));
  // At scale 2 bucket i holds (2^(i/4), 2^((i+1)/4)]: 1.5 is in bucket 2,
  // 3 in bucket 6, 2 (a power of two: the top of its bucket) in bucket 3.
  add(aggregator, kExponential, TSM_OP_OBSERVE, 1.5);
  add(aggregator, kExponential, TSM_OP_OBSERVE, 3.0, kValues, 2);
  add(aggregator, kExponential, TSM_OP_OBSERVE, -2.0);
  add(aggregator, kExponential, TSM_OP_OBSERVE, 0.0);
  add(aggregator, kExponential, TSM_OP_OBSERVE, -0.0005);  // within the zero threshold
  add(aggregator, kHistogram, TSM_OP_OBSERVE, 0.5);        // a classic family beside it
  const kit::Snapshot snapshot = aggregator.collect(5'000'000);
  std::vector<otlp::EncodedRequest> requests;
  otlp::Encoder({}).encode(snapshot, requests);
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].points == 2);
  const auto metrics = metrics_of(decode(requests)[0]);

  const pb::Metric& metric = metrics.at("tokenspeed:e2e_request_latency_seconds");
  CHECK(metric.unit() == "s");
  CHECK(metric.description() == "Help.");
  REQUIRE(metric.has_exponential_histogram());
  CHECK(metric.exponential_histogram().aggregation_temporality() ==
        pb::AGGREGATION_TEMPORALITY_CUMULATIVE);
  REQUIRE(metric.exponential_histogram().data_points_size() == 1);
  const pb::ExponentialHistogramDataPoint& point = metric.exponential_histogram().data_points(0);
  CHECK(attributes_of(point.attributes()) ==
        std::map<std::string, std::string>{{"dp_rank", "0"}, {"model_name", "llama"}});
  CHECK(point.start_time_unix_nano() == 1000);
  CHECK(point.time_unix_nano() == 5'000'000);
  CHECK(point.count() == 6);
  REQUIRE(point.has_sum());
  CHECK(point.sum() == 1.5 + 6.0 - 2.0 - 0.0005);
  CHECK(point.scale() == 2);
  CHECK(point.zero_count() == 2);
  CHECK(point.zero_threshold() == 0.001);
  CHECK(point.positive().offset() == 2);
  CHECK(counts_of(point.positive()) == std::vector<uint64_t>{1, 0, 0, 0, 2});
  CHECK(point.negative().offset() == 3);
  CHECK(counts_of(point.negative()) == std::vector<uint64_t>{1});
  // OTLP's rule: the count is the zero count plus every bucket.
  CHECK(point.count() == point.zero_count() + 1 + 2 + 1);
  REQUIRE(point.has_min());
  REQUIRE(point.has_max());
  CHECK(point.min() == -2.0);
  CHECK(point.max() == 3.0);

  // Classic families keep their explicit bounds.
  const pb::Metric& classic = metrics.at("tokenspeed:ttft_seconds");
  REQUIRE(classic.has_histogram());
  CHECK(classic.histogram().data_points(0).count() == 1);
}

TEST_CASE("the scale follows the values: a wide range is sent at the lower scale it needs") {
  tsm_metric_info info = exponential_info();
  info.max_buckets = 4;
  kit::Aggregator aggregator(exponential_options(kit::Temporality::kCumulative));
  // 1 and 16 are indices -1 and 15 at scale 2; 4 buckets hold them at
  // scale -1: (1/4, 1] is bucket -1 and (4, 16] bucket 1.
  add(aggregator, info, TSM_OP_OBSERVE, 1.0);
  add(aggregator, info, TSM_OP_OBSERVE, 16.0);
  const pb::ExponentialHistogramDataPoint point =
      only_exponential_point(aggregator.collect(1), pb::AGGREGATION_TEMPORALITY_CUMULATIVE);
  CHECK(point.scale() == -1);
  CHECK(point.positive().offset() == -1);
  CHECK(counts_of(point.positive()) == std::vector<uint64_t>{1, 0, 1});
  CHECK(point.negative().bucket_counts_size() == 0);
  CHECK(point.zero_count() == 0);
  CHECK(point.count() == 2);
}

TEST_CASE("a series whose only observation was refused has no min or max") {
  kit::Aggregator aggregator(exponential_options(kit::Temporality::kCumulative));
  add(aggregator, kExponential, TSM_OP_OBSERVE, std::numeric_limits<double>::infinity());
  const pb::ExponentialHistogramDataPoint point =
      only_exponential_point(aggregator.collect(1), pb::AGGREGATION_TEMPORALITY_CUMULATIVE);
  CHECK(point.count() == 0);
  CHECK(point.sum() == 0);
  CHECK(point.zero_count() == 0);
  CHECK(point.positive().bucket_counts_size() == 0);
  CHECK_FALSE(point.has_min());
  CHECK_FALSE(point.has_max());
}

TEST_CASE(
    "delta: each export holds the window's observations, its buckets cleared and its scale "
    "back at the family's maximum") {
  tsm_metric_info info = exponential_info();
  info.max_buckets = 4;
  kit::Aggregator aggregator(exponential_options(kit::Temporality::kDelta));
  add(aggregator, info, TSM_OP_OBSERVE, 1.0);
  add(aggregator, info, TSM_OP_OBSERVE, 16.0);
  const pb::ExponentialHistogramDataPoint first =
      only_exponential_point(aggregator.collect(2000), pb::AGGREGATION_TEMPORALITY_DELTA);
  CHECK(first.scale() == -1);
  CHECK(first.count() == 2);
  CHECK(first.sum() == 17.0);

  add(aggregator, info, TSM_OP_OBSERVE, 1.5);
  const pb::ExponentialHistogramDataPoint second =
      only_exponential_point(aggregator.collect(3000), pb::AGGREGATION_TEMPORALITY_DELTA);
  CHECK(second.start_time_unix_nano() == 2000);
  CHECK(second.time_unix_nano() == 3000);
  CHECK(second.scale() == 2);
  CHECK(second.count() == 1);
  CHECK(second.sum() == 1.5);
  CHECK(second.positive().offset() == 2);
  CHECK(counts_of(second.positive()) == std::vector<uint64_t>{1});
  CHECK(second.min() == 1.5);
  CHECK(second.max() == 1.5);

  // Nothing observed since: nothing to send.
  std::vector<otlp::EncodedRequest> none;
  otlp::Encoder({}).encode(aggregator.collect(4000), none);
  CHECK(none.empty());
}

TEST_CASE("ExponentialHistogram points are split into requests like any other data point") {
  kit::Aggregator aggregator(exponential_options(kit::Temporality::kCumulative));
  const char* const values[][2] = {{"a", "0"}, {"b", "0"}, {"c", "0"}, {"d", "0"}, {"e", "0"}};
  for (const auto& v : values) add(aggregator, kExponential, TSM_OP_OBSERVE, 3.0, v);
  otlp::EncoderOptions options;
  options.max_points_per_request = 2;
  std::vector<otlp::EncodedRequest> requests;
  otlp::Encoder(options).encode(aggregator.collect(1), requests);
  REQUIRE(requests.size() == 3);
  std::map<std::string, uint64_t> counts;  // by model_name
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto metrics = metrics_of(decode(requests)[i]);
    const auto& points =
        metrics.at("tokenspeed:e2e_request_latency_seconds").exponential_histogram().data_points();
    CHECK(static_cast<std::size_t>(points.size()) == requests[i].points);
    for (const auto& point : points) {
      CHECK(point.positive().offset() == 6);
      counts[attributes_of(point.attributes()).at("model_name")] += point.count();
    }
  }
  CHECK(counts ==
        std::map<std::string, uint64_t>{{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}, {"e", 1}});
}

TEST_CASE("a capped family's overflow series is the one attribute otel.metric.overflow = true") {
  const char* const names[] = {"model_name", TSM_OVERFLOW_LABEL};
  tsm_metric_info info = info_of(TSM_KIND_COUNTER, "tokenspeed:requests_total", "");
  info.label_names = names;
  const char* const own[] = {"llama", ""};
  const char* const overflow[] = {"", "true"};
  kit::Aggregator aggregator({});
  add(aggregator, info, TSM_OP_INC, 2, own);
  add(aggregator, info, TSM_OP_INC, 5, overflow);
  std::vector<otlp::EncodedRequest> requests;
  otlp::Encoder({}).encode(aggregator.collect(5'000'000), requests);
  REQUIRE(requests.size() == 1);
  const auto metrics = metrics_of(decode(requests)[0]);
  const pb::Metric& metric = metrics.at("tokenspeed:requests");
  REQUIRE(metric.sum().data_points_size() == 2);
  bool saw_own = false;
  bool saw_overflow = false;
  for (const auto& point : metric.sum().data_points()) {
    if (point.as_double() == 2) {
      saw_own = true;
      CHECK(attributes_of(point.attributes()) ==
            std::map<std::string, std::string>{{"model_name", "llama"}});
    } else {
      saw_overflow = true;
      CHECK(point.as_double() == 5);
      REQUIRE(point.attributes_size() == 1);
      CHECK(point.attributes(0).key() == "otel.metric.overflow");
      CHECK(point.attributes(0).value().has_bool_value());
      CHECK(point.attributes(0).value().bool_value());
    }
  }
  CHECK((saw_own && saw_overflow));
}
