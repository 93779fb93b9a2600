// reporter_self_metrics.cpp — reporter figures as Prometheus series. Scrape
// time only; never reached from a plugin sink or the event channel.
#include "prometheus/scrape/reporter_self_metrics.hpp"

#include <string_view>

#include "prometheus/store/multiprocess_run_dir.hpp"
#include "prometheus/scrape/prometheus_merge.hpp"

namespace tokenspeed::metrics {
namespace {

std::vector<MetricDefinition> build_definitions() {
  const std::vector<std::string> labels{"reporter"};
  return {
      MetricDefinition{"tokenspeed_metrics_reporter_events_delivered",
                       MetricKind::counter,
                       "Events an output's sink accepted.",
                       "events",
                       labels,
                       {},
                       GaugeMode::livesum},
      MetricDefinition{"tokenspeed_metrics_reporter_events_dropped",
                       MetricKind::counter,
                       "Events dropped before delivery, by reason (ring_full, sink_disabled, "
                       "after_close).",
                       "events",
                       {"reporter", "reason"},
                       {},
                       GaugeMode::livesum},
      MetricDefinition{"tokenspeed_metrics_reporter_sink_failures",
                       MetricKind::counter,
                       "Failures of an output's sink (creation or emit).",
                       "failures",
                       labels,
                       {},
                       GaugeMode::livesum},
      MetricDefinition{"tokenspeed_metrics_reporter_queue_depth",
                       MetricKind::gauge,
                       "Events queued for an output and not yet delivered.",
                       "events",
                       labels,
                       {},
                       GaugeMode::livesum},
      MetricDefinition{"tokenspeed_metrics_reporter_events_discarded",
                       MetricKind::counter,
                       "Events still queued for an output when the shutdown budget ran out.",
                       "events",
                       labels,
                       {},
                       GaugeMode::livesum},
      MetricDefinition{"tokenspeed_metrics_reporter_sinks_abandoned",
                       MetricKind::counter,
                       "Sinks left running at close: still inside a plugin call at the deadline.",
                       "sinks",
                       labels,
                       {},
                       GaugeMode::livesum},
      MetricDefinition{"tokenspeed_metrics_reporter_producer_crashes",
                       MetricKind::counter,
                       "Producer processes that died by a signal the launcher did not send.",
                       "crashes",
                       {"process", "signal"},
                       {},
                       GaugeMode::livesum},
      // What an output's plugin reports itself (tsm_sink.report_figures),
      // per process: whether the events reached the back end.
      MetricDefinition{"tokenspeed_metrics_reporter_plugin_events",
                       MetricKind::counter,
                       "Events an output's plugin accounted for, by fate as the plugin reports "
                       "it: sent (accepted by the back end), refused (over a limit of the "
                       "plugin), lost (given up).",
                       "events",
                       {"reporter", "process", "fate"},
                       {},
                       GaugeMode::livesum},
      MetricDefinition{"tokenspeed_metrics_reporter_plugin_retries",
                       MetricKind::counter,
                       "Failed send attempts an output's plugin tried again.",
                       "attempts",
                       {"reporter", "process"},
                       {},
                       GaugeMode::livesum},
      MetricDefinition{"tokenspeed_metrics_reporter_plugin_pending_events",
                       MetricKind::gauge,
                       "Events an output's plugin holds, not yet sent to its back end.",
                       "events",
                       {"reporter", "process"},
                       {},
                       GaugeMode::livesum},
  };
}

}  // namespace

const std::vector<MetricDefinition>& reporter_self_metric_definitions() {
  static const std::vector<MetricDefinition> definitions = build_definitions();
  return definitions;
}

void add_output_self_figures(PrometheusMerge& merge,
                             const std::vector<OutputSelfFigures>& figures) {
  const auto& defs = reporter_self_metric_definitions();
  const ProcessInstance self = current_process_instance();
  for (const OutputSelfFigures& f : figures) {
    const std::string_view output = f.output;
    const std::string_view one[] = {output};
    const std::string_view ring[] = {output, "ring_full"};
    const std::string_view disabled[] = {output, "sink_disabled"};
    const std::string_view after_close[] = {output, "after_close"};
    auto add = [&](const MetricDefinition& def, std::span<const std::string_view> labels,
                   std::uint64_t v) {
      const double value[] = {static_cast<double>(v)};
      merge.add_series(def, labels, value, self, true);
    };
    add(defs[kSelfEventsDelivered], one, f.delivered);
    add(defs[kSelfEventsDropped], ring, f.dropped_ring_full);
    add(defs[kSelfEventsDropped], disabled, f.dropped_sink_disabled);
    add(defs[kSelfEventsDropped], after_close, f.dropped_after_close);
    add(defs[kSelfSinkFailures], one, f.sink_failures);
    add(defs[kSelfQueueDepth], one, f.queue_depth);
    add(defs[kSelfEventsDiscarded], one, f.discarded_at_deadline);
    add(defs[kSelfSinksAbandoned], one, f.sinks_abandoned);
  }
}

void ReporterSelfMetrics::set_source(OutputFiguresSource source) {
  MutexLock lock(mutex_);
  source_ = std::move(source);
}

void ReporterSelfMetrics::add_to(PrometheusMerge& merge) const {
  MutexLock lock(mutex_);
  if (!source_) return;
  add_output_self_figures(merge, source_());
}

std::map<std::string, OutputDeliveryTotals> delivery_totals(const std::filesystem::path& run_dir) {
  const auto& defs = reporter_self_metric_definitions();
  ScrapeSources sources;
  sources.catalog = catalog_pointers(defs);
  sources.run_dir = run_dir;
  std::map<std::string, OutputDeliveryTotals> totals;
  for (const MergedFamily& family : merge_scrape(sources)) {
    const bool delivered = family.metric->name == defs[kSelfEventsDelivered].name;
    if (!delivered && family.metric->name != defs[kSelfEventsDropped].name) continue;
    for (const MergedSeries& series : family.series) {
      // The first label is the output's (`reporter`).
      if (series.labels.empty() || series.slots.empty()) continue;
      OutputDeliveryTotals& entry = totals[series.labels.front().second];
      (delivered ? entry.delivered : entry.dropped) += series.slots[0];
    }
  }
  return totals;
}

}  // namespace tokenspeed::metrics
