// isolated_output.hpp — an output whose plugin sink runs in a helper process:
// to its delivery thread it is a tsm_sink like any other, whose emit copies
// the event into the shared channel; a supervisor thread starts the helper,
// restarts it with exponential backoff when it crashes, exits or deadlocks,
// counts what it lost and reports it. Never loads or calls the plugin in
// this process.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include <tokenspeed/kit/backoff.hpp>
#include <tokenspeed/metric_reporter.h>

#include "isolation/channel_writer.hpp"
#include "config/isolation_settings.hpp"
#include "isolation/shared_channel.hpp"
#include "core/fault_log.hpp"
#include "core/process_identity.hpp"
#include "core/thread_safety.hpp"
#include "pipeline/sink_figures.hpp"

namespace tokenspeed::metrics::isolation {

struct IsolatedOutputOptions {
  std::string output;           // the output's name
  std::string plugin_path;      // the plugin file the helper loads
  std::string reporter;         // the reporter name it registers (the output's name)
  ProcessIdentity process;      // the producer: its name ("scheduler-0") in log lines
                                // ("" omits it) and the helper's tsm_sink.process
  std::string producer_config;  // the producer configuration, JSON text
  IsolationSettings settings;
  std::chrono::milliseconds log_interval{10'000};
  LogWriter log;  // stderr when empty
  // Restart backoff: doubles from initial to max; back to initial once a
  // helper stayed up for healthy_after.
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{30'000};
  std::chrono::milliseconds healthy_after{10'000};
  std::chrono::milliseconds supervise_interval{50};  // exit and heartbeat checks
  // How long a new helper may take to become a running process that has
  // attached its channel (exec, dynamic linking, sanitizer start-up): host
  // work that a busy machine slows, so not bounded by the deadlock timeout.
  std::chrono::milliseconds start_allowance{60'000};
};

// What happened to the events the delivery thread handed to the isolated sink.
struct IsolatedFigures {
  std::uint64_t written = 0;                // into the channel
  std::uint64_t dropped_ring_full = 0;      // the channel was full
  std::uint64_t dropped_too_large = 0;      // larger than a channel record (in dropped_ring_full)
  std::uint64_t delivered = 0;              // the plugin's emit returned success in the helper
  std::uint64_t dropped_sink_disabled = 0;  // the helper's sink was disabled (emit failed)
  std::uint64_t lost_in_helper = 0;         // inside a helper that crashed or was killed
  std::uint64_t discarded_at_deadline = 0;  // still in the channel when close ended
  std::uint64_t helper_restarts = 0;        // helpers started after the first
};

// Threading: create_sink, emit and close come from the output's delivery
// delivery thread (one at a time, as for any sink); the supervisor thread owns the
// helper's pid and restarts; adjust and figures read atomics from any thread.
class IsolatedOutput {
 public:
  explicit IsolatedOutput(IsolatedOutputOptions options);
  ~IsolatedOutput();  // a helper still running is killed; the supervisor joined
  IsolatedOutput(const IsolatedOutput&) = delete;
  IsolatedOutput& operator=(const IsolatedOutput&) = delete;

  // The output's OutputDefinition::create_sink: starts the first helper and
  // waits until its create_sink returned (or it failed, crashed or hung).
  int create_sink(tsm_sink& out, std::string& error) noexcept;

  // Rewrites the delivery thread's accounting of this output with the helper's
  // fates: "delivered" becomes what the plugin accepted in the helper.
  void adjust(SinkFigures& sink) const noexcept;
  IsolatedFigures figures() const noexcept;  // all zero until create_sink succeeded

 private:
  static int emit_entry(void* self, const tsm_metric_event* event, tsm_buffer* error) noexcept;
  static int close_entry(void* self, std::int64_t timeout_ns, tsm_buffer* error) noexcept;
  int emit(const tsm_metric_event& event, tsm_buffer* error) noexcept;
  int close(std::int64_t timeout_ns, tsm_buffer* error) noexcept;

  void supervise() noexcept;  // the supervisor thread
  // Under mutex_, supervisor thread only.
  void start_helper() noexcept TSM_REQUIRES(mutex_);
  void helper_ended(int wait_status, std::chrono::steady_clock::time_point now) noexcept
      TSM_REQUIRES(mutex_);
  void watch_progress(std::chrono::steady_clock::time_point now) noexcept TSM_REQUIRES(mutex_);
  void report(const std::string& text) noexcept;
  void stop_supervisor() noexcept;

  const IsolatedOutputOptions options_;
  std::string executable_;
  SharedChannel channel_;
  std::unique_ptr<ChannelWriter> writer_;  // delivery thread
  std::atomic<bool> created_{false};

  // delivery-thread-written
  alignas(64) std::atomic<std::uint64_t> dropped_ring_full_{0};
  std::atomic<std::uint64_t> dropped_too_large_{0};
  // supervisor-written
  alignas(64) std::atomic<std::uint64_t> lost_in_helper_{0};
  std::atomic<std::uint64_t> discarded_at_deadline_{0};
  std::atomic<std::uint64_t> helper_restarts_{0};

  std::thread supervisor_;
  mutable Mutex mutex_;
  CondVar cv_;
  pid_t pid_ TSM_GUARDED_BY(mutex_) = -1;
  bool stop_ TSM_GUARDED_BY(mutex_) = false;
  bool closing_ TSM_GUARDED_BY(mutex_) = false;
  // Close asks for one more helper to drain the channel.
  bool final_drain_ TSM_GUARDED_BY(mutex_) = false;
  // The helper was killed at the close deadline.
  bool close_kill_ TSM_GUARDED_BY(mutex_) = false;
  // During close: the helper was reaped.
  bool helper_exited_ TSM_GUARDED_BY(mutex_) = false;
  // During close: how the helper ended, if not cleanly.
  std::string close_problem_ TSM_GUARDED_BY(mutex_);
  // The first helper's create_sink returned, failed or died.
  bool first_outcome_ TSM_GUARDED_BY(mutex_) = false;
  std::string first_error_ TSM_GUARDED_BY(mutex_);
  // Why the supervisor killed the running helper, "" if it did not.
  std::string kill_reason_ TSM_GUARDED_BY(mutex_);
  std::chrono::steady_clock::time_point started_at_ TSM_GUARDED_BY(mutex_){};
  std::chrono::steady_clock::time_point restart_at_ TSM_GUARDED_BY(mutex_){};
  kit::Backoff backoff_;  // supervisor thread
  std::uint64_t last_heartbeat_ = 0;
  std::uint64_t spawn_heartbeat_ = 0;  // the heartbeat when the helper was spawned
  std::chrono::steady_clock::time_point last_progress_{};
  std::uint64_t dropped_ring_full_reported_ = 0;

  FaultLog log_;  // supervisor thread, then close after it stopped
};

}  // namespace tokenspeed::metrics::isolation
