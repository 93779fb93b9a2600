// in_process_metric_store.cpp — heap slots per series, enumerated at scrape.
#include "core/in_process_metric_store.hpp"

#include <algorithm>
#include <new>

namespace tokenspeed::metrics {

void InProcessMetricStore::AlignedFree::operator()(double* slots) const noexcept {
  ::operator delete[](slots, std::align_val_t{64});
}

double* InProcessMetricStore::allocate_series(const MetricDefinition& metric,
                                              std::span<const std::string> label_values) {
  constexpr std::size_t kLineSlots = 64 / sizeof(double);
  const std::size_t count = (series_slot_count(metric) + kLineSlots - 1) / kLineSlots * kLineSlots;
  std::unique_ptr<double[], AlignedFree> block(
      static_cast<double*>(::operator new[](count * sizeof(double), std::align_val_t{64})));
  double* slots = block.get();
  std::fill(slots, slots + count, 0.0);
  MutexLock lock(mutex_);
  storage_.push_back(std::move(block));
  series_.push_back(Series{&metric, {label_values.begin(), label_values.end()}, slots});
  return slots;
}

void InProcessMetricStore::for_each_series(const std::function<void(const Series&)>& visit) const {
  MutexLock lock(mutex_);
  for (const Series& series : series_) visit(series);
}

}  // namespace tokenspeed::metrics
