// process_pipeline.hpp — the recording pipeline of one process (launcher or
// producer): its Prometheus aggregate in a file of the run directory, the
// event router with one lazily created sink per selected output, the
// collector the engine records with, the host's own figures per output, and
// closing all of it within a budget. Never loads plugins or validates
// configuration: it receives a registry and producer configurations.
// Tested in test/unit/api/launcher_test.cpp (through Launcher; the CLI's
// launcher tests read the figures on /metrics).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/collector.hpp"
#include "pipeline/event_router.hpp"
#include "core/in_process_metric_store.hpp"
#include "core/metric_store.hpp"
#include "prometheus/prometheus_output.hpp"
#include "process/producer_handoff.hpp"
#include "plugin/reporter_registry.hpp"

namespace tokenspeed::metrics {

struct ProcessPipelineOptions {
  std::vector<ProducerOutput> outputs;  // external outputs with producer configs
  // Where this process's metric file lives; "" keeps the aggregate in this
  // process's memory (no Prometheus endpoint reads it).
  std::string run_dir;
  std::string file_prefix = "producer";  // "<prefix>_<pid>.db"
  RouterOptions router;
  // Series one family may hold in this process (--metrics-max-series-per-family).
  std::size_t max_series_per_family = kDefaultMaxSeriesPerFamily;
  // The node in this process's identity (--metrics-node-name); "" the host name.
  std::string node_name;
  // A metric file that cannot be created: false throws StartupError (the
  // launcher); true keeps the series in memory, counted (attached and spawned producers).
  bool keep_in_memory_without_file = false;
  // --metrics-views, applied to every family this process defines; null: none.
  std::shared_ptr<const MetricViews> views = nullptr;
};

// Threading: construct, publish_self_figures and close from one control
// thread; collector() handles from any number of collector threads.
class ProcessPipeline {
 public:
  // registry must outlive this object; every output's reporter must be in
  // it, otherwise that output's sink fails to be created (counted as
  // dropped, logged once), as for any create_sink failure.
  ProcessPipeline(const ReporterRegistry& registry, ProcessPipelineOptions options);
  ~ProcessPipeline();
  ProcessPipeline(const ProcessPipeline&) = delete;
  ProcessPipeline& operator=(const ProcessPipeline&) = delete;

  Collector& collector() noexcept { return *collector_; }
  // Null when no external output is selected (no event is ever built).
  EventRouter* router() noexcept { return router_.get(); }

  // The store of this process's series when they live in its memory (no
  // run directory), for rendering them; null with a metric file.
  const InProcessMetricStore* memory_store() const noexcept;

  // What the Prometheus store could not keep in the metric file (zero
  // without a file store).
  UnstoredFigures unstored() const;

  // The per-output figures of the router, now.
  std::vector<SinkFigures> sink_figures() const;
  // Writes them into this process's metric file under the
  // tokenspeed_metrics_reporter_ families (the Prometheus aggregate only:
  // these are never events).
  void publish_self_figures() noexcept;

  // The launcher's figure of a producer that crashed:
  // tokenspeed_metrics_reporter_producer_crashes_total{process,signal} += 1.
  // Control thread only.
  void count_producer_crash(const std::string& process, const std::string& signal) noexcept;

  // Stops accepting events, drains and closes every sink within budget,
  // publishes the final figures and marks the metric file closed (its live
  // gauges leave /metrics). Returns true when every sink closed in time.
  // Repeated calls return the first result.
  bool close(std::chrono::nanoseconds budget) noexcept;

 private:
  std::unique_ptr<MetricStore> store_;
  MultiprocessMetricStore* file_store_ = nullptr;  // store_ when it is a file
  std::unique_ptr<EventRouter> router_;
  std::unique_ptr<Collector> collector_;
  std::map<std::pair<std::string, std::string>, double*> crash_slots_;  // (process, signal)
  std::vector<double*> self_slots_;  // per output, in the order of SelfSlot (process_pipeline.cpp)
  // Per output, once its plugin reported figures: sent, refused, lost,
  // retries, pending (empty until then).
  std::vector<std::vector<double*>> plugin_slots_;
  std::string process_name_;  // the process label of the plugin figures
  bool closed_ = false;
  // Writes what output's plugin reported (control thread; allocates its
  // series on the first report).
  void publish_plugin_figures(std::size_t output, const SinkFigures& sink);
  bool close_result_ = false;
};

// The figures the endpoint exposes for one sink.
OutputSelfFigures self_figures_of(const SinkFigures& sink) noexcept;

}  // namespace tokenspeed::metrics
