// remote_write_encoder_test.cpp — the remote_write encoding read back with
// libprotobuf: names as the exposition's, labels sorted with __name__,
// cumulative buckets ending in +Inf, one timestamp per push, the StaleNaN
// bit pattern, requests split by sample count.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <tokenspeed/kit/aggregation.hpp>

#include "remote_write.pb.h"
#include "remote_write_encoder.hpp"

namespace kit = tokenspeed::metrics::kit;
namespace rw = tokenspeed::metrics::remote_write;
namespace pb = tokenspeed::prompb;

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
  tsm_metric_event e{};
  e.struct_size = sizeof e;
  e.info = &info;
  e.metric = info.name;
  e.operation = op;
  e.value = value;
  e.weight = weight;
  e.timestamp_ns = 1000;
  e.label_count = 2;
  e.label_names = kLabelNames;
  e.label_values = kValues;
  aggregator.add(e);
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
  tsm_metric_event e{};
  e.struct_size = sizeof e;
  e.info = &info;
  e.metric = info.name;
  e.operation = TSM_OP_SET;
  e.value = 1;
  e.weight = 1;
  e.label_count = 1;
  e.label_names = names;
  e.label_values = values;
  aggregator.add(e);
  rw::EncoderOptions options;
  options.process_label = {"process", "host-2"};
  std::vector<rw::EncodedRequest> requests;
  rw::Encoder(options).encode(aggregator.collect(1), 1, false, requests);
  const auto series = decode(requests);
  REQUIRE(series.size() == 1);
  CHECK(series[0].labels_size() == 2);
  CHECK(labels_of(series[0])["process"] == "host-2");
}
