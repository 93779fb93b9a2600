// in_process_metric_store.cpp — heap slots per series, enumerated at scrape.
#include "prometheus/in_process_metric_store.hpp"

namespace tokenspeed::metrics {

double* InProcessMetricStore::allocate_series(const MetricDefinition& metric,
                                              std::span<const std::string> label_values) {
  const std::size_t count = series_slot_count(metric);
  auto block = std::make_unique<double[]>(count);  // value-initialized: zeroes
  double* slots = block.get();
  std::lock_guard lock(mutex_);
  storage_.push_back(std::move(block));
  series_.push_back(Series{&metric, {label_values.begin(), label_values.end()}, slots});
  return slots;
}

void InProcessMetricStore::for_each_series(const std::function<void(const Series&)>& visit) const {
  std::lock_guard lock(mutex_);
  for (const Series& series : series_) visit(series);
}

}  // namespace tokenspeed::metrics
