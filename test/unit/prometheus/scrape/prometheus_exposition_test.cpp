// prometheus_exposition_test.cpp — the text format 0.0.4 writer.
#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <limits>

#include "pipeline/collector.hpp"
#include "core/in_process_metric_store.hpp"
#include "prometheus/scrape/prometheus_exposition.hpp"

using namespace tokenspeed::metrics;

namespace {

// What Histogram::observe does to the slots (metric_store.hpp layout).
void observe(const MetricDefinition& metric, std::vector<double>& slots, double value,
             double weight) {
  std::size_t bucket = 0;
  while (bucket < metric.buckets.size() && !(value <= metric.buckets[bucket])) ++bucket;
  slots[bucket] += weight;
  slots[metric.buckets.size() + 1] += value * weight;
}

std::string render(const MetricDefinition& metric, std::vector<MergedSeries> series) {
  MergedFamily family{&metric, std::move(series), nullptr};
  return render_exposition(std::span<const MergedFamily>(&family, 1));
}

}  // namespace

TEST_CASE("values are written as Prometheus expects: +Inf, -Inf, NaN and shortest round-trip") {
  CHECK(format_prometheus_value(3) == "3");
  CHECK(format_prometheus_value(0) == "0");
  CHECK(format_prometheus_value(-1.5) == "-1.5");
  CHECK(format_prometheus_value(0.03) == "0.03");
  CHECK(format_prometheus_value(0.1 + 0.2) == "0.30000000000000004");
  CHECK(format_prometheus_value(123456) == "123456");
  CHECK(format_prometheus_value(1e6) == "1e+06");
  CHECK(format_prometheus_value(1234567) == "1.234567e+06");
  CHECK(format_prometheus_value(0.0001) == "0.0001");
  CHECK(format_prometheus_value(0.00001) == "1e-05");
  CHECK(format_prometheus_value(std::numeric_limits<double>::infinity()) == "+Inf");
  CHECK(format_prometheus_value(-std::numeric_limits<double>::infinity()) == "-Inf");
  CHECK(format_prometheus_value(std::numeric_limits<double>::quiet_NaN()) == "NaN");
  for (double v : {0.1, 1.0 / 3, 2.5e-300, 1.7976931348623157e308, 0.075, 8192.0}) {
    CHECK(std::stod(format_prometheus_value(v)) == v);
  }
}

TEST_CASE("label values escape backslash, double quote and newline") {
  std::string out;
  append_escaped_label_value(out, "a\\b\"c\nd'e");
  CHECK(out == "a\\\\b\\\"c\\nd'e");
}

TEST_CASE("help text escapes backslash and newline, not quotes") {
  std::string out;
  append_escaped_help(out, "C:\\path \"quoted\"\nsecond line");
  CHECK(out == "C:\\\\path \"quoted\"\\nsecond line");
}

TEST_CASE("label values and help keep UTF-8 and write every invalid byte as U+FFFD") {
  // Found by the exposition fuzzer: a label value that is not UTF-8 made
  // Prometheus reject the whole scrape ("invalid label value").
  const std::string replacement = "\xEF\xBF\xBD";
  const std::string valid = "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xEF\xBF\xBF";
  std::string out;
  append_escaped_label_value(out, valid);
  CHECK(out == valid);
  for (const auto& [given, written] : std::vector<std::pair<std::string, std::string>>{
           {"a\xFF"
            "b",
            "a" + replacement + "b"},
           {"\x80", replacement},                                      // stray continuation byte
           {"\xC0\xAF", replacement + replacement},                    // overlong '/'
           {"\xED\xA0\x80", replacement + replacement + replacement},  // a surrogate
           {"\xF4\x90\x80\x80", replacement + replacement + replacement + replacement},
           {"\xE2\x82", replacement + replacement},             // cut short
           {"\xE2\x82\"", replacement + replacement + "\\\""},  // cut short by a quote
       }) {
    INFO(given);
    out.clear();
    append_escaped_label_value(out, given);
    CHECK(out == written);
  }
  out.clear();
  append_escaped_help(out, "x\xFE\n");
  CHECK(out == "x" + replacement + "\\n");
}

TEST_CASE(
    "a counter has HELP and TYPE lines and the _total suffix; names with colons stay as they are") {
  const MetricDefinition metric{"tokenspeed:prompt_tokens", MetricKind::counter,
                                "Prefill\ntokens.",         "tokens",
                                {"model_name", "app_key"},  {},
                                GaugeMode::livemax};
  const std::string text =
      render(metric, {MergedSeries{{{"model_name", "m\"1"}, {"app_key", "k"}}, {42}}});
  CHECK(text ==
        "# HELP tokenspeed:prompt_tokens_total Prefill\\ntokens.\n"
        "# TYPE tokenspeed:prompt_tokens_total counter\n"
        "tokenspeed:prompt_tokens_total{model_name=\"m\\\"1\",app_key=\"k\"} 42\n");
}

TEST_CASE("a gauge without labels is written without braces") {
  const MetricDefinition metric{"g", MetricKind::gauge, "", "", {}, {}, GaugeMode::livemax};
  CHECK(render(metric, {MergedSeries{{}, {0.5}}}) == "# TYPE g gauge\ng 0.5\n");
}

TEST_CASE(
    "an observe event with value 0.01 and weight 3 contributes a count of 3 and a sum of 0.03, "
    "3 in each bucket it falls in, buckets cumulative with +Inf") {
  const MetricDefinition metric{"tokenspeed:inter_token_latency_seconds",
                                MetricKind::histogram,
                                "Latency.",
                                "seconds",
                                {"model_name"},
                                {0.005, 0.01, 0.02},
                                GaugeMode::livemax};
  std::vector<double> slots(metric.buckets.size() + 2, 0.0);
  observe(metric, slots, 0.01, 3);
  observe(metric, slots, 0.5, 1);  // lands in +Inf only
  const std::string text = render(metric, {MergedSeries{{{"model_name", "m"}}, slots}});
  const std::string n = "tokenspeed:inter_token_latency_seconds";
  CHECK(text == "# HELP " + n +
                    " Latency.\n"
                    "# TYPE " +
                    n + " histogram\n" + n + "_bucket{model_name=\"m\",le=\"0.005\"} 0\n" + n +
                    "_bucket{model_name=\"m\",le=\"0.01\"} 3\n" + n +
                    "_bucket{model_name=\"m\",le=\"0.02\"} 3\n" + n +
                    "_bucket{model_name=\"m\",le=\"+Inf\"} 4\n" + n +
                    "_sum{model_name=\"m\"} 0.53\n" + n + "_count{model_name=\"m\"} 4\n");
}

TEST_CASE("a summary is written with its sum and count, no quantile and no bucket") {
  const MetricDefinition metric{"s", MetricKind::summary, "Spread.", "", {"model_name"},
                                {},  GaugeMode::livemax};
  CHECK(render(metric, {MergedSeries{{{"model_name", "m"}}, {4, 0.75}}}) ==
        "# HELP s Spread.\n# TYPE s summary\ns_sum{model_name=\"m\"} 0.75\n"
        "s_count{model_name=\"m\"} 4\n");
}

TEST_CASE(
    "through the collector: observe_total(1, 3) counts 3 in the bucket of 1/3 and adds 1 to the "
    "sum exactly; a summary counts and sums its observations") {
  const MetricDefinition histogram{"h",        MetricKind::histogram, "", "", {},
                                   {0.1, 0.5}, GaugeMode::livemax};
  const MetricDefinition summary{"s", MetricKind::summary, "", "", {}, {}, GaugeMode::livemax};
  InProcessMetricStore store;
  Collector collector(store);
  const std::array<std::string_view, 0> none{};
  const auto spread =
      collector.histogram(histogram).labels(std::span<const std::string_view>(none));
  for (int i = 0; i < 10; ++i) spread.observe_total(1.0, 3);
  const auto s = collector.summary(summary).labels(std::span<const std::string_view>(none));
  s.observe(0.25, 2);
  s.observe_total(0.5, 4);
  ScrapeSources sources;
  sources.catalog = {&histogram, &summary};
  sources.local_store = &store;
  CHECK(render_exposition(merge_scrape(sources)) ==
        "# TYPE h histogram\nh_bucket{le=\"0.1\"} 0\nh_bucket{le=\"0.5\"} 30\n"
        "h_bucket{le=\"+Inf\"} 30\nh_sum 10\nh_count 30\n"
        "# TYPE s summary\ns_sum 1\ns_count 6\n");
}

TEST_CASE("a histogram without labels still carries le") {
  const MetricDefinition metric{"h", MetricKind::histogram, "", "", {}, {1}, GaugeMode::livemax};
  const std::string text = render(metric, {MergedSeries{{}, {0, 0, 0}}});
  CHECK(text.find("h_bucket{le=\"1\"} 0\n") != std::string::npos);
  CHECK(text.find("h_bucket{le=\"+Inf\"} 0\n") != std::string::npos);
  CHECK(text.find("h_count 0\n") != std::string::npos);
}

TEST_CASE(
    "through the collector: observe(0.01, weight 3) is exposed as count 3, sum 0.03, 3 in every "
    "bucket from 0.01 up") {
  const MetricDefinition metric{"tokenspeed:inter_token_latency_seconds",
                                MetricKind::histogram,
                                "Latency.",
                                "seconds",
                                {"model_name"},
                                {0.005, 0.01, 0.02},
                                GaugeMode::livemax};
  InProcessMetricStore store;
  Collector collector(store);
  collector.histogram(metric).labels("llama").observe(0.01, 3);
  ScrapeSources sources;
  sources.catalog = {&metric};
  sources.local_store = &store;
  const std::string text = render_exposition(merge_scrape(sources));
  const std::string n = "tokenspeed:inter_token_latency_seconds";
  CHECK(text.find(n + "_bucket{model_name=\"llama\",le=\"0.005\"} 0\n") != std::string::npos);
  CHECK(text.find(n + "_bucket{model_name=\"llama\",le=\"0.01\"} 3\n") != std::string::npos);
  CHECK(text.find(n + "_bucket{model_name=\"llama\",le=\"0.02\"} 3\n") != std::string::npos);
  CHECK(text.find(n + "_bucket{model_name=\"llama\",le=\"+Inf\"} 3\n") != std::string::npos);
  CHECK(text.find(n + "_sum{model_name=\"llama\"} 0.03\n") != std::string::npos);
  CHECK(text.find(n + "_count{model_name=\"llama\"} 3\n") != std::string::npos);
}

TEST_CASE("through the collector: every gauge update and counter increment reaches the aggregate") {
  const MetricDefinition gauge{"g", MetricKind::gauge, "", "", {}, {}, GaugeMode::livemax};
  const MetricDefinition counter{"c", MetricKind::counter, "", "", {}, {}, GaugeMode::livemax};
  InProcessMetricStore store;
  Collector collector(store);
  const std::array<std::string_view, 0> none{};
  for (double v : {3.0, 3.0, 9.0, 7.0})
    collector.gauge(gauge).labels(std::span<const std::string_view>(none)).set(v);
  for (int i = 0; i < 5; ++i)
    collector.counter(counter).labels(std::span<const std::string_view>(none)).inc(2);
  ScrapeSources sources;
  sources.catalog = {&gauge, &counter};
  sources.local_store = &store;
  CHECK(render_exposition(merge_scrape(sources)) ==
        "# TYPE g gauge\ng 7\n# TYPE c_total counter\nc_total 10\n");
}
