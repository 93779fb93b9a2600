// in_process_metric_store.hpp — a MetricStore in this process's heap, for a
// process that is its own Prometheus endpoint (no producer processes). Never
// frees a series before the store is destroyed.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "core/metric_store.hpp"
#include "core/thread_safety.hpp"

namespace tokenspeed::metrics {

// Threading: allocate_series and for_each_series lock one mutex; slot updates
// from collector threads take no lock.
class InProcessMetricStore final : public MetricStore {
 public:
  struct Series {
    const MetricDefinition* metric;
    std::vector<std::string> label_values;
    double* slots;  // series_slot_count(*metric) slots
  };

  explicit InProcessMetricStore(SeriesBound bound = {}) : MetricStore(std::move(bound)) {}

  double* allocate_series(const MetricDefinition& metric,
                          std::span<const std::string> label_values) override;

  // Calls visit for every series in allocation order (scrape time only).
  void for_each_series(const std::function<void(const Series&)>& visit) const;

 private:
  mutable Mutex mutex_;
  std::deque<Series> series_ TSM_GUARDED_BY(mutex_);  // stable addresses
  // One block per series, on cache lines of its own: a series updated on
  // one thread never shares a line with another series or with the heap
  // objects a delivery thread reads.
  struct AlignedFree {
    void operator()(double* slots) const noexcept;
  };
  std::vector<std::unique_ptr<double[], AlignedFree>> storage_ TSM_GUARDED_BY(mutex_);
};

}  // namespace tokenspeed::metrics
