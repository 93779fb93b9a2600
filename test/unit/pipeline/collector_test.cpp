// collector_test.cpp — the collector API: families from definitions, series
// interned once, updates reaching the Prometheus aggregate, events that match
// the spec field by field, and no allocation on the hot path.
#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/collector.hpp"
#include "pipeline/event_router.hpp"
#include "core/in_process_metric_store.hpp"
#include "core/strict_json.hpp"
#include "allocation_counter.hpp"
#include "test_sinks.hpp"

using namespace tokenspeed::metrics;
using namespace tokenspeed::metrics::test;

namespace {

// A store that counts allocate_series calls.
class CountingStore final : public MetricStore {
 public:
  double* allocate_series(const MetricDefinition& metric,
                          std::span<const std::string> values) override {
    calls.fetch_add(1);
    return inner.allocate_series(metric, values);
  }
  std::atomic<int> calls{0};
  InProcessMetricStore inner;
};

const MetricDefinition kCounter{"tokenspeed:prompt_tokens",
                                MetricKind::counter,
                                "Prompt tokens",
                                "tokens",
                                {"model", "rank"},
                                {},
                                {}};
const MetricDefinition kGauge{
    "tokenspeed:kv_cache_usage_perc", MetricKind::gauge, "KV use", "", {"model", "rank"}, {}, {}};
const MetricDefinition kHistogram{"tokenspeed:inter_token_latency_seconds",
                                  MetricKind::histogram,
                                  "ITL",
                                  "seconds",
                                  {"model", "rank"},
                                  {0.01, 0.1, 1.0},
                                  {}};

std::vector<const InProcessMetricStore::Series*> all_series(const InProcessMetricStore& store) {
  std::vector<const InProcessMetricStore::Series*> out;
  store.for_each_series([&](const InProcessMetricStore::Series& s) { out.push_back(&s); });
  return out;
}

}  // namespace

TEST_CASE("a series is interned once: allocate_series is called exactly once per label set") {
  CountingStore store;
  Collector collector(store);
  auto& family = collector.counter(kCounter);
  Counter a = family.labels("llama", "0");
  Counter b = family.labels("llama", "0");
  Counter c = family.labels(std::string("llama"), std::string_view("1"));
  CHECK(a.series() == b.series());
  CHECK(a.series() != c.series());
  CHECK(store.calls == 2);
  CHECK(&collector.counter(kCounter) == &family);
  CHECK(family.series_count() == 2);
}

TEST_CASE("concurrent first lookups of one series intern it once") {
  CountingStore store;
  Collector collector(store);
  auto& family = collector.counter(kCounter);
  std::vector<std::thread> threads;
  std::vector<const MetricSeries*> seen(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        Counter c = family.labels("llama", std::to_string(i % 50));
        if (i == 7) seen[t] = c.series();
        c.inc();
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(store.calls == 50);
  for (auto* s : seen) CHECK(s == seen[0]);
  double total = 0;
  for (auto* s : all_series(store.inner)) total += s->slots[0];
  CHECK(total == 8 * 200);
}

TEST_CASE("the lookup table keeps finding every series as it grows") {
  InProcessMetricStore store;
  Collector collector(store);
  auto& family = collector.counter(kCounter);
  std::vector<const MetricSeries*> first;
  for (int i = 0; i < 1000; ++i) first.push_back(family.labels("m", std::to_string(i)).series());
  for (int i = 0; i < 1000; ++i)
    CHECK(family.labels("m", std::to_string(i)).series() == first[static_cast<size_t>(i)]);
  CHECK(std::set<const MetricSeries*>(first.begin(), first.end()).size() == 1000);
}

TEST_CASE("label values that concatenate alike are different series") {
  InProcessMetricStore store;
  Collector collector(store);
  auto& family = collector.counter(kCounter);
  CHECK(family.labels("ab", "c").series() != family.labels("a", "bc").series());
}

TEST_CASE("a wrong number of label values is refused; a wrong kind is refused") {
  InProcessMetricStore store;
  Collector collector(store);
  CHECK_THROWS_AS(collector.counter(kCounter).labels("only-one"), std::invalid_argument);
  CHECK_THROWS_AS(collector.gauge(kCounter), std::invalid_argument);
  CHECK_THROWS_AS(collector.histogram(kGauge), std::invalid_argument);
}

TEST_CASE("a family whose sample names collide with another family's in this process is refused") {
  const auto plain = [](const char* name, MetricKind kind) {
    return MetricDefinition{name, kind, "", "", {}, {}, GaugeMode::livemax};
  };
  const auto refused = [](Collector& collector, const MetricDefinition& definition) -> std::string {
    try {
      switch (definition.kind) {
        case MetricKind::counter:
          collector.counter(definition);
          break;
        case MetricKind::gauge:
          collector.gauge(definition);
          break;
        case MetricKind::histogram:
          collector.histogram(definition);
          break;
        case MetricKind::summary:
          collector.summary(definition);
          break;
      }
    } catch (const std::invalid_argument& error) {
      return error.what();
    }
    return "";
  };
  InProcessMetricStore store;
  Collector collector(store);
  collector.counter(plain("h:c", MetricKind::counter));
  collector.histogram(plain("h:h", MetricKind::histogram));
  collector.summary(plain("h:s", MetricKind::summary));

  const std::string message = refused(collector, plain("h:c_total", MetricKind::gauge));
  CHECK(message ==
        "metric h:c_total (gauge) collides with the counter h:c already defined in this process: "
        "both claim the sample name h:c_total (duplicated timeseries)");
  CHECK(refused(collector, plain("h:c_created", MetricKind::gauge)).find("counter h:c") !=
        std::string::npos);
  CHECK(refused(collector, plain("h:c", MetricKind::gauge)).find("already defined differently") !=
        std::string::npos);
  for (const char* name : {"h:h_bucket", "h:h_sum", "h:h_count", "h:h_created"}) {
    INFO(name);
    CHECK(refused(collector, plain(name, MetricKind::gauge)).find("histogram h:h") !=
          std::string::npos);
  }
  for (const char* name : {"h:s_sum", "h:s_count", "h:s_created"}) {
    INFO(name);
    CHECK(refused(collector, plain(name, MetricKind::gauge)).find("summary h:s") !=
          std::string::npos);
  }
  CHECK(refused(collector, plain("h:s_bucket", MetricKind::gauge)).empty());
  // The other way round: the gauge first, then the family that claims its name.
  collector.gauge(plain("h:g_total", MetricKind::gauge));
  CHECK(refused(collector, plain("h:g", MetricKind::counter)).find("gauge h:g_total") !=
        std::string::npos);
  collector.gauge(plain("h:x_count", MetricKind::gauge));
  CHECK(refused(collector, plain("h:x", MetricKind::histogram)).find("gauge h:x_count") !=
        std::string::npos);
  // Names that only look alike are fine, and a refused family left nothing behind.
  CHECK(refused(collector, plain("h:c_totals", MetricKind::gauge)).empty());
  CHECK(refused(collector, plain("h:h_bucket_size", MetricKind::gauge)).empty());
  CHECK(refused(collector, plain("h:c_total", MetricKind::gauge)) == message);

  SECTION("a collector of a process with metrics disabled refuses them too") {
    Collector disabled(nullptr);
    disabled.counter(plain("h:c", MetricKind::counter));
    CHECK_FALSE(refused(disabled, plain("h:c_total", MetricKind::gauge)).empty());
  }
}

TEST_CASE("the TokenSpeed catalog has no two families whose sample names collide") {
  InProcessMetricStore store;
  Collector collector(store);
  for (const MetricDefinition& definition : tokenspeed_catalog()) {
    INFO(definition.name);
    switch (definition.kind) {
      case MetricKind::counter:
        CHECK_NOTHROW(collector.counter(definition));
        break;
      case MetricKind::gauge:
        CHECK_NOTHROW(collector.gauge(definition));
        break;
      case MetricKind::histogram:
        CHECK_NOTHROW(collector.histogram(definition));
        break;
      case MetricKind::summary:
        CHECK_NOTHROW(collector.summary(definition));
        break;
    }
  }
}

TEST_CASE("counter inc reaches the Prometheus aggregate; a negative or NaN delta is ignored") {
  InProcessMetricStore store;
  Collector collector(store);
  Counter c = collector.counter(kCounter).labels("llama", "0");
  c.inc();
  c.inc(2.5);
  c.inc(-1);
  c.inc(std::numeric_limits<double>::quiet_NaN());
  auto series = all_series(store);
  REQUIRE(series.size() == 1);
  CHECK(series[0]->slots[0] == 3.5);
  CHECK(series[0]->label_values == std::vector<std::string>{"llama", "0"});
}

TEST_CASE(
    "histogram observe fills the non-cumulative bucket, the +Inf bucket and the sum, weight "
    "times") {
  InProcessMetricStore store;
  Collector collector(store);
  Histogram h = collector.histogram(kHistogram).labels("llama", "0");
  h.observe(0.01, 3);  // le 0.01 (bounds are inclusive)
  h.observe(0.5);      // le 1.0
  h.observe(7.0, 2);   // +Inf
  h.observe(1.0, 0);   // weight 0: nothing
  auto series = all_series(store);
  REQUIRE(series.size() == 1);
  const double* s = series[0]->slots;
  CHECK(s[0] == 3);
  CHECK(s[1] == 0);
  CHECK(s[2] == 1);
  CHECK(s[3] == 2);
  CHECK(s[4] == Approx(0.03 + 0.5 + 14.0));
}

TEST_CASE("without an external output no event is built") {
  InProcessMetricStore store;
  Collector collector(store);
  Counter c = collector.counter(kCounter).labels("llama", "0");
  CHECK(c.series()->router == nullptr);
  CountAllocations allocations;
  for (int i = 0; i < 100; ++i) c.inc();
  CHECK(allocations.count() == 0);
}

TEST_CASE("the event a plugin receives matches the spec field by field, with the metric metadata") {
  InProcessMetricStore store;
  TestSink sink;
  EventRouter router({test_output("rec", &sink)});
  Collector collector(store, &router);
  Counter c = collector.counter(kCounter).labels("llama", "0");
  Gauge g = collector.gauge(kGauge).labels("llama", "0");
  Histogram h = collector.histogram(kHistogram).labels("llama", "0");
  const std::int64_t before = event_clock::realtime_ns();
  c.inc(5);
  g.set(0.25);
  h.observe(0.01, 3);
  const std::int64_t after = event_clock::realtime_ns();
  REQUIRE(router.close(std::chrono::seconds(10)));
  const auto events = sink.snapshot();
  REQUIRE(events.size() == 3);
  const std::vector<std::pair<std::string, std::string>> labels{{"model", "llama"}, {"rank", "0"}};

  CHECK(events[0].metric == "tokenspeed:prompt_tokens_total");  // counters carry _total
  CHECK(events[0].operation == TSM_OP_INC);
  CHECK(events[0].value == 5);
  CHECK(events[0].weight == 1);
  CHECK(events[0].labels == labels);
  CHECK(events[1].metric == "tokenspeed:kv_cache_usage_perc");
  CHECK(events[1].operation == TSM_OP_SET);
  CHECK(events[1].value == 0.25);
  CHECK(events[1].weight == 1);
  CHECK(events[2].metric == "tokenspeed:inter_token_latency_seconds");
  CHECK(events[2].operation == TSM_OP_OBSERVE);
  CHECK(events[2].value == 0.01);
  CHECK(events[2].weight == 3);
  CHECK(events[2].labels == labels);
  for (const auto& e : events) {
    // Wall clock of the observation (TSC conversion: microseconds of error).
    CHECK(e.timestamp_ns >= before - 1'000'000);
    CHECK(e.timestamp_ns <= after + 1'000'000);
  }
  const tsm_metric_info* info = events[2].info;
  REQUIRE(info != nullptr);
  CHECK(info->struct_size == sizeof(tsm_metric_info));
  CHECK(info->kind == TSM_KIND_HISTOGRAM);
  CHECK(std::string(info->name) == "tokenspeed:inter_token_latency_seconds");
  CHECK(std::string(info->help) == "ITL");
  CHECK(std::string(info->unit) == "seconds");
  REQUIRE(info->label_count == 2);
  CHECK(std::string(info->label_names[0]) == "model");
  REQUIRE(info->bucket_count == 3);
  CHECK(info->bucket_bounds[2] == 1.0);
  CHECK(std::string(events[0].info->name) == "tokenspeed:prompt_tokens_total");
  CHECK(events[0].info->kind == TSM_KIND_COUNTER);
  CHECK(events[0].info->bucket_bounds == nullptr);
  // Built once per family: every event of a family points to the same info.
  CHECK(sink.info_valid_at_close);
}

TEST_CASE(
    "a summary reaches plugins as a histogram without bounds; observe_total sends one event of "
    "total / weight") {
  const MetricDefinition summary{"s", MetricKind::summary, "Spread", "", {}, {}, {}};
  InProcessMetricStore store;
  TestSink sink;
  EventRouter router({test_output("rec", &sink)});
  Collector collector(store, &router);
  const std::array<std::string_view, 0> none{};
  collector.summary(summary).labels(std::span<const std::string_view>(none)).observe(0.5, 2);
  collector.histogram(kHistogram).labels("llama", "0").observe_total(0.3, 4);
  REQUIRE(router.close(std::chrono::seconds(10)));
  const auto events = sink.snapshot();
  REQUIRE(events.size() == 2);
  CHECK(events[0].operation == TSM_OP_OBSERVE);
  CHECK(events[0].info->kind == TSM_KIND_HISTOGRAM);
  CHECK(events[0].info->bucket_count == 0);
  CHECK(events[0].info->bucket_bounds == nullptr);
  CHECK(events[0].value == 0.5);
  CHECK(events[0].weight == 2);
  CHECK(events[1].value == 0.3 / 4);
  CHECK(events[1].weight == 4);
}

TEST_CASE("a mostrecent gauge keeps the wall clock of its last set beside the value") {
  MetricDefinition mostrecent = kGauge;
  mostrecent.gauge_mode = GaugeMode::mostrecent;
  InProcessMetricStore store;
  Collector collector(store);
  Gauge g = collector.gauge(mostrecent).labels("llama", "0");
  const double before = static_cast<double>(event_clock::realtime_ns());
  g.set(3);
  g.inc(2);
  const double after = static_cast<double>(event_clock::realtime_ns());
  auto series = all_series(store);
  REQUIRE(series.size() == 1);
  CHECK(series_slot_count(*series[0]->metric) == 2);
  CHECK(series[0]->slots[0] == 5);
  CHECK(series[0]->slots[1] >= before);
  CHECK(series[0]->slots[1] <= after);
  CHECK(series_slot_count(kGauge) == 1);  // other modes keep one slot
}

TEST_CASE("counter increments and histogram observations are never de-duplicated") {
  InProcessMetricStore store;
  TestSink sink;
  EventRouter router({test_output("rec", &sink)});
  Collector collector(store, &router);
  Counter c = collector.counter(kCounter).labels("llama", "0");
  Histogram h = collector.histogram(kHistogram).labels("llama", "0");
  for (int i = 0; i < 5; ++i) {
    c.inc(1);
    h.observe(0.5, 1);
  }
  REQUIRE(router.close(std::chrono::seconds(10)));
  CHECK(sink.snapshot().size() == 10);
}

TEST_CASE("labels(...).inc() on an existing series and inc on a handle allocate nothing") {
  InProcessMetricStore store;
  TestSink sink;
  sink.record = false;
  EventRouter router({test_output("rec", &sink)});
  Collector collector(store, &router);
  auto& counters = collector.counter(kCounter);
  auto& histograms = collector.histogram(kHistogram);
  auto& gauges = collector.gauge(kGauge);
  counters.labels("llama", "0").inc();  // interns the series and registers this thread's rings
  histograms.labels("llama", "0").observe(1);
  gauges.labels("llama", "0").set(1);
  Counter handle = counters.labels("llama", "0");
  const std::string model = "llama";
  long counted = 0;
  {
    CountAllocations allocations;
    for (int i = 0; i < 1000; ++i) {
      counters.labels(model, "0").inc();
      handle.inc(2);
      histograms.labels("llama", "0").observe(0.5, 2);
      gauges.labels("llama", "0").set(i);
    }
    counted = allocations.count();
  }
  CHECK(counted == 0);
  router.close(std::chrono::seconds(10));
}

TEST_CASE(
    "events are observations before aggregation: counter events carry deltas, not running totals") {
  InProcessMetricStore store;
  TestSink sink;
  EventRouter router({test_output("rec", &sink)});
  Collector collector(store, &router);
  Counter c = collector.counter(kCounter).labels("llama", "0");
  c.inc(5);
  c.inc(2);
  REQUIRE(router.close(std::chrono::seconds(10)));
  const auto events = sink.snapshot();
  REQUIRE(events.size() == 2);
  CHECK(events[0].value == 5);
  CHECK(events[1].value == 2);
  CHECK(all_series(store)[0]->slots[0] == 7);  // the aggregate is Prometheus's
}

TEST_CASE("bucket_index finds the first bound a value does not exceed, +Inf for NaN") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (std::size_t n = 0; n <= 70; ++n) {
    std::vector<double> bounds;
    for (std::size_t i = 0; i < n; ++i) bounds.push_back(0.5 * static_cast<double>(i) - 2.0);
    std::vector<double> values = {nan, inf, -inf, -0.0, 0.0, -100.0, 100.0};
    for (const double b : bounds) {
      values.push_back(b);
      values.push_back(std::nextafter(b, inf));
      values.push_back(std::nextafter(b, -inf));
    }
    for (const double v : values) {
      std::size_t linear = 0;
      while (linear < n && !(v <= bounds[linear])) ++linear;
      INFO("n=" << n << " value=" << v);
      CHECK(tokenspeed::metrics::bucket_index(bounds.data(), n, v) == linear);
    }
  }
}

// ------------------------------------------------------------------ views

namespace {

std::shared_ptr<const MetricViews> views_of(const std::string& text) {
  return std::make_shared<const MetricViews>(
      metric_views_from_json(parse_strict_json(text), "views.json"));
}

}  // namespace

TEST_CASE("a view's buckets, name and help are the family's, in the aggregate and events") {
  InProcessMetricStore store;
  TestSink sink;
  EventRouter router({test_output("rec", &sink)});
  CollectorOptions options;
  options.views =
      views_of(R"({"views": [{"select": {"name": "tokenspeed:inter_token_latency_seconds"},
      "buckets": [0.05, 0.5], "name": "itl_seconds", "help": "per token"}]})");
  Collector collector(store, &router, options);
  HistogramFamily& family = collector.histogram(kHistogram);
  CHECK(family.definition().name == "itl_seconds");
  CHECK(family.definition().buckets == std::vector<double>{0.05, 0.5});
  // The same engine definition again is the same family.
  CHECK(&collector.histogram(kHistogram) == &family);
  family.labels("llama", "0").observe(0.1);
  REQUIRE(router.close(std::chrono::seconds(10)));
  const auto series = all_series(store);
  REQUIRE(series.size() == 1);
  CHECK(series[0]->metric->name == "itl_seconds");
  CHECK(series[0]->slots[1] == 1);  // (0.05, 0.5]
  const auto events = sink.snapshot();
  REQUIRE(events.size() == 1);
  CHECK(events[0].metric == "itl_seconds");
  CHECK(std::string(events[0].info->help) == "per token");
}

TEST_CASE("a dropped label's series are one: counters and histograms summed at labels()") {
  InProcessMetricStore store;
  CollectorOptions options;
  options.views = views_of(R"({"views": [{"select": {"name": "tokenspeed:*"},
      "drop_labels": ["rank"]}]})");
  Collector collector(store, nullptr, options);
  auto& counters = collector.counter(kCounter);
  counters.labels("llama", "0").inc(2);
  counters.labels("llama", "1").inc(3);
  counters.labels("qwen", "1").inc(1);
  auto& histograms = collector.histogram(kHistogram);
  histograms.labels("llama", "0").observe(0.05);
  histograms.labels("llama", "7").observe(0.5);
  CHECK_THROWS_AS(counters.labels("llama"), std::invalid_argument);  // the engine's count
  std::map<std::string, double> counts;
  for (const auto* s : all_series(store)) {
    CHECK(s->label_values.size() == 1);
    counts[std::string(s->metric->name) + "/" + s->label_values[0]] = s->slots[0];
  }
  CHECK(counts["tokenspeed:prompt_tokens/llama"] == 5);
  CHECK(counts["tokenspeed:prompt_tokens/qwen"] == 1);
  CHECK(counts.size() == 3);
  // Lookup of an existing series through the dropped label allocates nothing.
  long counted = 0;
  {
    CountAllocations allocations;
    for (int i = 0; i < 100; ++i) counters.labels("llama", "9").inc();
    counted = allocations.count();
  }
  CHECK(counted == 0);
  CHECK(counts.size() == 3);
}

TEST_CASE("a dropped family records nothing and takes the engine's label count") {
  InProcessMetricStore store;
  TestSink sink;
  EventRouter router({test_output("rec", &sink)});
  CollectorOptions options;
  options.views =
      views_of(R"({"views": [{"select": {"name": "tokenspeed:prompt_tokens"}, "drop": true}]})");
  Collector collector(store, &router, options);
  auto& counters = collector.counter(kCounter);
  counters.labels("llama", "0").inc(2);
  CHECK_FALSE(counters.labels("llama", "0"));
  CHECK_THROWS_AS(counters.labels("llama"), std::invalid_argument);
  collector.gauge(kGauge).labels("llama", "0").set(1);
  REQUIRE(router.close(std::chrono::seconds(10)));
  CHECK(all_series(store).size() == 1);  // the gauge's
  CHECK(sink.snapshot().size() == 1);
}

TEST_CASE("a view's outputs decide which outputs receive the family, Prometheus included") {
  InProcessMetricStore store;
  TestSink kept;
  TestSink skipped;
  EventRouter router({test_output("otlp", &kept), test_output("jsonl", &skipped)});
  CollectorOptions options;
  options.views = views_of(R"({"views": [
      {"select": {"name": "tokenspeed:prompt_tokens"}, "outputs": ["otlp"]},
      {"select": {"name": "tokenspeed:kv_cache_usage_perc"}, "outputs": ["prometheus", "jsonl"]}]})");
  Collector collector(store, &router, options);
  collector.counter(kCounter).labels("llama", "0").inc(2);
  collector.gauge(kGauge).labels("llama", "0").set(0.5);
  REQUIRE(router.close(std::chrono::seconds(10)));
  const auto series = all_series(store);
  REQUIRE(series.size() == 1);  // the counter is not Prometheus's
  CHECK(series[0]->metric->name == "tokenspeed:kv_cache_usage_perc");
  const auto to_otlp = kept.snapshot();
  REQUIRE(to_otlp.size() == 1);
  CHECK(to_otlp[0].metric == "tokenspeed:prompt_tokens_total");
  const auto to_jsonl = skipped.snapshot();
  REQUIRE(to_jsonl.size() == 1);
  CHECK(to_jsonl[0].metric == "tokenspeed:kv_cache_usage_perc");
}

TEST_CASE("a gauge whose label a view drops holds the last value set in the process") {
  InProcessMetricStore store;
  CollectorOptions options;
  options.views = views_of(R"({"views": [{"select": {"name": "*", "kind": "gauge"},
      "keep_labels": ["model"]}]})");
  Collector collector(store, nullptr, options);
  auto& gauges = collector.gauge(kGauge);
  gauges.labels("llama", "0").set(0.25);
  gauges.labels("llama", "1").set(0.75);
  gauges.labels("llama", "2").inc(0.5);
  const auto series = all_series(store);
  REQUIRE(series.size() == 1);
  CHECK(series[0]->label_values == std::vector<std::string>{"llama"});
  CHECK(series[0]->slots[0] == 1.25);
}
