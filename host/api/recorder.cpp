// recorder.cpp — the public Recorder over the host's Collector. Startup path
// (creating families); the handles it gives are the hot path.
// Tested in test/unit/api/launcher_test.cpp (through Launcher and the Recorder it hands
// out).
#include "pipeline/collector.hpp"
#include "tokenspeed/metrics/recorder.hpp"

namespace tokenspeed::metrics {

CounterFamily& Recorder::counter(const MetricDefinition& definition) {
  return collector_->counter(definition);
}

GaugeFamily& Recorder::gauge(const MetricDefinition& definition) {
  return collector_->gauge(definition);
}

HistogramFamily& Recorder::histogram(const MetricDefinition& definition) {
  return collector_->histogram(definition);
}

HistogramFamily& Recorder::summary(const MetricDefinition& definition) {
  return collector_->summary(definition);
}

void Recorder::define(const std::vector<MetricDefinition>& definitions) {
  for (const MetricDefinition& definition : definitions) {
    switch (definition.kind) {
      case MetricKind::counter:
        counter(definition);
        break;
      case MetricKind::gauge:
        gauge(definition);
        break;
      case MetricKind::histogram:
        histogram(definition);
        break;
      case MetricKind::summary:
        summary(definition);
        break;
    }
  }
}

}  // namespace tokenspeed::metrics
