// remote_write_encoder_test.cpp — the remote_write encoding read back with
// libprotobuf: names as the exposition's, labels sorted with __name__,
// cumulative buckets ending in +Inf, one timestamp per push, the StaleNaN
// bit pattern, requests split by sample count; exponential families as
// native histogram samples (spans and deltas, negative values, the zero
// bucket), or as classic series where no Prometheus schema fits.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <tokenspeed/kit/aggregation.hpp>

#include "metric_events.hpp"
#include "remote_write.pb.h"
#include "remote_write_encoder.hpp"

namespace kit = tokenspeed::metrics::kit;
namespace rw = tokenspeed::metrics::remote_write;
namespace pb = tokenspeed::prompb;
namespace test = tokenspeed::metrics::test;

namespace {

const char* const kLabelNames[] = {"model_name", "Engine"};
const double kBounds[] = {0.1, 1.0, 2.5};

tsm_metric_info info_of(uint32_t kind, const char* name) {
  tsm_metric_info i{};
  i.struct_size = sizeof i;
  i.kind = kind;
  i.name = name;
  i.label_count = 2;
  i.label_names = kLabelNames;
  if (kind == TSM_KIND_HISTOGRAM) {
    i.bucket_count = 3;
    i.bucket_bounds = kBounds;
  }
  return i;
}

const tsm_metric_info kCounter = info_of(TSM_KIND_COUNTER, "tokenspeed:generation_tokens_total");
const tsm_metric_info kGauge = info_of(TSM_KIND_GAUGE, "tokenspeed:num_requests_running");
const tsm_metric_info kHistogram = info_of(TSM_KIND_HISTOGRAM, "tokenspeed:ttft_seconds");
const char* const kValues[] = {"llama", "e0"};

void add(kit::Aggregator& aggregator, const tsm_metric_info& info, uint32_t op, double value,
         uint64_t weight = 1) {
  aggregator.add(test::metric_event(info, op, value, kValues, weight));
}

std::vector<pb::TimeSeries> decode(const std::vector<rw::EncodedRequest>& requests) {
  std::vector<pb::TimeSeries> out;
  for (const auto& request : requests) {
    pb::WriteRequest decoded;
    REQUIRE(decoded.ParseFromString(request.body));
    for (const auto& series : decoded.timeseries()) out.push_back(series);
  }
  return out;
}

tsm_metric_info exponential_info(const char* name, uint32_t max_buckets, int32_t max_scale,
                                 double zero_threshold) {
  tsm_metric_info i = info_of(TSM_KIND_HISTOGRAM, name);
  i.histogram_layout = TSM_HISTOGRAM_EXPONENTIAL;
  i.max_buckets = max_buckets;
  i.max_scale = max_scale;
  i.zero_threshold = zero_threshold;
  return i;
}

kit::AggregationOptions exponential_aggregation() {
  kit::AggregationOptions options;
  options.exponential_histograms = true;
  return options;
}

// Prometheus bucket index -> count, read back from spans and deltas.
std::map<int32_t, int64_t> absolute_counts(
    const google::protobuf::RepeatedPtrField<pb::BucketSpan>& spans,
    const google::protobuf::RepeatedField<int64_t>& deltas) {
  std::map<int32_t, int64_t> out;
  int32_t index = 0;
  int64_t count = 0;
  int next = 0;
  for (const auto& span : spans) {
    index += span.offset();
    for (uint32_t k = 0; k < span.length(); ++k) {
      REQUIRE(next < deltas.size());
      count += deltas[next++];
      if (count != 0) out[index] = count;
      ++index;
    }
  }
  CHECK(next == deltas.size());
  return out;
}

std::map<std::string, std::string> labels_of(const pb::TimeSeries& series) {
  std::map<std::string, std::string> out;
  for (const auto& label : series.labels()) out[label.name()] = label.value();
  return out;
}

}  // namespace

TEST_CASE("series carry the exposition's names, sorted labels and one timestamp") {
  kit::Aggregator aggregator({});
  add(aggregator, kCounter, TSM_OP_INC, 3);
  add(aggregator, kCounter, TSM_OP_INC, 4);
  add(aggregator, kGauge, TSM_OP_SET, 7);
  add(aggregator, kHistogram, TSM_OP_OBSERVE, 0.5, 2);
  add(aggregator, kHistogram, TSM_OP_OBSERVE, 9, 1);
  rw::EncoderOptions options;
  options.constant_labels = {{"cluster", "eu"}, {"model_name", "lost"}};
  options.process_label = {"process", "host-1"};
  std::vector<rw::EncodedRequest> requests;
  rw::Encoder(options).encode(aggregator.collect(5'000'000), 5, false, requests);
  const auto series = decode(requests);
  REQUIRE(series.size() == 2 + 4 + 2);  // counter, gauge, 4 buckets, _sum, _count

  std::map<std::string, double> values;
  for (const auto& s : series) {
    std::vector<std::string> names;
    for (const auto& label : s.labels()) names.push_back(label.name());
    CHECK(std::is_sorted(names.begin(), names.end()));
    CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
    REQUIRE(s.samples_size() == 1);
    CHECK(s.samples(0).timestamp() == 5);
    auto labels = labels_of(s);
    CHECK(labels["process"] == "host-1");
    CHECK(labels["cluster"] == "eu");
    CHECK(labels["model_name"] == "llama");
    CHECK(labels["Engine"] == "e0");
    values[labels["__name__"] + (labels.count("le") ? "{" + labels["le"] + "}" : "")] =
        s.samples(0).value();
  }
  CHECK(values["tokenspeed:generation_tokens_total"] == 7);
  CHECK(values["tokenspeed:num_requests_running"] == 7);
  CHECK(values["tokenspeed:ttft_seconds_bucket{0.1}"] == 0);
  CHECK(values["tokenspeed:ttft_seconds_bucket{1}"] == 2);
  CHECK(values["tokenspeed:ttft_seconds_bucket{2.5}"] == 2);
  CHECK(values["tokenspeed:ttft_seconds_bucket{+Inf}"] == 3);
  CHECK(values["tokenspeed:ttft_seconds_count"] == 3);
  CHECK(values["tokenspeed:ttft_seconds_sum"] == 10);
}

TEST_CASE("stale markers follow each series' last sample with the StaleNaN bits") {
  kit::Aggregator aggregator({});
  add(aggregator, kGauge, TSM_OP_SET, 1);
  std::vector<rw::EncodedRequest> requests;
  rw::Encoder({}).encode(aggregator.collect(1), 100, true, requests);
  const auto series = decode(requests);
  REQUIRE(series.size() == 1);
  REQUIRE(series[0].samples_size() == 2);
  CHECK(series[0].samples(0).value() == 1);
  CHECK(series[0].samples(0).timestamp() == 100);
  CHECK(series[0].samples(1).timestamp() == 101);
  const double marker = series[0].samples(1).value();
  uint64_t bits;
  std::memcpy(&bits, &marker, sizeof bits);
  CHECK(bits == 0x7ff0000000000002ull);
  CHECK(requests[0].samples == 2);
}

TEST_CASE("requests hold at most max_samples_per_request samples") {
  kit::Aggregator aggregator({});
  add(aggregator, kCounter, TSM_OP_INC, 1);
  add(aggregator, kGauge, TSM_OP_SET, 1);
  add(aggregator, kHistogram, TSM_OP_OBSERVE, 1);
  rw::EncoderOptions options;
  options.max_samples_per_request = 3;
  std::vector<rw::EncodedRequest> requests;
  rw::Encoder(options).encode(aggregator.collect(1), 1, false, requests);
  REQUIRE(requests.size() == 3);  // 8 samples
  for (const auto& request : requests) CHECK(request.samples <= 3);
  CHECK(decode(requests).size() == 8);
}

TEST_CASE("the process label wins over a metric label of the same name") {
  static const char* const names[] = {"process"};
  static const char* const values[] = {"mine"};
  tsm_metric_info info = info_of(TSM_KIND_GAUGE, "g");
  info.label_count = 1;
  info.label_names = names;
  kit::Aggregator aggregator({});
  aggregator.add(test::metric_event(info, TSM_OP_SET, 1, values));
  rw::EncoderOptions options;
  options.process_label = {"process", "host-2"};
  std::vector<rw::EncodedRequest> requests;
  rw::Encoder(options).encode(aggregator.collect(1), 1, false, requests);
  const auto series = decode(requests);
  REQUIRE(series.size() == 1);
  CHECK(series[0].labels_size() == 2);
  CHECK(labels_of(series[0])["process"] == "host-2");
}

TEST_CASE("a capped family's empty overflow label is not sent; the overflow series' is") {
  static const char* const names[] = {"lora", TSM_OVERFLOW_LABEL};
  static const char* const own[] = {"a", ""};
  static const char* const overflow[] = {"", "true"};
  tsm_metric_info info = info_of(TSM_KIND_GAUGE, "g");
  info.label_count = 2;
  info.label_names = names;
  kit::Aggregator aggregator({});
  aggregator.add(test::metric_event(info, TSM_OP_SET, 1, own));
  aggregator.add(test::metric_event(info, TSM_OP_SET, 2, overflow));
  std::vector<rw::EncodedRequest> requests;
  rw::Encoder({}).encode(aggregator.collect(1), 1, false, requests);
  std::map<double, std::map<std::string, std::string>> by_value;
  for (const auto& s : decode(requests)) by_value[s.samples(0).value()] = labels_of(s);
  REQUIRE(by_value.size() == 2);
  CHECK(by_value[1] == std::map<std::string, std::string>{{"__name__", "g"}, {"lora", "a"}});
  CHECK(by_value[2].at(TSM_OVERFLOW_LABEL) == "true");
}

TEST_CASE("an exponential family is one series of its own name with a native histogram") {
  // Schema 2: bucket i has the upper boundary 2^(i/4); 1 is the top of 0,
  // 3 lies in (2^(6/4), 2^(7/4)], 2 is the top of 4.
  static const tsm_metric_info info = exponential_info("tokenspeed:e2e_seconds", 160, 2, 0);
  kit::Aggregator aggregator(exponential_aggregation());
  add(aggregator, info, TSM_OP_OBSERVE, 1);
  add(aggregator, info, TSM_OP_OBSERVE, 3, 2);
  add(aggregator, info, TSM_OP_OBSERVE, -2);
  add(aggregator, info, TSM_OP_OBSERVE, 0);
  rw::EncoderOptions options;
  options.process_label = {"process", "host-1"};
  std::vector<rw::EncodedRequest> requests;
  CHECK(rw::Encoder(options).encode(aggregator.collect(1), 42, false, requests) == 0);
  const auto series = decode(requests);
  REQUIRE(series.size() == 1);
  CHECK(requests[0].samples == 1);
  auto labels = labels_of(series[0]);
  CHECK(labels["__name__"] == "tokenspeed:e2e_seconds");
  CHECK(labels["process"] == "host-1");
  CHECK(labels["model_name"] == "llama");
  CHECK(labels.count("le") == 0);
  CHECK(series[0].samples_size() == 0);
  REQUIRE(series[0].histograms_size() == 1);
  const pb::Histogram& h = series[0].histograms(0);
  CHECK(h.count_case() == pb::Histogram::kCountInt);
  CHECK(h.count_int() == 5);
  CHECK(h.sum() == 5);
  CHECK(h.schema() == 2);
  CHECK(h.zero_threshold() == 0);
  CHECK(h.zero_count_case() == pb::Histogram::kZeroCountInt);
  CHECK(h.zero_count_int() == 1);
  CHECK(h.reset_hint() == pb::Histogram::UNKNOWN);
  CHECK(h.timestamp() == 42);
  CHECK(h.positive_counts_size() == 0);
  CHECK(h.negative_counts_size() == 0);
  // Spans and deltas as Prometheus reads them: two positive spans (a gap of
  // six empty buckets starts a new one), counts as differences.
  REQUIRE(h.positive_spans_size() == 2);
  CHECK(h.positive_spans(0).offset() == 0);
  CHECK(h.positive_spans(0).length() == 1);
  CHECK(h.positive_spans(1).offset() == 6);
  CHECK(h.positive_spans(1).length() == 1);
  REQUIRE(h.positive_deltas_size() == 2);
  CHECK(h.positive_deltas(0) == 1);
  CHECK(h.positive_deltas(1) == 1);
  CHECK(absolute_counts(h.positive_spans(), h.positive_deltas()) ==
        std::map<int32_t, int64_t>{{0, 1}, {7, 2}});
  CHECK(absolute_counts(h.negative_spans(), h.negative_deltas()) ==
        std::map<int32_t, int64_t>{{4, 1}});
}

TEST_CASE("a falling count inside a span is a negative delta") {
  static const tsm_metric_info info = exponential_info("h", 160, 0, 0);
  kit::Aggregator aggregator(exponential_aggregation());
  add(aggregator, info, TSM_OP_OBSERVE, 1.5, 5);  // schema 0: bucket 1, (1, 2]
  add(aggregator, info, TSM_OP_OBSERVE, 3, 2);    // bucket 2, (2, 4]
  add(aggregator, info, TSM_OP_OBSERVE, -1.5, 3);
  add(aggregator, info, TSM_OP_OBSERVE, -3);
  std::vector<rw::EncodedRequest> requests;
  rw::Encoder({}).encode(aggregator.collect(1), 1, false, requests);
  const auto series = decode(requests);
  REQUIRE(series.size() == 1);
  const pb::Histogram& h = series[0].histograms(0);
  CHECK(h.schema() == 0);
  REQUIRE(h.positive_deltas_size() == 2);
  CHECK(h.positive_deltas(0) == 5);
  CHECK(h.positive_deltas(1) == -3);
  REQUIRE(h.negative_deltas_size() == 2);
  CHECK(h.negative_deltas(0) == 3);
  CHECK(h.negative_deltas(1) == -2);
  CHECK(absolute_counts(h.negative_spans(), h.negative_deltas()) ==
        std::map<int32_t, int64_t>{{1, 3}, {2, 1}});
  CHECK(h.count_int() == 11);
  CHECK(h.sum() == 7.5 + 6 - 4.5 - 3);
}

TEST_CASE("the zero bucket carries its threshold and every value within it") {
  static const tsm_metric_info info = exponential_info("h", 160, 3, 0.001);
  kit::Aggregator aggregator(exponential_aggregation());
  add(aggregator, info, TSM_OP_OBSERVE, 0.0005);
  add(aggregator, info, TSM_OP_OBSERVE, -0.0002);
  add(aggregator, info, TSM_OP_OBSERVE, 0, 2);
  std::vector<rw::EncodedRequest> requests;
  rw::Encoder({}).encode(aggregator.collect(1), 1, false, requests);
  const auto series = decode(requests);
  REQUIRE(series.size() == 1);
  const pb::Histogram& h = series[0].histograms(0);
  CHECK(h.zero_threshold() == 0.001);
  CHECK(h.zero_count_int() == 4);
  CHECK(h.count_int() == 4);
  CHECK(h.positive_spans_size() == 0);
  CHECK(h.negative_spans_size() == 0);
  CHECK(h.positive_deltas_size() == 0);
}

TEST_CASE("a native histogram's stale marker is a histogram whose sum is the StaleNaN") {
  static const tsm_metric_info info = exponential_info("h", 160, 3, 0);
  kit::Aggregator aggregator(exponential_aggregation());
  add(aggregator, info, TSM_OP_OBSERVE, 2);
  std::vector<rw::EncodedRequest> requests;
  rw::Encoder({}).encode(aggregator.collect(1), 100, true, requests);
  const auto series = decode(requests);
  REQUIRE(series.size() == 1);
  REQUIRE(series[0].histograms_size() == 2);
  CHECK(series[0].samples_size() == 0);
  CHECK(requests[0].samples == 2);
  CHECK(series[0].histograms(0).timestamp() == 100);
  CHECK(series[0].histograms(0).count_int() == 1);
  const pb::Histogram& marker = series[0].histograms(1);
  CHECK(marker.timestamp() == 101);
  CHECK(marker.count_case() == pb::Histogram::kCountInt);
  CHECK(marker.count_int() == 0);
  CHECK(marker.positive_spans_size() == 0);
  const double sum = marker.sum();
  uint64_t bits;
  std::memcpy(&bits, &sum, sizeof bits);
  CHECK(bits == rw::kStaleNaNBits);
}

TEST_CASE("a native histogram is one sample of max_samples_per_request") {
  static const tsm_metric_info info = exponential_info("h", 160, 3, 0);
  static const char* const other[] = {"mistral", "e1"};
  kit::Aggregator aggregator(exponential_aggregation());
  add(aggregator, info, TSM_OP_OBSERVE, 2);
  aggregator.add(test::metric_event(info, TSM_OP_OBSERVE, 3, other));
  rw::EncoderOptions options;
  options.max_samples_per_request = 1;
  std::vector<rw::EncodedRequest> requests;
  rw::Encoder(options).encode(aggregator.collect(1), 1, false, requests);
  REQUIRE(requests.size() == 2);
  for (const auto& request : requests) CHECK(request.samples == 1);
  CHECK(decode(requests).size() == 2);
}

TEST_CASE("a classic family stays classic when exponential histograms are on") {
  kit::Aggregator aggregator(exponential_aggregation());
  add(aggregator, kHistogram, TSM_OP_OBSERVE, 0.5);
  std::vector<rw::EncodedRequest> requests;
  rw::Encoder({}).encode(aggregator.collect(1), 1, false, requests);
  const auto series = decode(requests);
  REQUIRE(series.size() == 4 + 2);
  for (const auto& s : series) {
    CHECK(s.histograms_size() == 0);
    CHECK(s.samples_size() == 1);
  }
}

TEST_CASE("a scale below -4 goes out as classic series at the buckets' boundaries, counted") {
  // Two buckets per sign across 2^-1000 .. 2^1000 need a scale far below -4.
  static const tsm_metric_info info = exponential_info("tokenspeed:wide", 2, 0, 0);
  kit::Aggregator aggregator(exponential_aggregation());
  add(aggregator, info, TSM_OP_OBSERVE, std::ldexp(1.0, -1000));
  add(aggregator, info, TSM_OP_OBSERVE, std::ldexp(1.0, 1000), 2);
  const kit::Snapshot snapshot = aggregator.collect(1);
  REQUIRE(snapshot.exponential.size() == 1);
  REQUIRE(snapshot.exponential[0].scale() == -10);  // buckets (2^-1024, 1], (1, 2^1024]
  std::vector<rw::EncodedRequest> requests;
  CHECK(rw::Encoder({}).encode(snapshot, 7, false, requests) == 1);
  const auto series = decode(requests);
  std::map<std::string, double> values;
  std::vector<double> bounds;
  for (const auto& s : series) {
    CHECK(s.histograms_size() == 0);
    REQUIRE(s.samples_size() == 1);
    auto labels = labels_of(s);
    if (labels.count("le")) {
      CHECK(labels["__name__"] == "tokenspeed:wide_bucket");
      bounds.push_back(std::stod(labels["le"]));
    }
    values[labels["__name__"] + (labels.count("le") ? "{" + labels["le"] + "}" : "")] =
        s.samples(0).value();
  }
  // Ascending and each once: 2^1024, past the doubles, is left to +Inf.
  CHECK(bounds == std::vector<double>{0, 1, INFINITY});
  CHECK(values["tokenspeed:wide_bucket{0}"] == 0);  // the zero bucket, le at its threshold
  CHECK(values["tokenspeed:wide_bucket{1}"] == 1);
  CHECK(values["tokenspeed:wide_bucket{+Inf}"] == 3);
  CHECK(values["tokenspeed:wide_count"] == 3);
  CHECK(values["tokenspeed:wide_sum"] == std::ldexp(1.0, -1000) + 2 * std::ldexp(1.0, 1000));
}
