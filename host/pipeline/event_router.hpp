// event_router.hpp — fans events out to the external outputs through per-thread,
// per-sink SPSC rings, and closes them within one shared budget. Never calls a
// plugin function; never locks or allocates after a thread's first event.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/delivery_defaults.hpp"
#include "pipeline/event_ring.hpp"
#include "pipeline/metric_series.hpp"
#include "core/fault_log.hpp"
#include "core/thread_safety.hpp"
#include "pipeline/series_table.hpp"
#include "pipeline/sink_delivery.hpp"
#include "pipeline/stall_reporter.hpp"

namespace tokenspeed::metrics {

struct RouterOptions {
  // Capacity, in events, of each ring (one per collector thread per sink):
  // --metrics-reporter-queue-size. 16-byte slots with room for markers, so
  // the default is 256 KiB per collector thread per output; memory is
  // bounded by threads x outputs x queue_size x 48 B (32 B for the default)
  // whatever a plugin does.
  std::size_t queue_size = kDefaultQueueSize;
  // Safety net of the idle delivery thread's sleep (a producer wakes it directly).
  std::chrono::milliseconds idle_park_timeout{100};
  // At most one log line per sink per interval (the first occurrence at once).
  std::chrono::milliseconds log_interval{10'000};
  // How far close() may overrun its budget while waiting for a plugin that
  // ignores its close timeout, before it abandons that thread.
  std::chrono::milliseconds close_grace{50};
  // Destination of the rate-limited log lines; stderr when empty.
  LogWriter log;
  // The process named in drop and stall lines ("scheduler-0"; an empty name
  // omits it) and given to every sink as its tsm_sink.process.
  ProcessIdentity process;
  // How often the stall reporter reads the counters, and how long a plugin
  // call runs before it is reported as not returning.
  std::chrono::milliseconds stall_check_interval{1000};
  std::chrono::milliseconds stall_threshold{1000};
};

// Threading: publish from any number of collector threads (noexcept, no lock
// after the thread's first event); close and figures from any thread, close
// possibly more than once.
class EventRouter {
 public:
  explicit EventRouter(std::vector<OutputDefinition> outputs, RouterOptions options = {});
  // Closes with a budget of close_grace when close() was not called.
  ~EventRouter();
  EventRouter(const EventRouter&) = delete;
  EventRouter& operator=(const EventRouter&) = delete;

  // Hands one event to every sink. Never blocks, never allocates after this
  // thread's first event, never makes a system call unless a delivery thread sleeps.
  void publish(const EventSlot& slot) noexcept;

  // Numbers a series for the rings (the collector, once per interned
  // series); SeriesTable::kNone when more series exist than a ring slot can
  // name. Throws std::bad_alloc.
  std::uint32_t register_series(const MetricSeries& series) { return series_table_->add(&series); }

  // The output_mask of a series whose family a view sends to outputs (unset:
  // every output): bit i for the i-th output, when outputs names it.
  std::uint64_t output_mask(const std::optional<std::vector<std::string>>& outputs) const;

  // Stops accepting events, lets every delivery thread drain until the deadline,
  // then closes the plugin sinks one after the other, each with what remains
  // of the budget. Returns within budget + close_grace whatever the plugins
  // do; returns true when every sink drained and closed cleanly in time.
  // A repeated call returns the first call's result at once; a call while
  // another thread is closing returns false at once.
  bool close(std::chrono::nanoseconds budget) noexcept;

  std::vector<SinkFigures> figures() const;
  // Ring sets ever allocated (one per concurrently live collector thread).
  std::size_t ring_sets() const;
  const RouterOptions& options() const noexcept { return options_; }

 private:
  struct ThreadRings {
    std::uint64_t router_id;
    std::vector<EventRing*> rings;  // one per sink, in sink order
  };
  struct ThreadCache {
    std::uint64_t router_id;
    EventRing* const* rings;
  };
  // The ring set of the calling thread for the router it used last.
  inline static thread_local ThreadCache tl_cache_
      __attribute__((tls_model("initial-exec"))) = {0, nullptr};

  EventRing* const* thread_rings() noexcept {
    if (tl_cache_.router_id == id_) [[likely]]
      return tl_cache_.rings;
    return register_thread();
  }
  EventRing* const* register_thread() noexcept;
  struct ThreadExit;
  void release_thread_rings(EventRing* const* rings) noexcept;

  const RouterOptions options_;
  const std::uint64_t id_;
  // Shared with the delivery threads: an abandoned delivery thread may outlive the router.
  const std::shared_ptr<SeriesTable> series_table_;
  std::vector<std::shared_ptr<SinkDelivery>> deliveries_;
  std::vector<SinkDelivery*> delivery_raw_;  // same order, for the hot path
  std::atomic<bool> closing_{false};
  std::atomic<std::uint64_t> unregistered_drops_{0};  // ring allocation failed

  mutable Mutex threads_mutex_;
  std::vector<std::unique_ptr<ThreadRings>> threads_ TSM_GUARDED_BY(threads_mutex_);
  // Left by threads that exited.
  std::vector<ThreadRings*> free_threads_ TSM_GUARDED_BY(threads_mutex_);

  // Drop and stall lines, from a thread of its own (see stall_reporter.hpp).
  std::unique_ptr<StallReporter> stall_reporter_;

  Mutex close_mutex_;
  bool closed_ TSM_GUARDED_BY(close_mutex_) = false;
  bool close_result_ TSM_GUARDED_BY(close_mutex_) = false;
};

// Always inlined: the handles' one out-of-line call should be the only call.
__attribute__((always_inline)) inline void EventRouter::publish(const EventSlot& slot) noexcept {
  const std::size_t n = delivery_raw_.size();
  if (n == 0) return;
  EventRing* const* rings = thread_rings();
  if (rings == nullptr) [[unlikely]] {
    unregistered_drops_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const bool closing = closing_.load(std::memory_order_relaxed);
  const std::uint32_t number = slot.series->number;
  const std::uint64_t mask = slot.series->output_mask;
  for (std::size_t i = 0; i < n; ++i) {
    if (i < 64 && ((mask >> i) & 1) == 0) [[unlikely]]
      continue;  // a view left it out
    EventRing& ring = *rings[i];
    SinkDelivery& delivery = *delivery_raw_[i];
    if (closing) [[unlikely]] {
      EventRing::bump(ring.dropped_after_close);
    } else if (delivery.disabled()) [[unlikely]] {
      EventRing::bump(ring.dropped_sink_disabled);
    } else if (ring.try_push(number, slot.value, slot.weight, slot.raw_time)) [[likely]] {
      delivery.wake();
    } else {
      EventRing::bump(ring.dropped_ring_full);
    }
  }
}

}  // namespace tokenspeed::metrics
