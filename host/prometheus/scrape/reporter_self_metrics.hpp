// reporter_self_metrics.hpp — the host's own figures per output (delivered,
// dropped, failed, queued), exposed on /metrics under the
// tokenspeed_metrics_reporter_ prefix with a `reporter` label. These series
// are never turned into plugin events.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <functional>
#include <string>
#include <vector>

#include "core/metric_catalog.hpp"
#include "core/thread_safety.hpp"

namespace tokenspeed::metrics {

class PrometheusMerge;

// One output's figures at one moment, as the event router counts them.
struct OutputSelfFigures {
  std::string output;                       // the output name (the `reporter` label)
  std::uint64_t delivered = 0;              // emit returned success
  std::uint64_t dropped_ring_full = 0;      // not queued: the ring was full
  std::uint64_t dropped_sink_disabled = 0;  // not queued: the sink was disabled
  std::uint64_t sink_failures = 0;          // emit or create_sink failed
  std::uint64_t queue_depth = 0;            // events queued, not yet emitted
  std::uint64_t dropped_after_close = 0;    // not queued: offered after close began
  std::uint64_t discarded_at_deadline = 0;  // still queued when the close budget ran out
  std::uint64_t sinks_abandoned = 0;        // 1 when the sink was abandoned at close
};

// Called at scrape time on an endpoint thread; must not block for long.
using OutputFiguresSource = std::function<std::vector<OutputSelfFigures>()>;

// The families, in exposition order:
//   tokenspeed_metrics_reporter_events_delivered_total{reporter}     counter
//   tokenspeed_metrics_reporter_events_dropped_total{reporter,reason} counter,
//       reason "ring_full", "sink_disabled" or "after_close"
//   tokenspeed_metrics_reporter_sink_failures_total{reporter}        counter
//   tokenspeed_metrics_reporter_queue_depth{reporter}                gauge (livesum)
//   tokenspeed_metrics_reporter_events_discarded_total{reporter}     counter
//   tokenspeed_metrics_reporter_sinks_abandoned_total{reporter}      counter
//   tokenspeed_metrics_reporter_producer_crashes_total{process,signal} counter
//       (the launcher's: producers that died by a signal it did not send)
//   tokenspeed_metrics_reporter_plugin_events_total{reporter,process,fate} counter,
//       fate "sent", "refused" or "lost", as the output's plugin reports them
//   tokenspeed_metrics_reporter_plugin_retries_total{reporter,process}  counter
//   tokenspeed_metrics_reporter_plugin_pending_events{reporter,process} gauge (livesum)
//       (the last three only for an output whose plugin reports its figures)
// Producer processes may intern series of these families in their own
// MetricStore; the merge then sums them over processes.
const std::vector<MetricDefinition>& reporter_self_metric_definitions();

// Indices into reporter_self_metric_definitions().
enum ReporterSelfMetric : std::size_t {
  kSelfEventsDelivered = 0,
  kSelfEventsDropped = 1,
  kSelfSinkFailures = 2,
  kSelfQueueDepth = 3,
  kSelfEventsDiscarded = 4,
  kSelfSinksAbandoned = 5,
  kSelfProducerCrashes = 6,
  kSelfPluginEvents = 7,
  kSelfPluginRetries = 8,
  kSelfPluginPending = 9,
};

// Adds one process's figures to a scrape's merge (as a live process).
void add_output_self_figures(PrometheusMerge& merge, const std::vector<OutputSelfFigures>& figures);

// One output's events delivered and dropped, summed over a run's processes.
struct OutputDeliveryTotals {
  double delivered = 0;
  double dropped = 0;  // every reason
};
// Read back from the metric files of a run directory, per output name.
std::map<std::string, OutputDeliveryTotals> delivery_totals(const std::filesystem::path& run_dir);

// Threading: set_source and add_to may be called from any thread (one mutex);
// the source runs on the scraping thread with that mutex held.
class ReporterSelfMetrics {
 public:
  // Replaces the source (nullptr: none). The event router wires itself here.
  void set_source(OutputFiguresSource source);
  void add_to(PrometheusMerge& merge) const;

 private:
  mutable Mutex mutex_;
  OutputFiguresSource source_ TSM_GUARDED_BY(mutex_);
};

}  // namespace tokenspeed::metrics
