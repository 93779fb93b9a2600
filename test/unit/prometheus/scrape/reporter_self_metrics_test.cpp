// reporter_self_metrics_test.cpp — per-output figures on /metrics under the
// tokenspeed_metrics_reporter_ prefix with a reporter label.
#include <catch2/catch.hpp>

#include "prometheus/scrape/prometheus_exposition.hpp"
#include "prometheus/scrape/prometheus_merge.hpp"
#include "prometheus/scrape/reporter_self_metrics.hpp"

using namespace tokenspeed::metrics;

TEST_CASE(
    "the host's own figures per output are exposed under tokenspeed_metrics_reporter_ with a "
    "reporter label") {
  ReporterSelfMetrics self;
  self.set_source([] { return std::vector<OutputSelfFigures>{{"jsonl", 100, 7, 2, 1, 5}}; });
  ScrapeSources sources;
  sources.catalog = catalog_pointers(reporter_self_metric_definitions());
  sources.extra = [&](PrometheusMerge& merge) { self.add_to(merge); };
  const auto families = merge_scrape(sources);
  const std::string text = render_exposition(families);
  CHECK(text.find("# TYPE tokenspeed_metrics_reporter_events_delivered_total counter\n") !=
        std::string::npos);
  CHECK(text.find("tokenspeed_metrics_reporter_events_delivered_total{reporter=\"jsonl\"} 100\n") !=
        std::string::npos);
  CHECK(text.find("tokenspeed_metrics_reporter_events_dropped_total{reporter=\"jsonl\",reason="
                  "\"ring_full\"} 7\n") != std::string::npos);
  CHECK(text.find("tokenspeed_metrics_reporter_events_dropped_total{reporter=\"jsonl\",reason="
                  "\"sink_disabled\"} 2\n") != std::string::npos);
  CHECK(text.find("tokenspeed_metrics_reporter_sink_failures_total{reporter=\"jsonl\"} 1\n") !=
        std::string::npos);
  CHECK(text.find("# TYPE tokenspeed_metrics_reporter_queue_depth gauge\n") != std::string::npos);
  CHECK(text.find("tokenspeed_metrics_reporter_queue_depth{reporter=\"jsonl\"} 5\n") !=
        std::string::npos);
}

TEST_CASE("without a source no reporter series is exposed") {
  ReporterSelfMetrics self;
  ScrapeSources sources;
  sources.catalog = catalog_pointers(reporter_self_metric_definitions());
  sources.extra = [&](PrometheusMerge& merge) { self.add_to(merge); };
  CHECK(merge_scrape(sources).empty());
}

TEST_CASE(
    "every self-metric name carries the tokenspeed_metrics_reporter_ prefix; each per-output "
    "family a reporter label, the producer crashes a process and a signal label") {
  for (const MetricDefinition& metric : reporter_self_metric_definitions()) {
    CHECK(metric.name.rfind("tokenspeed_metrics_reporter_", 0) == 0);
    if (metric.name == "tokenspeed_metrics_reporter_producer_crashes") {
      CHECK(metric.label_names == std::vector<std::string>{"process", "signal"});
    } else {
      CHECK(metric.label_names.front() == "reporter");
    }
  }
}

TEST_CASE(
    "events discarded at close, abandoned sinks and drops after close are exposed per output") {
  OutputSelfFigures figures;
  figures.output = "otlp";
  figures.dropped_after_close = 3;
  figures.discarded_at_deadline = 41;
  figures.sinks_abandoned = 1;
  ReporterSelfMetrics self;
  self.set_source([&] { return std::vector<OutputSelfFigures>{figures}; });
  ScrapeSources sources;
  sources.catalog = catalog_pointers(reporter_self_metric_definitions());
  sources.extra = [&](PrometheusMerge& merge) { self.add_to(merge); };
  const std::string text = render_exposition(merge_scrape(sources));
  CHECK(text.find("tokenspeed_metrics_reporter_events_dropped_total{reporter=\"otlp\",reason="
                  "\"after_close\"} 3\n") != std::string::npos);
  CHECK(text.find("# TYPE tokenspeed_metrics_reporter_events_discarded_total counter\n") !=
        std::string::npos);
  CHECK(text.find("tokenspeed_metrics_reporter_events_discarded_total{reporter=\"otlp\"} 41\n") !=
        std::string::npos);
  CHECK(text.find("tokenspeed_metrics_reporter_sinks_abandoned_total{reporter=\"otlp\"} 1\n") !=
        std::string::npos);
}
