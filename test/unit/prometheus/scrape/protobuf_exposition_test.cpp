// protobuf_exposition_test.cpp — the Accept header a scraper sends chooses
// the format; the protobuf exposition decodes (with the messages of the
// official field numbers) to the same families as the text: counters,
// gauges, summaries, classic histograms, and exponential histograms as
// native buckets (spans and deltas) beside classic ones.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include <google/protobuf/io/coded_stream.h>

#include "prometheus/scrape/exposition_metrics.pb.h"
#include "prometheus/scrape/protobuf_exposition.hpp"

using namespace tokenspeed::metrics;
namespace pb = tokenspeed::exposition;

namespace {

std::vector<pb::MetricFamily> decoded(const std::string& bytes) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  std::vector<pb::MetricFamily> out;
  while (in.BytesUntilLimit() != 0 && !in.ExpectAtEnd()) {
    std::uint32_t size = 0;
    REQUIRE(in.ReadVarint32(&size));
    const auto limit = in.PushLimit(static_cast<int>(size));
    pb::MetricFamily family;
    REQUIRE(family.ParseFromCodedStream(&in));
    REQUIRE(in.ConsumedEntireMessage());
    in.PopLimit(limit);
    out.push_back(std::move(family));
  }
  return out;
}

MergedSeries series(std::vector<double> slots) {
  MergedSeries out;
  out.labels = {{"model_name", "llama"}};
  out.slots = std::move(slots);
  return out;
}

}  // namespace

TEST_CASE("Prometheus asking for protobuf gets it; curl, text and weaker asks get text") {
  CHECK(negotiate_exposition("application/vnd.google.protobuf;proto=io.prometheus.client."
                             "MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;"
                             "q=0.3,*/*;q=0.2") == ExpositionFormat::protobuf);
  CHECK(negotiate_exposition("application/vnd.google.protobuf; proto=io.prometheus.client."
                             "MetricFamily; encoding=delimited") == ExpositionFormat::protobuf);
  CHECK(negotiate_exposition("*/*") == ExpositionFormat::text);
  CHECK(negotiate_exposition("") == ExpositionFormat::text);
  CHECK(negotiate_exposition("text/plain;version=0.0.4") == ExpositionFormat::text);
  // Not the delimited MetricFamily stream: text.
  CHECK(negotiate_exposition("application/vnd.google.protobuf;proto=io.prometheus.client."
                             "MetricFamily;encoding=text") == ExpositionFormat::text);
  CHECK(negotiate_exposition("application/vnd.google.protobuf") == ExpositionFormat::text);
  // Preferred less than text, or refused: text.
  CHECK(negotiate_exposition("application/vnd.google.protobuf;proto=io.prometheus.client."
                             "MetricFamily;encoding=delimited;q=0.2,text/plain;q=0.5") ==
        ExpositionFormat::text);
  CHECK(negotiate_exposition("application/vnd.google.protobuf;proto=io.prometheus.client."
                             "MetricFamily;encoding=delimited;q=0") == ExpositionFormat::text);
}

TEST_CASE("counters, gauges, summaries and classic histograms decode to the merged values") {
  const MetricDefinition counter{"requests", MetricKind::counter, "Requests.", "", {"model_name"},
                                 {},         GaugeMode::livemax};
  const MetricDefinition gauge{"running", MetricKind::gauge, "", "", {"model_name"},
                               {},        GaugeMode::livemax};
  const MetricDefinition summary{"wait", MetricKind::summary, "", "", {"model_name"},
                                 {},     GaugeMode::livemax};
  const MetricDefinition histogram{"latency", MetricKind::histogram, "", "", {"model_name"},
                                   {0.1, 1},  GaugeMode::livemax};
  std::vector<MergedFamily> families(4);
  families[0].metric = &counter;
  families[0].series = {series({42})};
  families[1].metric = &gauge;
  families[1].series = {series({-3.5})};
  families[2].metric = &summary;
  families[2].series = {series({4, 2.5})};
  families[3].metric = &histogram;
  families[3].series = {series({1, 2, 3, 7.25})};  // per bucket, +Inf, sum

  const std::vector<pb::MetricFamily> out = decoded(render_protobuf_exposition(families));
  REQUIRE(out.size() == 4);
  CHECK(out[0].name() == "requests_total");
  CHECK(out[0].help() == "Requests.");
  CHECK(out[0].type() == pb::COUNTER);
  CHECK(out[0].metric(0).label(0).name() == "model_name");
  CHECK(out[0].metric(0).label(0).value() == "llama");
  CHECK(out[0].metric(0).counter().value() == 42);
  CHECK(out[1].type() == pb::GAUGE);
  CHECK(out[1].metric(0).gauge().value() == -3.5);
  CHECK(out[2].type() == pb::SUMMARY);
  CHECK(out[2].metric(0).summary().sample_count() == 4);
  CHECK(out[2].metric(0).summary().sample_sum() == 2.5);
  const pb::Histogram& h = out[3].metric(0).histogram();
  CHECK(out[3].type() == pb::HISTOGRAM);
  CHECK(h.sample_count() == 6);
  CHECK(h.sample_sum() == 7.25);
  REQUIRE(h.bucket_size() == 2);
  CHECK(h.bucket(0).upper_bound() == 0.1);
  CHECK(h.bucket(0).cumulative_count() == 1);
  CHECK(h.bucket(1).cumulative_count() == 3);
  CHECK_FALSE(h.has_schema());  // classic: no native buckets
}

TEST_CASE("an exponential histogram decodes to the kit's native form and its classic buckets") {
  MetricDefinition metric{"ttft_seconds",    MetricKind::histogram, "", "", {"model_name"}, {},
                          GaugeMode::livemax};
  metric.exponential = ExponentialHistogramOptions{160, 3, 0};
  auto histogram =
      std::make_shared<kit::ExponentialHistogram>(kit::ExponentialHistogramOptions{160, 3, 0});
  for (const double value : {0.05, 0.07, 0.07, 0.3, 2.0, -1.0}) histogram->observe(value);
  std::vector<MergedFamily> families(1);
  families[0].metric = &metric;
  families[0].series = {series({0})};
  families[0].series[0].exponential = histogram;

  const std::vector<pb::MetricFamily> out = decoded(render_protobuf_exposition(families));
  REQUIRE(out.size() == 1);
  const pb::Histogram& h = out[0].metric(0).histogram();
  kit::PrometheusNativeHistogram native;
  REQUIRE(histogram->to_prometheus(native) == kit::ExponentialHistogram::NativeExported::kExported);
  CHECK(h.sample_count() == 6);
  CHECK(h.sample_sum() == Approx(1.49));
  CHECK(h.schema() == native.schema);
  CHECK(h.zero_threshold() == 0);
  REQUIRE(h.positive_span_size() == static_cast<int>(native.positive.spans.size()));
  for (int i = 0; i < h.positive_span_size(); ++i) {
    CHECK(h.positive_span(i).offset() == native.positive.spans[static_cast<std::size_t>(i)].offset);
    CHECK(h.positive_span(i).length() == native.positive.spans[static_cast<std::size_t>(i)].length);
  }
  CHECK(std::vector<std::int64_t>(h.positive_delta().begin(), h.positive_delta().end()) ==
        native.positive.deltas);
  CHECK(std::vector<std::int64_t>(h.negative_delta().begin(), h.negative_delta().end()) ==
        native.negative.deltas);
  // Classic buckets too, cumulative and ascending, ending at the count.
  REQUIRE(h.bucket_size() > 0);
  // -1 is in the magnitude bucket (2^(-1/8), 1] of index -1: the values up
  // to its boundary nearest zero.
  CHECK(h.bucket(0).upper_bound() == -kit::exponential_lower_boundary(-1, 3));
  CHECK(h.bucket(0).cumulative_count() == 1);
  for (int i = 1; i < h.bucket_size(); ++i) {
    CHECK(h.bucket(i).upper_bound() > h.bucket(i - 1).upper_bound());
    CHECK(h.bucket(i).cumulative_count() >= h.bucket(i - 1).cumulative_count());
  }
  CHECK(h.bucket(h.bucket_size() - 1).cumulative_count() == 6);
}

TEST_CASE("an empty exponential histogram still says it is native (one empty span)") {
  MetricDefinition metric{"idle_seconds",    MetricKind::histogram, "", "", {"model_name"}, {},
                          GaugeMode::livemax};
  metric.exponential = ExponentialHistogramOptions{};
  std::vector<MergedFamily> families(1);
  families[0].metric = &metric;
  families[0].series = {series({0})};
  families[0].series[0].exponential = std::make_shared<kit::ExponentialHistogram>();
  const pb::Histogram h = decoded(render_protobuf_exposition(families)).at(0).metric(0).histogram();
  CHECK(h.sample_count() == 0);
  REQUIRE(h.positive_span_size() == 1);
  CHECK(h.positive_span(0).length() == 0);
}
