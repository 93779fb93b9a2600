// sink_delivery.cpp — the delivery thread of one output: lazy create_sink,
// draining, emit, disabling on failure, parking, accounting and the plugin's
// close. Plugin calls happen here only, never on a collector thread.
#include "pipeline/sink_delivery.hpp"

#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>

#include "core/abi_buffer.hpp"
#include "pipeline/event_clock.hpp"
#include "pipeline/metric_series.hpp"
#include "core/plugin_call_context.hpp"

namespace tokenspeed::metrics {

namespace {

void futex_wait(std::atomic<std::uint32_t>* word, std::uint32_t expected,
                std::chrono::nanoseconds timeout) noexcept {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(timeout.count() / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(timeout.count() % 1'000'000'000);
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, &ts,
          nullptr, 0);
}

void futex_wake(std::atomic<std::uint32_t>* word) noexcept {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

// The heavy half of an asymmetric barrier: after it returns, every other
// thread of the process has executed a full barrier, so a producer's plain
// "push, then load parked" cannot be reordered against the delivery thread's
// "store parked, then check the rings" (no fence on the hot path). Without
// membarrier (old kernel, seccomp) a missed wake-up costs at most one park
// timeout.
bool register_membarrier() noexcept {
  return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

// Registration belongs to the process (its address space): a forked child
// registers again. An atomic rather than a guarded static, whose guard a
// fork could copy half-taken by another thread.
enum MembarrierState : int { kUnknown, kAvailable, kUnavailable };
std::atomic<int> membarrier_state{kUnknown};

void forget_membarrier_in_child() noexcept {
  membarrier_state.store(kUnknown, std::memory_order_relaxed);
}

[[maybe_unused]] const int membarrier_fork_handler =
    ::pthread_atfork(nullptr, nullptr, &forget_membarrier_in_child);

// TOKENSPEED_METRICS_MEMBARRIER=off takes the path of a system without it
// (tests of that path; seccomp profiles that kill rather than refuse).
bool membarrier_turned_off() noexcept {
  const char* setting = std::getenv("TOKENSPEED_METRICS_MEMBARRIER");
  return setting != nullptr && std::strcmp(setting, "off") == 0;
}

int known_membarrier_state() noexcept {
  int state = membarrier_state.load(std::memory_order_acquire);
  if (state == kUnknown) {
    // Registering twice (two delivery threads at once) is harmless.
    state = !membarrier_turned_off() && register_membarrier() ? kAvailable : kUnavailable;
    membarrier_state.store(state, std::memory_order_release);
  }
  return state;
}

void heavy_barrier() noexcept {
  if (known_membarrier_state() == kAvailable) {
    syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  } else {
    // A locked read-modify-write: a full barrier on this thread only.
    static std::atomic<int> fence_word{0};
    fence_word.fetch_add(0, std::memory_order_seq_cst);
  }
}

inline void cpu_relax() noexcept {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

// A pause of about a microsecond that touches no shared memory.
inline void backoff() noexcept {
  for (int i = 0; i < 64; ++i) cpu_relax();
}

// A drain pass that found fewer events than this waits a moment before the
// next one, so events reach the delivery thread in batches: one transfer of the
// ring's cache lines per batch instead of one per event.
constexpr std::size_t kSmallPass = 128;

}  // namespace

const char* to_string(PluginCall call) noexcept {
  switch (call) {
    case PluginCall::create_sink:
      return "create_sink";
    case PluginCall::emit:
      return "emit";
    case PluginCall::close:
      return "close";
  }
  return "a plugin call";
}

SinkDelivery::SinkDelivery(OutputDefinition output, const SinkDeliveryOptions& options)
    : output_(std::move(output)),
      options_(options),
      log_("output '" + output_.name + "'", options.log_interval, options.log) {
  sink_.struct_size = sizeof(tsm_sink);
  event_.struct_size = sizeof(tsm_metric_event);
  const std::string where =
      "output '" + output_.name + "'" +
      (output_.plugin_path.empty() ? std::string()
                                   : " (plugin file '" + output_.plugin_path + "')");
  for (const PluginCall call : {PluginCall::create_sink, PluginCall::emit, PluginCall::close}) {
    call_text_[static_cast<int>(call)] = where + " during " + to_string(call);
  }
}

void SinkDelivery::enter_plugin(PluginCall call) noexcept {
  call_kind_.store(call, std::memory_order_relaxed);
  call_sequence_.store(call_sequence_.load(std::memory_order_relaxed) + 1,
                       std::memory_order_release);
}

void SinkDelivery::leave_plugin() noexcept {
  call_sequence_.store(call_sequence_.load(std::memory_order_relaxed) + 1,
                       std::memory_order_release);
}

PluginCallProbe SinkDelivery::plugin_call() const noexcept {
  PluginCallProbe probe;
  probe.sequence = call_sequence_.load(std::memory_order_acquire);
  probe.call = call_kind_.load(std::memory_order_relaxed);
  return probe;
}

std::uint64_t SinkDelivery::dropped_ring_full_so_far() const noexcept {
  return sum_rings(&EventRing::dropped_ring_full);
}

std::uint64_t SinkDelivery::dropped_sink_disabled_so_far() const noexcept {
  return sum_rings(&EventRing::dropped_sink_disabled) +
         dropped_sink_disabled_on_delivery_.load(std::memory_order_relaxed);
}

SinkDelivery::~SinkDelivery() {
  // release_thread() ran (router close); a joinable thread here would abort.
  if (thread_.joinable()) thread_.detach();
}

void SinkDelivery::start() {
  thread_ = std::thread([self = shared_from_this()] { self->run(); });
}

EventRing* SinkDelivery::new_ring() {
  auto ring = std::make_unique<EventRing>(options_.queue_size);
  EventRing* raw = ring.get();
  MutexLock lock(rings_mutex_);
  owned_rings_.push_back(std::move(ring));
  raw->next = rings_.load(std::memory_order_relaxed);
  rings_.store(raw, std::memory_order_release);
  return raw;
}

// ------------------------------------------------------------ delivery thread

void SinkDelivery::count(std::atomic<std::uint64_t>& counter) noexcept {
  if (locked_count_) [[unlikely]] {
    // Without membarrier, freeze() cannot make this thread execute a
    // barrier: a sequentially consistent add, then the flag check of the
    // next event, pairs with freeze()'s (set the flag, then read the count).
    counter.fetch_add(1, std::memory_order_seq_cst);
    return;
  }
  // The delivery thread is the only writer: a plain store, no locked instruction.
  counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

bool SinkDelivery::ensure_sink() noexcept {
  if (created_.load(std::memory_order_relaxed)) return true;
  if (create_failed_.load(std::memory_order_relaxed)) return false;
  tsm_sink out{};
  prepare_sink(out, options_.process ? options_.process->get() : nullptr, &plugin_figures_);
  std::string error;
  int rc = TSM_ERROR;
  enter_plugin(PluginCall::create_sink);
  try {
    const PluginCallScope scope(call_text_[static_cast<int>(PluginCall::create_sink)].c_str());
    rc = output_.create_sink ? output_.create_sink(out, error) : TSM_ERROR;
    if (!output_.create_sink) error = "no create_sink";
  } catch (const std::exception& e) {
    rc = TSM_ERROR;
    error = e.what();
  } catch (...) {
    rc = TSM_ERROR;  // logged below as the failure of create_sink
    error = "unknown exception";
  }
  leave_plugin();
  constexpr std::size_t kNeeded = offsetof(tsm_sink_vtable, close) + sizeof(void*);
  if (rc == TSM_OK && (out.vtable == nullptr || out.vtable->struct_size < kNeeded ||
                       out.vtable->emit == nullptr || out.vtable->close == nullptr)) {
    // Nothing we could call close on: treat as a failed factory.
    rc = TSM_ERROR;
    error = "create_sink returned a sink without emit/close";
  }
  try {
    if (rc == TSM_OK) {
      sink_ = out;
      created_.store(true, std::memory_order_release);
      return true;
    }
    create_failed_.store(true, std::memory_order_release);
    disabled_.store(true, std::memory_order_relaxed);
    log_.message("create_sink failed (" + (error.empty() ? std::string("no message") : error) +
                     "); the output is disabled for the rest of the process, its events are "
                     "counted as dropped",
                 FaultLog::Clock::now());
  } catch (...) {
    // No memory for the line: the failure is on /metrics (sink_failures) and in the summary.
  }
  return false;
}

std::size_t SinkDelivery::drain_batch() noexcept {
  wall_clock_.maybe_recalibrate();
  std::size_t popped = 0;
  for (EventRing* ring = rings_.load(std::memory_order_acquire); ring != nullptr;
       ring = ring->next) {
    const std::size_t n = ring->pop(batch_.data(), batch_.size());
    popped += n;
    for (std::size_t i = 0; i < n; ++i) {
      if ((requests_.load(std::memory_order_seq_cst) & kFreezeRequested) != 0) {
        stop_now_ = true;  // frozen: touch no series, build no event
        return popped;
      }
      if (disabled_.load(std::memory_order_relaxed) || !ensure_sink()) {
        count(dropped_sink_disabled_on_delivery_);
        continue;
      }
      deliver(batch_[i]);
    }
  }
  return popped;
}

void SinkDelivery::deliver(const RingEvent& slot) noexcept {
  const MetricSeries& series = *options_.series_table->find(slot.series);
  const SeriesFamily& family = *series.family;
  tsm_metric_event& event = event_;
  event.operation = static_cast<std::uint32_t>(family.operation);
  event.timestamp_ns = wall_clock_.to_unix_ns(slot.raw_time);
  event.metric = family.info.name;
  event.value = slot.value;
  event.weight = slot.weight;
  event.label_count = family.info.label_count;
  event.label_names = family.info.label_names;
  event.label_values = series.label_value_ptrs.empty() ? nullptr : series.label_value_ptrs.data();
  event.info = &family.info;
  int rc = TSM_ERROR;
  bool threw = false;
  enter_plugin(PluginCall::emit);
  try {
    const PluginCallScope scope(call_text_[static_cast<int>(PluginCall::emit)].c_str());
    rc = sink_.vtable->emit(sink_.self, &event, emit_error_.get());
  } catch (...) {
    threw = true;  // logged below with the disabling of the sink
  }
  leave_plugin();
  if (rc == TSM_OK && !threw) {
    count(delivered_);
    return;
  }
  disable_after_failed_emit(threw);
}

void SinkDelivery::disable_after_failed_emit(bool threw) noexcept {
  // The event whose emit failed counts as dropped (disabled).
  disabled_.store(true, std::memory_order_relaxed);
  count(dropped_sink_disabled_on_delivery_);
  try {
    log_.message(
        std::string(threw ? "emit threw an exception" : "emit failed (") +
            (threw ? ""
                   : (emit_error_.empty() ? std::string("no message") : emit_error_.str()) + ")") +
            "; the sink is disabled, later events are counted as dropped",
        FaultLog::Clock::now());
  } catch (...) {
    // No memory for the line: the drop is counted above and on /metrics.
  }
}

bool SinkDelivery::rings_empty() noexcept {
  for (EventRing* ring = rings_.load(std::memory_order_acquire); ring != nullptr;
       ring = ring->next) {
    if (!ring->empty()) return false;
  }
  return true;
}

void SinkDelivery::park() noexcept {
  // Spin a little before sleeping, checking the rings only every few
  // pauses: polling them back to back would pull the producers' cache
  // lines away from them on every event.
  for (int i = 0; i < 16; ++i) {
    if (!rings_empty() || drain_requested()) return;
    backoff();
  }
  parked_.store(1, std::memory_order_seq_cst);
  heavy_barrier();
  if (!rings_empty() || drain_requested()) {
    parked_.store(0, std::memory_order_relaxed);
    return;
  }
  parks_.fetch_add(1, std::memory_order_relaxed);
  futex_wait(&parked_, 1, options_.idle_park_timeout);
  parked_.store(0, std::memory_order_relaxed);
}

void SinkDelivery::wake_slow() noexcept {
  if (parked_.exchange(0, std::memory_order_acq_rel) != 0) {
    wakeups_.fetch_add(1, std::memory_order_relaxed);
    futex_wake(&parked_);
  }
}

std::uint64_t SinkDelivery::sum_rings(std::atomic<std::uint64_t> EventRing::*field) const noexcept {
  std::uint64_t sum = 0;
  for (EventRing* ring = rings_.load(std::memory_order_acquire); ring != nullptr;
       ring = ring->next) {
    sum += (ring->*field).load(std::memory_order_relaxed);
  }
  return sum;
}

void SinkDelivery::do_plugin_close(std::int64_t timeout_ns) noexcept {
  if (!created_.load(std::memory_order_acquire)) return;  // nothing was returned: nothing to close
  AbiBuffer error;
  int rc = TSM_ERROR;
  bool threw = false;
  enter_plugin(PluginCall::close);
  try {
    const PluginCallScope scope(call_text_[static_cast<int>(PluginCall::close)].c_str());
    rc = sink_.vtable->close(sink_.self, timeout_ns, error.get());
  } catch (...) {
    threw = true;  // logged below as a failed close
  }
  leave_plugin();
  if (rc != TSM_OK || threw) {
    close_failed_.store(true, std::memory_order_relaxed);
    try {
      log_.message(threw ? std::string("close threw an exception")
                         : "close failed (" +
                               (error.empty() ? std::string("no message") : error.str()) + ")",
                   FaultLog::Clock::now());
      log_.flush(FaultLog::Clock::now());
    } catch (...) {
      // No memory for the line: close_failed is in the summary and the report.
    }
  }
}

void SinkDelivery::run() noexcept {
  locked_count_ = known_membarrier_state() != kAvailable;
  for (;;) {
    if (const std::size_t popped = drain_batch(); popped > 0) {
      if (stop_now_) break;
      if (popped < kSmallPass) backoff();
      continue;
    }
    if (drain_requested() && rings_empty()) break;
    park();
  }
  try {
    log_.flush(FaultLog::Clock::now());  // suppressed messages, if any
  } catch (...) {
    // No memory for the suppressed-message line: the counts are on /metrics.
  }
  end_drain(!stop_now_);
  do_plugin_close(wait_close_turn());
  end_close();
}

void SinkDelivery::end_drain(bool rings_emptied) noexcept {
  {
    MutexLock lock(mutex_);
    if (close_state_ == CloseState::delivering) {
      close_state_ = rings_emptied ? CloseState::drained : CloseState::stopped_at_freeze;
    }
  }
  cv_.notify_all();
}

std::int64_t SinkDelivery::wait_close_turn() noexcept {
  MutexLock lock(mutex_);
  while (close_state_ != CloseState::close_granted && close_state_ != CloseState::abandoned) {
    cv_.wait(mutex_);
  }
  return close_state_ == CloseState::close_granted ? close_timeout_ns_ : 0;
}

void SinkDelivery::end_close() noexcept {
  {
    MutexLock lock(mutex_);
    close_state_ = close_state_ == CloseState::abandoned ? CloseState::closed_after_abandoned
                                                         : CloseState::closed;
  }
  cv_.notify_all();
}

bool SinkDelivery::drain_ended_locked() const noexcept {
  return close_state_ == CloseState::drained || close_state_ == CloseState::stopped_at_freeze;
}

bool SinkDelivery::thread_ended_locked() const noexcept {
  return close_state_ == CloseState::closed || close_state_ == CloseState::closed_after_abandoned;
}

// ------------------------------------------------------------------- close

void SinkDelivery::request_drain() noexcept {
  requests_.fetch_or(kDrainRequested, std::memory_order_seq_cst);
  wake_slow();
}

bool SinkDelivery::wait_drained(std::chrono::steady_clock::time_point deadline) noexcept {
  MutexLock lock(mutex_);
  while (close_state_ == CloseState::delivering &&
         cv_.wait_until(mutex_, deadline) == std::cv_status::no_timeout) {
  }
  return close_state_ == CloseState::drained;
}

void SinkDelivery::freeze() noexcept {
  // The delivery thread checks the flag before each event and counts it after emit
  // returned. The barrier makes the delivery thread's counts so far visible and the
  // flag visible to its next check, so at most the one event in emit now
  // (or just returned) is counted as discarded although the plugin took it.
  requests_.fetch_or(kFreezeRequested, std::memory_order_seq_cst);
  heavy_barrier();
  const std::uint64_t delivered = delivered_.load(std::memory_order_seq_cst);
  const std::uint64_t disabled = dropped_sink_disabled_on_delivery_.load(std::memory_order_seq_cst);
  const std::uint64_t pushed = sum_rings(&EventRing::pushed);
  MutexLock lock(mutex_);
  if (!frozen_) frozen_ = FrozenFigures{pushed, delivered, disabled};
}

bool SinkDelivery::close_plugin(std::chrono::nanoseconds timeout,
                                std::chrono::steady_clock::time_point hard_deadline) noexcept {
  MutexLock lock(mutex_);
  // After freeze() the delivery thread stops as soon as the plugin call in progress
  // returns. Wait for that until the hard deadline; a delivery thread still inside
  // emit or create_sink then is abandoned: close is never called while emit
  // runs, and the delivery thread closes the sink with a zero timeout if the call
  // ever returns, with nobody waiting for it.
  while (!drain_ended_locked() &&
         cv_.wait_until(mutex_, hard_deadline) == std::cv_status::no_timeout) {
  }
  if (!drain_ended_locked()) {
    close_state_ = CloseState::abandoned;
    cv_.notify_all();
    return false;
  }
  close_state_ = CloseState::close_granted;
  close_timeout_ns_ = timeout.count() > 0 ? timeout.count() : 0;
  cv_.notify_all();
  while (!thread_ended_locked() &&
         cv_.wait_until(mutex_, hard_deadline) == std::cv_status::no_timeout) {
  }
  if (!thread_ended_locked()) {
    close_state_ = CloseState::abandoned;  // ignores its close timeout: left running
    return false;
  }
  return !close_failed_.load(std::memory_order_relaxed);
}

bool SinkDelivery::drain_finished() const noexcept {
  MutexLock lock(mutex_);
  return drain_ended_locked();
}

void SinkDelivery::release_thread() noexcept {
  bool finished = false;
  {
    MutexLock lock(mutex_);
    finished = thread_ended_locked();
  }
  if (!thread_.joinable()) return;
  try {
    if (finished) {
      thread_.join();
    } else {
      thread_.detach();
    }
  } catch (...) {
    // join or detach failed (std::system_error): nothing more can be done for the
    // thread at close; the router keeps its shared state alive.
  }
}

// ----------------------------------------------------------------- figures

SinkFigures SinkDelivery::figures() const {
  SinkFigures s;
  s.name = output_.name;
  // Delivery thread counters first, then the ring counters: pushed >= resolved.
  const std::uint64_t delivered = delivered_.load(std::memory_order_acquire);
  const std::uint64_t disabled_on_delivery =
      dropped_sink_disabled_on_delivery_.load(std::memory_order_acquire);
  const std::uint64_t pushed = sum_rings(&EventRing::pushed);
  s.dropped_ring_full = sum_rings(&EventRing::dropped_ring_full);
  const std::uint64_t disabled_publish = sum_rings(&EventRing::dropped_sink_disabled);
  s.dropped_after_close = sum_rings(&EventRing::dropped_after_close);
  s.accepted = pushed + s.dropped_ring_full + disabled_publish + s.dropped_after_close;
  s.created = created_.load(std::memory_order_acquire);
  s.create_failed = create_failed_.load(std::memory_order_acquire);
  s.disabled = disabled_.load(std::memory_order_acquire);
  s.close_failed = close_failed_.load(std::memory_order_acquire);
  s.wakeups = wakeups_.load(std::memory_order_relaxed);
  s.parks = parks_.load(std::memory_order_relaxed);
  s.parked = parked_.load(std::memory_order_acquire) != 0;
  s.plugin = plugin_figures_.load();
  MutexLock lock(mutex_);
  s.closed = thread_ended_locked();
  s.abandoned =
      close_state_ == CloseState::abandoned || close_state_ == CloseState::closed_after_abandoned;
  if (s.abandoned) {
    const PluginCallProbe probe = plugin_call();
    if (probe.inside()) s.abandoned_in = to_string(probe.call);
  }
  if (frozen_) {
    s.delivered = frozen_->delivered;
    s.dropped_sink_disabled = disabled_publish + frozen_->dropped_sink_disabled;
    s.discarded_at_deadline = frozen_->pushed - frozen_->delivered - frozen_->dropped_sink_disabled;
    // Pushed after the accounting froze: a thread that passed the closing
    // check just before close() began. Nobody will deliver them.
    s.dropped_after_close += pushed - frozen_->pushed;
    s.queue_depth = 0;
  } else {
    s.delivered = delivered;
    s.dropped_sink_disabled = disabled_publish + disabled_on_delivery;
    s.queue_depth = pushed - delivered - disabled_on_delivery;
  }
  if (output_.adjust_figures) output_.adjust_figures(s);
  return s;
}

}  // namespace tokenspeed::metrics
