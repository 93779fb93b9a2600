// process_pipeline.cpp — wires the registry's reporters to the event router
// and keeps the host's own figures in the process's metric file.
#include "process/process_pipeline.hpp"

#include <atomic>

#include <boost/json/serialize.hpp>

#include "isolation/isolated_output.hpp"

namespace tokenspeed::metrics {
namespace {

// An output with "isolation": "process": its sink is a proxy whose plugin
// runs in a helper process; its fates there rewrite the delivery thread's accounting.
OutputDefinition isolated_definition(const Reporter& reporter, const ProducerOutput& output,
                                     const RouterOptions& router) {
  isolation::IsolatedOutputOptions options;
  options.output = output.name;
  options.plugin_path = reporter.plugin_path();
  options.reporter = output.name;
  options.process = router.process;
  options.producer_config = boost::json::serialize(output.producer_config);
  options.settings = output.isolation;
  options.log_interval = router.log_interval;
  options.log = router.log;
  auto isolated = std::make_shared<isolation::IsolatedOutput>(std::move(options));
  OutputDefinition definition{output.name,
                              // Called once, by the output's delivery thread, on its first event.
                              [isolated](tsm_sink& sink, std::string& error) -> int {
                                return isolated->create_sink(sink, error);
                              },
                              reporter.plugin_path()};
  definition.adjust_figures = [isolated](SinkFigures& sink) { isolated->adjust(sink); };
  return definition;
}

std::vector<OutputDefinition> output_definitions(const ReporterRegistry& registry,
                                                 const std::vector<ProducerOutput>& outputs,
                                                 const RouterOptions& router) {
  std::vector<OutputDefinition> definitions;
  for (const ProducerOutput& output : outputs) {
    const Reporter* reporter = registry.find(output.name);
    if (reporter != nullptr && output.isolation.process) {
      definitions.push_back(isolated_definition(*reporter, output, router));
      continue;
    }
    definitions.push_back(
        OutputDefinition{output.name,
                         // Called once, by the output's delivery thread, on its first event.
                         [reporter, name = output.name, config = output.producer_config](
                             tsm_sink& sink, std::string& error) -> int {
                           if (reporter == nullptr) {
                             error = "reporter '" + name + "' is not registered in this process";
                             return TSM_ERROR;
                           }
                           CreateSinkResult result = reporter->create_sink(config, sink);
                           if (!result.ok) {
                             error = std::move(result.error);
                             return TSM_ERROR;
                           }
                           sink = result.sink;
                           return TSM_OK;
                         },
                         reporter != nullptr ? reporter->plugin_path() : std::string()});
  }
  return definitions;
}

// The slots of one output's self series, in this order.
enum SelfSlot : std::size_t {
  kDeliveredSlot,
  kDroppedRingFullSlot,
  kDroppedSinkDisabledSlot,
  kSinkFailuresSlot,
  kQueueDepthSlot,
  kDroppedAfterCloseSlot,
  kDiscardedAtDeadlineSlot,
  kSinksAbandonedSlot,
  kSelfSeriesPerOutput,
};

void store_slot(double* slot, double value) noexcept {
  std::atomic_ref<double>(*slot).store(value, std::memory_order_relaxed);
}

}  // namespace

OutputSelfFigures self_figures_of(const SinkFigures& sink) noexcept {
  OutputSelfFigures figures;
  try {
    figures.output = sink.name;
  } catch (...) {
    // No memory for the name: the figures go out with an empty output label.
  }
  figures.delivered = sink.delivered;
  figures.dropped_ring_full = sink.dropped_ring_full;
  figures.dropped_sink_disabled = sink.dropped_sink_disabled;
  figures.sink_failures = (sink.disabled || sink.create_failed) ? 1 : 0;
  figures.queue_depth = sink.queue_depth;
  figures.dropped_after_close = sink.dropped_after_close;
  figures.discarded_at_deadline = sink.discarded_at_deadline;
  figures.sinks_abandoned = sink.abandoned ? 1 : 0;
  return figures;
}

ProcessPipeline::ProcessPipeline(const ReporterRegistry& registry, ProcessPipelineOptions options) {
  const SeriesBound bound{options.max_series_per_family, options.router.log};
  if (options.run_dir.empty()) {
    store_ = std::make_unique<InProcessMetricStore>(bound);
  } else {
    MultiprocessStoreOptions store_options;
    store_options.directory = options.run_dir;
    store_options.file_prefix = options.file_prefix;
    store_options.bound = bound;
    store_options.keep_in_memory_without_file = options.keep_in_memory_without_file;
    auto file_store = std::make_unique<MultiprocessMetricStore>(std::move(store_options));
    file_store_ = file_store.get();
    store_ = std::move(file_store);
  }
  if (options.router.process.name.empty())
    options.router.process =
        make_process_identity(options.file_prefix, ::getpid(), options.node_name);
  process_name_ = options.router.process.name;
  set_log_process_name(process_name_);
  plugin_slots_.resize(options.outputs.size());
  if (!options.outputs.empty()) {
    router_ = std::make_unique<EventRouter>(
        output_definitions(registry, options.outputs, options.router), options.router);
  }
  CollectorOptions collector_options;
  collector_options.views = options.views;
  collector_ = std::make_unique<Collector>(*store_, router_.get(), collector_options);

  const auto& defs = reporter_self_metric_definitions();
  for (const ProducerOutput& output : options.outputs) {
    const std::string one[] = {output.name};
    const std::string ring_full[] = {output.name, "ring_full"};
    const std::string disabled[] = {output.name, "sink_disabled"};
    const std::string after_close[] = {output.name, "after_close"};
    // In SelfSlot order.
    self_slots_.push_back(store_->allocate_series(defs[kSelfEventsDelivered], one));
    self_slots_.push_back(store_->allocate_series(defs[kSelfEventsDropped], ring_full));
    self_slots_.push_back(store_->allocate_series(defs[kSelfEventsDropped], disabled));
    self_slots_.push_back(store_->allocate_series(defs[kSelfSinkFailures], one));
    self_slots_.push_back(store_->allocate_series(defs[kSelfQueueDepth], one));
    self_slots_.push_back(store_->allocate_series(defs[kSelfEventsDropped], after_close));
    self_slots_.push_back(store_->allocate_series(defs[kSelfEventsDiscarded], one));
    self_slots_.push_back(store_->allocate_series(defs[kSelfSinksAbandoned], one));
  }
}

ProcessPipeline::~ProcessPipeline() {
  if (!close(std::chrono::nanoseconds::zero())) {
    // A delivery thread abandoned inside a plugin may still read the series and the
    // router's state: leave them to the process, as the plugin library is.
    static_cast<void>(collector_.release());
    static_cast<void>(router_.release());
  }
}

const InProcessMetricStore* ProcessPipeline::memory_store() const noexcept {
  return file_store_ ? nullptr : static_cast<const InProcessMetricStore*>(store_.get());
}

UnstoredFigures ProcessPipeline::unstored() const {
  return file_store_ != nullptr ? file_store_->unstored() : UnstoredFigures{};
}

std::vector<SinkFigures> ProcessPipeline::sink_figures() const {
  return router_ ? router_->figures() : std::vector<SinkFigures>{};
}

void ProcessPipeline::publish_self_figures() noexcept {
  try {
    const std::vector<SinkFigures> sinks = sink_figures();
    for (std::size_t i = 0;
         i < sinks.size() && (i + 1) * kSelfSeriesPerOutput <= self_slots_.size(); ++i) {
      const OutputSelfFigures figures = self_figures_of(sinks[i]);
      double* const* slots = &self_slots_[i * kSelfSeriesPerOutput];
      store_slot(slots[kDeliveredSlot], static_cast<double>(figures.delivered));
      store_slot(slots[kDroppedRingFullSlot], static_cast<double>(figures.dropped_ring_full));
      store_slot(slots[kDroppedSinkDisabledSlot],
                 static_cast<double>(figures.dropped_sink_disabled));
      store_slot(slots[kSinkFailuresSlot], static_cast<double>(figures.sink_failures));
      store_slot(slots[kQueueDepthSlot], static_cast<double>(figures.queue_depth));
      store_slot(slots[kDroppedAfterCloseSlot], static_cast<double>(figures.dropped_after_close));
      store_slot(slots[kDiscardedAtDeadlineSlot],
                 static_cast<double>(figures.discarded_at_deadline));
      store_slot(slots[kSinksAbandonedSlot], static_cast<double>(figures.sinks_abandoned));
      publish_plugin_figures(i, sinks[i]);
    }
  } catch (...) {
    // Figures are best-effort; the next publication catches up.
  }
}

void ProcessPipeline::publish_plugin_figures(std::size_t output, const SinkFigures& sink) {
  if (!sink.plugin.reported || output >= plugin_slots_.size()) return;
  std::vector<double*>& slots = plugin_slots_[output];
  if (slots.empty()) {  // the first report: the series appear now
    const auto& defs = reporter_self_metric_definitions();
    for (const char* fate : {"sent", "refused", "lost"}) {
      const std::string labels[] = {sink.name, process_name_, fate};
      slots.push_back(store_->allocate_series(defs[kSelfPluginEvents], labels));
    }
    const std::string labels[] = {sink.name, process_name_};
    slots.push_back(store_->allocate_series(defs[kSelfPluginRetries], labels));
    slots.push_back(store_->allocate_series(defs[kSelfPluginPending], labels));
  }
  const PluginFigures& figures = sink.plugin;
  store_slot(slots[0], static_cast<double>(figures.sent));
  store_slot(slots[1], static_cast<double>(figures.refused));
  store_slot(slots[2], static_cast<double>(figures.lost));
  store_slot(slots[3], static_cast<double>(figures.retries));
  store_slot(slots[4], static_cast<double>(figures.pending));
}

void ProcessPipeline::count_producer_crash(const std::string& process,
                                           const std::string& signal) noexcept {
  try {
    double*& slot = crash_slots_[{process, signal}];
    if (slot == nullptr) {
      const std::string labels[] = {process, signal};
      slot =
          store_->allocate_series(reporter_self_metric_definitions()[kSelfProducerCrashes], labels);
    }
    std::atomic_ref<double> value(*slot);
    value.store(value.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  } catch (...) {
    // A figure is best-effort; the crash is also reported on stderr.
  }
}

bool ProcessPipeline::close(std::chrono::nanoseconds budget) noexcept {
  if (closed_) return close_result_;
  closed_ = true;
  close_result_ = router_ ? router_->close(budget) : true;
  publish_self_figures();
  if (file_store_ != nullptr) file_store_->close();
  return close_result_;
}

}  // namespace tokenspeed::metrics
