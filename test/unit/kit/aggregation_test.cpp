// aggregation_test.cpp — the kit's aggregation: counter sums, the gauge's last
// value and time, histogram buckets with the weight kept exact, cumulative
// and delta windows, the series limit and the batch trigger.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <tokenspeed/kit/aggregation.hpp>

#include "metric_events.hpp"

namespace kit = tokenspeed::metrics::kit;

namespace {

const char* const kLabelNames[] = {"model"};
const double kBounds[] = {0.01, 0.1, 1.0};

tsm_metric_info info(uint32_t kind, const char* name) {
  tsm_metric_info i{};
  i.struct_size = sizeof i;
  i.kind = kind;
  i.name = name;
  i.help = "help";
  i.unit = "seconds";
  i.label_count = 1;
  i.label_names = kLabelNames;
  if (kind == TSM_KIND_HISTOGRAM) {
    i.bucket_count = 3;
    i.bucket_bounds = kBounds;
  }
  return i;
}

const tsm_metric_info kCounter = info(TSM_KIND_COUNTER, "tokens_total");
const tsm_metric_info kGauge = info(TSM_KIND_GAUGE, "running");
const tsm_metric_info kHistogram = info(TSM_KIND_HISTOGRAM, "latency_seconds");

// Builds an event whose label value lives in the caller's std::string.
tsm_metric_event event(const tsm_metric_info& i, uint32_t op, double value, uint64_t weight,
                       const std::string& label, int64_t ts = 1000) {
  static thread_local const char* values[1];
  values[0] = label.c_str();
  return tokenspeed::metrics::test::metric_event(i, op, value, values, weight, ts);
}

const kit::Point* find(const kit::Snapshot& s, const std::string& name, const std::string& label) {
  for (const kit::Point& p : s.points) {
    if (p.family->name == name && (*p.label_values)[0] == label) return &p;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("counter deltas sum per series; label values tell series apart") {
  kit::Aggregator agg({});
  const std::string a = "a";
  std::string b = "b";
  agg.add(event(kCounter, TSM_OP_INC, 2, 1, a));
  agg.add(event(kCounter, TSM_OP_INC, 3, 1, b));
  agg.add(event(kCounter, TSM_OP_INC, 5, 1, std::string("a")));  // same series, another pointer
  const kit::Snapshot s = agg.collect(2000);
  REQUIRE(s.points.size() == 2);
  CHECK(find(s, "tokens_total", "a")->value == 7);
  CHECK(find(s, "tokens_total", "b")->value == 3);
  CHECK(find(s, "tokens_total", "a")->start_ns == 1000);
  CHECK(find(s, "tokens_total", "a")->time_ns == 2000);
}

TEST_CASE("observe(0.01, weight 3) is count += 3, sum += 0.03, in the le bucket") {
  kit::Aggregator agg({});
  const std::string m = "m";
  agg.add(event(kHistogram, TSM_OP_OBSERVE, 0.01, 3, m));
  agg.add(event(kHistogram, TSM_OP_OBSERVE, 0.5, 1, m));
  agg.add(event(kHistogram, TSM_OP_OBSERVE, 7, 2, m));
  const kit::Snapshot s = agg.collect(2000);
  const kit::Point* p = find(s, "latency_seconds", "m");
  REQUIRE(p != nullptr);
  CHECK(p->count == 6);
  CHECK(p->sum == Approx(0.03 + 0.5 + 14));
  // Buckets (not cumulative): <=0.01, <=0.1, <=1, +Inf.
  const std::vector<uint64_t> buckets(s.buckets.begin() + static_cast<long>(p->bucket_offset),
                                      s.buckets.begin() + static_cast<long>(p->bucket_offset) + 4);
  CHECK(buckets == std::vector<uint64_t>{3, 0, 1, 2});
  CHECK(p->family->bounds == std::vector<double>{0.01, 0.1, 1.0});
}

TEST_CASE("a gauge keeps its last value and that event's time") {
  kit::Aggregator agg({});
  const std::string m = "m";
  agg.add(event(kGauge, TSM_OP_SET, 4, 1, m, 100));
  agg.add(event(kGauge, TSM_OP_SET, 2, 1, m, 300));
  const kit::Snapshot s = agg.collect(5000);
  CHECK(find(s, "running", "m")->value == 2);
  CHECK(find(s, "running", "m")->time_ns == 300);
}

TEST_CASE("cumulative: every series every collect, totals keep growing") {
  kit::Aggregator agg({});
  const std::string a = "a";
  const std::string b = "b";
  agg.add(event(kCounter, TSM_OP_INC, 1, 1, a));
  agg.add(event(kCounter, TSM_OP_INC, 1, 1, b));
  agg.collect(2000);
  agg.add(event(kCounter, TSM_OP_INC, 4, 1, a, 2500));
  const kit::Snapshot s = agg.collect(3000);
  REQUIRE(s.points.size() == 2);
  CHECK(find(s, "tokens_total", "a")->value == 5);
  CHECK(find(s, "tokens_total", "a")->start_ns == 1000);
  CHECK(find(s, "tokens_total", "b")->value == 1);
}

TEST_CASE("delta: only series that changed, each window starting where the last ended") {
  kit::AggregationOptions options;
  options.temporality = kit::Temporality::kDelta;
  kit::Aggregator agg(options);
  const std::string a = "a";
  const std::string b = "b";
  agg.add(event(kCounter, TSM_OP_INC, 1, 1, a));
  agg.add(event(kCounter, TSM_OP_INC, 1, 1, b));
  agg.add(event(kHistogram, TSM_OP_OBSERVE, 0.5, 2, a));
  CHECK(agg.collect(2000).points.size() == 3);
  agg.add(event(kCounter, TSM_OP_INC, 4, 1, a, 2500));
  agg.add(event(kHistogram, TSM_OP_OBSERVE, 0.05, 1, a, 2500));
  const kit::Snapshot s = agg.collect(3000);
  REQUIRE(s.points.size() == 2);
  CHECK(find(s, "tokens_total", "a")->value == 4);
  CHECK(find(s, "tokens_total", "a")->start_ns == 2000);
  const kit::Point* h = find(s, "latency_seconds", "a");
  CHECK(h->count == 1);
  CHECK(h->sum == Approx(0.05));
  CHECK(s.buckets[h->bucket_offset + 1] == 1);
  CHECK(s.buckets[h->bucket_offset + 2] == 0);
}

TEST_CASE("series beyond the limit are counted, never merged into another") {
  kit::AggregationOptions options;
  options.max_series = 2;
  kit::Aggregator agg(options);
  const std::string a = "a";
  const std::string b = "b";
  const std::string c = "c";
  CHECK(agg.add(event(kCounter, TSM_OP_INC, 1, 1, a)) == kit::Aggregator::Added::kAccepted);
  CHECK(agg.add(event(kCounter, TSM_OP_INC, 1, 1, b)) == kit::Aggregator::Added::kAccepted);
  CHECK(agg.add(event(kCounter, TSM_OP_INC, 9, 1, c)) == kit::Aggregator::Added::kOverSeriesLimit);
  CHECK(agg.add(event(kCounter, TSM_OP_INC, 1, 1, a)) == kit::Aggregator::Added::kAccepted);
  const kit::Snapshot s = agg.collect(2000);
  CHECK(s.points.size() == 2);
  CHECK(find(s, "tokens_total", "a")->value == 2);
  CHECK(find(s, "tokens_total", "b")->value == 1);
  CHECK(agg.figures().over_series_limit == 1);
  CHECK(agg.figures().series == 2);
}

TEST_CASE("many series grow the table without losing any") {
  kit::Aggregator agg({});
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 5000; ++i) agg.add(event(kCounter, TSM_OP_INC, 1, 1, std::to_string(i)));
  }
  const kit::Snapshot s = agg.collect(2000);
  REQUIRE(s.points.size() == 5000);
  for (const kit::Point& p : s.points) CHECK(p.value == 2);
}

TEST_CASE("invalid events are counted and change nothing") {
  kit::Aggregator agg({});
  const std::string m = "m";
  CHECK(agg.add(event(kCounter, TSM_OP_INC, -1, 1, m)) == kit::Aggregator::Added::kInvalid);
  CHECK(agg.add(event(kCounter, TSM_OP_SET, 1, 1, m)) == kit::Aggregator::Added::kInvalid);
  CHECK(agg.add(event(kHistogram, TSM_OP_OBSERVE, std::nan(""), 1, m)) ==
        kit::Aggregator::Added::kInvalid);
  CHECK(agg.figures().invalid == 3);
  CHECK(agg.collect(2000).points.empty());
}

TEST_CASE("add reports a full batch once, when batch_points series changed since the collect") {
  kit::AggregationOptions options;
  options.batch_points = 2;
  kit::Aggregator agg(options);
  const std::string a = "a";
  const std::string b = "b";
  const std::string c = "c";
  CHECK(agg.add(event(kCounter, TSM_OP_INC, 1, 1, a)) == kit::Aggregator::Added::kAccepted);
  CHECK(agg.add(event(kCounter, TSM_OP_INC, 1, 1, a)) == kit::Aggregator::Added::kAccepted);
  CHECK(agg.add(event(kCounter, TSM_OP_INC, 1, 1, b)) == kit::Aggregator::Added::kBatchFull);
  CHECK(agg.add(event(kCounter, TSM_OP_INC, 1, 1, c)) == kit::Aggregator::Added::kAccepted);
  agg.collect(2000);
  CHECK(agg.add(event(kCounter, TSM_OP_INC, 1, 1, a)) == kit::Aggregator::Added::kAccepted);
  CHECK(agg.add(event(kCounter, TSM_OP_INC, 1, 1, b)) == kit::Aggregator::Added::kBatchFull);
}

TEST_CASE("the family is copied: nothing points into the host's metadata") {
  kit::Aggregator agg({});
  const std::string m = "m";
  tsm_metric_info transient = kHistogram;
  std::string name = "transient_seconds";
  transient.name = name.c_str();
  agg.add(event(transient, TSM_OP_OBSERVE, 0.5, 1, m));
  name.assign("overwritten");
  const kit::Snapshot s = agg.collect(2000);
  CHECK(s.points.at(0).family->name == "transient_seconds");
  CHECK(s.points.at(0).family->unit == "seconds");
  CHECK(s.points.at(0).family->label_names == std::vector<std::string>{"model"});
}

namespace {

tsm_metric_info exponential_info(uint32_t struct_size = sizeof(tsm_metric_info)) {
  tsm_metric_info i = info(TSM_KIND_HISTOGRAM, "ttft_seconds");
  i.struct_size = struct_size;
  i.histogram_layout = TSM_HISTOGRAM_EXPONENTIAL;
  i.max_buckets = 20;
  i.max_scale = 4;
  i.zero_threshold = 0;
  return i;
}

}  // namespace

TEST_CASE("an exponential family aggregates in exponential buckets only for an output that asks") {
  const tsm_metric_info exponential = exponential_info();
  kit::AggregationOptions options;
  options.exponential_histograms = true;
  kit::Aggregator wanted(options);
  kit::Aggregator classic(kit::AggregationOptions{});
  for (kit::Aggregator* aggregator : {&wanted, &classic}) {
    aggregator->add(event(exponential, TSM_OP_OBSERVE, 0.05, 3, "a"));
    aggregator->add(event(exponential, TSM_OP_OBSERVE, 2.0, 1, "a"));
  }
  const kit::Snapshot got = wanted.collect(2000);
  const kit::Point* point = find(got, "ttft_seconds", "a");
  REQUIRE(point != nullptr);
  REQUIRE(point->family->exponential);
  const kit::ExponentialHistogram& histogram = got.exponential.at(point->exponential_index);
  CHECK(histogram.count() == 4);
  CHECK(histogram.sum() == Approx(2.15));
  CHECK(histogram.scale() < 4);  // 0.05 to 2 takes more than 20 buckets at scale 4
  CHECK(histogram.positive().count_at(kit::exponential_bucket_index(0.05, histogram.scale())) == 3);
  CHECK(point->count == 4);

  // An output that did not ask gets the classic bounds the host sent too.
  const kit::Snapshot plain = classic.collect(2000);
  const kit::Point* classic_point = find(plain, "ttft_seconds", "a");
  REQUIRE(classic_point != nullptr);
  CHECK_FALSE(classic_point->family->exponential);
  CHECK(plain.exponential.empty());
  CHECK(plain.buckets[classic_point->bucket_offset + 1] == 3);  // 0.05 <= 0.1
  CHECK(plain.buckets[classic_point->bucket_offset + 3] == 1);  // 2.0: +Inf
}

TEST_CASE("a metric info too short for the layout is classic, whatever bytes follow") {
  // As a host before minor 4 fills it: the fields past bucket_bounds are not its.
  const tsm_metric_info old = exponential_info(TSM_METRIC_INFO_SIZE_V1);
  CHECK_FALSE(kit::has_exponential_layout(old));
  kit::AggregationOptions options;
  options.exponential_histograms = true;
  kit::Aggregator aggregator(options);
  aggregator.add(event(old, TSM_OP_OBSERVE, 0.05, 1, "a"));
  const kit::Snapshot got = aggregator.collect(2000);
  CHECK_FALSE(find(got, "ttft_seconds", "a")->family->exponential);
}

TEST_CASE("exponential delta windows start empty; infinities are invalid there") {
  const tsm_metric_info exponential = exponential_info();
  kit::AggregationOptions options;
  options.exponential_histograms = true;
  options.temporality = kit::Temporality::kDelta;
  kit::Aggregator aggregator(options);
  aggregator.add(event(exponential, TSM_OP_OBSERVE, 1000.0, 1, "a"));
  CHECK(aggregator.add(event(exponential, TSM_OP_OBSERVE, HUGE_VAL, 1, "a")) ==
        kit::Aggregator::Added::kInvalid);
  CHECK(aggregator.figures().invalid == 1);
  const kit::Snapshot first = aggregator.collect(2000);
  CHECK(first.exponential.at(0).count() == 1);
  aggregator.add(event(exponential, TSM_OP_OBSERVE, 0.001, 2, "a"));
  const kit::Snapshot second = aggregator.collect(3000);
  const kit::ExponentialHistogram& window = second.exponential.at(0);
  CHECK(window.count() == 2);
  CHECK(window.scale() == 4);  // back at max_scale: the earlier range is gone
}
