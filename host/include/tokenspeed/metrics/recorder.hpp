// recorder.hpp — the Recorder: where an engine's process creates its metric
// families. Each process gets its own from its Launcher or Producer.
#pragma once

#include <vector>

#include "tokenspeed/metrics/metric_definition.hpp"
#include "tokenspeed/metrics/recording.hpp"

namespace tokenspeed::metrics {

// The families of one process. Threading: any thread; creating a family locks.
class Recorder {
 public:
  // The family of definition: created on the first call (the definition is
  // checked: see checked_definition), the same object for every later call
  // with an equal definition. Throws std::invalid_argument when the kind does
  // not match, the definition is invalid, the name is already defined
  // differently in this process, or another family of this process claims one
  // of its sample names (a counter c and a gauge c_total). The definition reaches /metrics and
  // every output, in every process that records it.
  CounterFamily& counter(const MetricDefinition& definition);
  GaugeFamily& gauge(const MetricDefinition& definition);
  HistogramFamily& histogram(const MetricDefinition& definition);
  // A summary (kind summary: a count and a sum, no buckets) is observed
  // through Histogram handles, as a histogram is.
  HistogramFamily& summary(const MetricDefinition& definition);

  // Every definition of a set (the TokenSpeed catalog, say), by its kind.
  void define(const std::vector<MetricDefinition>& definitions);

  // The host's own; an engine gets its Recorder from a Launcher or a Producer.
  explicit Recorder(Collector* collector) noexcept : collector_(collector) {}

 private:
  Collector* collector_;
};

}  // namespace tokenspeed::metrics
