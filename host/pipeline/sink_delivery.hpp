// sink_delivery.hpp — one output's delivery thread: lazy create_sink, draining its
// rings, emit, and the plugin's close. The only caller of plugin sink functions;
// collector threads touch it only through wake(), never a plugin call.
// Tested in test/unit/pipeline/event_router_test.cpp and
// event_router_stress_test.cpp.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <tokenspeed/metric_reporter.h>

#include "core/abi_buffer.hpp"
#include "core/delivery_defaults.hpp"
#include "core/fault_log.hpp"
#include "core/process_identity.hpp"
#include "core/thread_safety.hpp"
#include "pipeline/event_clock.hpp"
#include "pipeline/event_ring.hpp"
#include "pipeline/output_definition.hpp"
#include "pipeline/series_table.hpp"
#include "pipeline/sink_figures.hpp"

namespace tokenspeed::metrics {

// The plugin functions a delivery thread calls, for crash lines and stall reports.
enum class PluginCall : std::uint8_t { create_sink = 0, emit = 1, close = 2 };
const char* to_string(PluginCall call) noexcept;  // "create_sink", "emit", "close"

// What a delivery thread is doing in plugin code, read from another thread (the stall
// reporter). sequence grows by one when a call begins and by one when it
// returns: odd while a call runs; the same odd value twice means the same call.
struct PluginCallProbe {
  std::uint64_t sequence = 0;
  PluginCall call = PluginCall::emit;
  bool inside() const noexcept { return (sequence & 1) != 0; }
};

struct SinkDeliveryOptions {
  std::size_t queue_size = kDefaultQueueSize;
  std::chrono::milliseconds idle_park_timeout{100};
  std::chrono::milliseconds log_interval{10'000};
  LogWriter log;  // where rate-limited lines go
  // The router's series numbering, to turn a ring event back into its series.
  std::shared_ptr<const SeriesTable> series_table;
  // The process every sink is told it serves (tsm_sink.process); null: none.
  std::shared_ptr<const ProcessIdentityView> process;
};

// Threading: the delivery thread owns the plugin sink. Collector threads call
// only wake(); the router calls register_ring (under its lock), the close
// steps and figures from its own threads. The state is held by shared_ptr so an
// abandoned delivery thread (stuck in a plugin) keeps what it touches alive; it never
// touches a ring or a series after it was abandoned.
class SinkDelivery : public std::enable_shared_from_this<SinkDelivery> {
 public:
  SinkDelivery(OutputDefinition output, const SinkDeliveryOptions& options);
  ~SinkDelivery();
  SinkDelivery(const SinkDelivery&) = delete;
  SinkDelivery& operator=(const SinkDelivery&) = delete;

  void start();  // starts the thread (parked until the first event)

  // ---- collector threads (hot path)
  bool disabled() const noexcept { return disabled_.load(std::memory_order_relaxed); }
  void wake() noexcept {
    // The asymmetric barrier (see park()) orders the ring store before this load.
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (parked_.load(std::memory_order_relaxed) != 0) wake_slow();
  }

  // ---- router (slow path)
  EventRing* new_ring();  // allocates; links the ring for the delivery thread
  // Close steps, in order: stop after draining; wait until drained (or the
  // deadline); freeze the accounting; close the plugin sink with timeout and
  // wait until it returned (or hard_deadline).
  void request_drain() noexcept;
  bool wait_drained(std::chrono::steady_clock::time_point deadline) noexcept;
  void freeze() noexcept;
  bool close_plugin(std::chrono::nanoseconds timeout,
                    std::chrono::steady_clock::time_point hard_deadline) noexcept;
  bool drain_finished() const noexcept;
  // After close: join if the thread ended, detach it otherwise.
  void release_thread() noexcept;

  SinkFigures figures() const;
  const std::string& name() const noexcept { return output_.name; }

  // ---- stall reporter (any thread; atomics only, never a lock a plugin holds)
  PluginCallProbe plugin_call() const noexcept;
  std::uint64_t dropped_ring_full_so_far() const noexcept;      // ring full, every ring
  std::uint64_t dropped_sink_disabled_so_far() const noexcept;  // output disabled

 private:
  void run() noexcept;
  bool drain_requested() const noexcept {
    return (requests_.load(std::memory_order_seq_cst) & kDrainRequested) != 0;
  }
  std::size_t drain_batch() noexcept;            // events popped in this pass
  void deliver(const RingEvent& slot) noexcept;  // builds the event and calls emit
  void disable_after_failed_emit(bool threw) noexcept;
  bool rings_empty() noexcept;  // consumer side
  void park() noexcept;
  void wake_slow() noexcept;
  bool ensure_sink() noexcept;
  // Counts one resolved event (delivery thread, the counters' only writer).
  void count(std::atomic<std::uint64_t>& counter) noexcept;
  void enter_plugin(PluginCall call) noexcept;  // delivery thread, around every plugin call
  void leave_plugin() noexcept;
  void do_plugin_close(std::int64_t timeout_ns) noexcept;
  std::uint64_t sum_rings(std::atomic<std::uint64_t> EventRing::*field) const noexcept;

  const OutputDefinition output_;
  const SinkDeliveryOptions options_;
  std::thread thread_;

  // hot-path shared flags, each on its own line
  alignas(64) std::atomic<std::uint32_t> parked_{0};
  alignas(64) std::atomic<std::uint64_t> wakeups_{0};
  std::atomic<std::uint64_t> parks_{0};
  alignas(64) std::atomic<bool> disabled_{false};
  alignas(64) std::atomic<EventRing*> rings_{nullptr};
  Mutex rings_mutex_;  // also orders new_ring()'s pushes onto rings_
  std::vector<std::unique_ptr<EventRing>> owned_rings_ TSM_GUARDED_BY(rings_mutex_);

  // delivery-thread-written accounting, read by figures() and freeze()
  alignas(64) std::atomic<std::uint64_t> delivered_{0};
  std::atomic<std::uint64_t> dropped_sink_disabled_on_delivery_{0};
  bool locked_count_ = false;  // delivery thread only: no membarrier, count with a locked add
  // What the router asks of the delivery thread, as bits that are only ever added:
  // kDrainRequested (stop once the rings are empty; checked when idle) and
  // kFreezeRequested (stop before the next event; checked before each one).
  static constexpr std::uint32_t kDrainRequested = 1;
  static constexpr std::uint32_t kFreezeRequested = 2;
  alignas(64) std::atomic<std::uint32_t> requests_{0};
  bool stop_now_ = false;  // delivery thread only: accounting frozen, stop at once
  // Delivery thread only, preallocated with the delivery thread (never per event, and members,
  // not thread_local: the library is loaded by dlopen too (Python), where
  // static TLS is scarce): the slots of one drain pass, the wall clock the
  // events are stamped with, and the buffer emit writes its error into.
  std::array<RingEvent, 256> batch_{};
  WallClockConverter wall_clock_;
  AbiBuffer emit_error_;
  // Filled field by field for each event: no per-event clearing of the
  // whole struct (deliver sets every field a plugin reads).
  tsm_metric_event event_{};

  // plugin sink, owned by the delivery thread
  tsm_sink sink_{};
  PluginFiguresCell plugin_figures_;  // the sink's report_figures writes here
  std::atomic<bool> created_{false};
  std::atomic<bool> create_failed_{false};
  std::atomic<bool> close_failed_{false};

  // The close handshake between the delivery thread and the router's close(), one
  // state under mutex_ (waited for on cv_). Transitions, each named by the
  // function that makes it:
  //   delivering --end_drain--> drained | stopped_at_freeze     (delivery thread)
  //   drained | stopped_at_freeze --grant_close--> close_granted (router)
  //   close_granted --end_close--> closed                        (delivery thread)
  //   delivering | drained | stopped_at_freeze | close_granted
  //       --abandon--> abandoned                                 (router, at the hard deadline)
  //   abandoned --end_drain--> abandoned (the delivery thread closes with a zero timeout)
  //   abandoned --end_close--> closed_after_abandoned            (delivery thread)
  enum class CloseState : std::uint8_t {
    delivering,              // the drain loop runs
    drained,                 // the loop ended with every ring emptied; waits for its turn
    stopped_at_freeze,       // the loop ended at the freeze, events left in rings; waits
    close_granted,           // the router gave the close turn (close_timeout_ns_)
    closed,                  // the plugin's close returned, or there was nothing to close
    abandoned,               // the router stopped waiting; the delivery thread is in a plugin call
    closed_after_abandoned,  // ... and the delivery thread got out and closed with a zero timeout
  };
  // Delivery thread thread.
  void end_drain(bool rings_emptied) noexcept;
  std::int64_t wait_close_turn() noexcept;  // the timeout for close; 0 when abandoned
  void end_close() noexcept;
  // Under mutex_: whether the drain loop ended, and whether the thread ended.
  bool drain_ended_locked() const noexcept TSM_REQUIRES(mutex_);
  bool thread_ended_locked() const noexcept TSM_REQUIRES(mutex_);

  mutable Mutex mutex_;
  CondVar cv_;
  CloseState close_state_ TSM_GUARDED_BY(mutex_) = CloseState::delivering;
  std::int64_t close_timeout_ns_ TSM_GUARDED_BY(mutex_) = 0;
  // The accounting at freeze(), once frozen.
  struct FrozenFigures {
    std::uint64_t pushed = 0;  // ring pushes
    std::uint64_t delivered = 0;
    std::uint64_t dropped_sink_disabled = 0;
  };
  std::optional<FrozenFigures> frozen_ TSM_GUARDED_BY(mutex_);

  // one-off messages of the delivery thread (create_sink, emit or close failed); drop
  // and stall lines come from the router's stall reporter, which a plugin
  // stuck in a call cannot hold
  FaultLog log_;

  // the plugin call in progress, for the crash handler and the stall reporter
  std::string call_text_[3];  // per PluginCall: "output 'x' (plugin file '/p') during emit"
  alignas(64) std::atomic<std::uint64_t> call_sequence_{0};
  std::atomic<PluginCall> call_kind_{PluginCall::emit};
};

}  // namespace tokenspeed::metrics
