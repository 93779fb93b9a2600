// isolated_output.cpp — the proxy sink of an isolated output and the
// supervisor of its helper process: start, heartbeat, kill, reap, restart
// with backoff, loss accounting and the rate-limited lines. Never calls the
// plugin: only the helper does.
#include "isolation/isolated_output.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "isolation/helper_process.hpp"

namespace tokenspeed::metrics::isolation {
namespace {

using Clock = std::chrono::steady_clock;

std::string seconds_text(std::chrono::nanoseconds d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", std::chrono::duration<double>(d).count());
  return text;
}

std::string events_text(std::uint64_t n) {
  return std::to_string(n) + (n == 1 ? " event" : " events");
}

std::string subject_of(const IsolatedOutputOptions& options) {
  std::string subject = "output '" + options.output + "'";
  if (!options.process.name.empty()) subject += " in " + options.process.name;
  if (!options.plugin_path.empty()) subject += " (plugin file '" + options.plugin_path + "')";
  return subject;
}

HelperState state_of(const ControlBlock& control) noexcept {
  return static_cast<HelperState>(control.state.load(std::memory_order_acquire));
}

}  // namespace

IsolatedOutput::IsolatedOutput(IsolatedOutputOptions options)
    : options_(std::move(options)),
      // Exact doubling, no jitter: one helper, and its restart delays are
      // in the log lines an operator reads.
      backoff_(kit::BackoffOptions{options_.initial_backoff, options_.max_backoff, 2.0, 0.0}),
      log_(subject_of(options_), options_.log_interval,
           options_.log ? options_.log : LogWriter(&write_log_line_to_stderr)) {}

IsolatedOutput::~IsolatedOutput() { stop_supervisor(); }

void IsolatedOutput::stop_supervisor() noexcept {
  {
    MutexLock lock(mutex_);
    stop_ = true;
    closing_ = true;
    if (pid_ > 0) {
      if (kill_reason_.empty()) kill_reason_ = "stopped with its output";
      ::kill(pid_, SIGKILL);
    }
  }
  cv_.notify_all();
  if (supervisor_.joinable()) {
    try {
      supervisor_.join();
    } catch (...) {
      // In a destructor: join failed (std::system_error), nothing more can be done.
    }
  }
}

namespace {

// The producer's identity, for the helper's sink (strings cut to fit).
void write_identity(ControlBlock& control, const ProcessIdentity& identity) noexcept {
  const auto copy = [](char(&to)[kIdentityTextBytes], const std::string& from) {
    const std::size_t n = std::min(from.size(), kIdentityTextBytes - 1);
    std::memcpy(to, from.data(), n);
    to[n] = '\0';
  };
  control.identity_rank = identity.rank;
  control.identity_pid = identity.pid;
  copy(control.identity_name, identity.name);
  copy(control.identity_role, identity.role);
  copy(control.identity_node, identity.node);
}

}  // namespace

// ------------------------------------------------------------- the sink

int IsolatedOutput::create_sink(tsm_sink& out, std::string& error) noexcept {
  try {
    channel_ = SharedChannel::create();
    if (options_.producer_config.size() > kConfigBytes) {
      error = "the producer configuration (" + std::to_string(options_.producer_config.size()) +
              " bytes) is larger than an isolated output accepts (" + std::to_string(kConfigBytes) +
              " bytes)";
      return TSM_ERROR;
    }
    ControlBlock& control = channel_.control();
    std::memcpy(control.config, options_.producer_config.data(), options_.producer_config.size());
    control.config_size = static_cast<std::uint32_t>(options_.producer_config.size());
    write_identity(control, options_.process);
    writer_ = std::make_unique<ChannelWriter>(channel_);
    executable_ = helper_executable();
    supervisor_ = std::thread([this] { supervise(); });
    MutexLock lock(mutex_);
    while (!first_outcome_) cv_.wait(mutex_);
    if (!first_error_.empty()) {
      error = first_error_;
      lock.unlock();
      stop_supervisor();
      return TSM_ERROR;
    }
  } catch (const std::exception& failure) {
    error = std::string("cannot isolate the output: ") + failure.what();
    stop_supervisor();
    return TSM_ERROR;
  }
  static const tsm_sink_vtable vtable = {sizeof(tsm_sink_vtable), &IsolatedOutput::emit_entry,
                                         &IsolatedOutput::close_entry};
  out.vtable = &vtable;
  out.self = this;
  created_.store(true, std::memory_order_release);
  return TSM_OK;
}

int IsolatedOutput::emit_entry(void* self, const tsm_metric_event* event,
                               tsm_buffer* error) noexcept {
  return static_cast<IsolatedOutput*>(self)->emit(*event, error);
}

int IsolatedOutput::close_entry(void* self, std::int64_t timeout_ns, tsm_buffer* error) noexcept {
  return static_cast<IsolatedOutput*>(self)->close(timeout_ns, error);
}

int IsolatedOutput::emit(const tsm_metric_event& event, tsm_buffer* error) noexcept {
  ControlBlock& control = channel_.control();
  if (state_of(control) == HelperState::disabled) {
    // The helper's sink failed: the delivery thread disables the output, as for an
    // emit failure in this process.
    try {
      const std::string message = message_of(control);
      error->assign(error, message.data(), message.size());
    } catch (...) {
      // No memory for the message: the failure itself is still returned and logged.
    }
    return TSM_ERROR;
  }
  switch (writer_->write(event)) {
    case WriteResult::written:
      break;
    case WriteResult::ring_full:
      dropped_ring_full_.fetch_add(1, std::memory_order_relaxed);
      break;
    case WriteResult::too_large:
      dropped_too_large_.fetch_add(1, std::memory_order_relaxed);
      break;
  }
  return TSM_OK;
}

int IsolatedOutput::close(std::int64_t timeout_ns, tsm_buffer* error) noexcept {
  const Clock::time_point deadline = Clock::now() + std::chrono::nanoseconds(timeout_ns);
  std::string problem;
  {
    MutexLock lock(mutex_);
    closing_ = true;
    ControlBlock& control = channel_.control();
    control.close_timeout_ns.store(timeout_ns, std::memory_order_relaxed);
    control.close_requested.store(1, std::memory_order_seq_cst);
    // A helper waiting out its restart backoff is started at once to drain
    // what waits in the channel (it sees the close request after create_sink).
    const bool pending = control.events_written.load(std::memory_order_acquire) >
                         control.events_read.load(std::memory_order_acquire);
    if (pid_ <= 0 && pending && !stop_) final_drain_ = true;
    writer_->wake();
    cv_.notify_all();
    while (!helper_exited_ && (pid_ > 0 || final_drain_) &&
           cv_.wait_until(mutex_, deadline) == std::cv_status::no_timeout) {
    }
    if (!helper_exited_ && pid_ > 0) {
      close_kill_ = true;
      kill_reason_ = "did not finish close within its timeout";
      ::kill(pid_, SIGKILL);
      const auto killed_wait = Clock::now() + std::chrono::seconds(2);
      while (!helper_exited_ && cv_.wait_until(mutex_, killed_wait) == std::cv_status::no_timeout) {
      }
    }
    problem = close_problem_;
  }
  stop_supervisor();
  // What the helper never took from the channel.
  const ControlBlock& control = channel_.control();
  const std::uint64_t written = control.events_written.load(std::memory_order_acquire);
  const std::uint64_t read = control.events_read.load(std::memory_order_acquire);
  if (written > read) discarded_at_deadline_.fetch_add(written - read, std::memory_order_relaxed);
  try {
    const std::uint64_t ring_full = dropped_ring_full_.load(std::memory_order_relaxed);
    if (ring_full > dropped_ring_full_reported_) {
      log_.report("events dropped (the sink helper's ring was full)",
                  ring_full - dropped_ring_full_reported_, Clock::now());
      dropped_ring_full_reported_ = ring_full;
    }
    log_.flush(Clock::now());
  } catch (...) {
    // No memory for the lines: the drops are counted in the figures.
  }
  if (!problem.empty()) {
    error->assign(error, problem.data(), problem.size());
    return TSM_ERROR;
  }
  return TSM_OK;
}

// ------------------------------------------------------------ accounting

IsolatedFigures IsolatedOutput::figures() const noexcept {
  IsolatedFigures f;
  if (!created_.load(std::memory_order_acquire)) return f;  // no channel yet, or none
  const ControlBlock& control = channel_.control();
  // Fates first, then what was handed over: a snapshot never shows more
  // resolved than written.
  f.lost_in_helper = lost_in_helper_.load(std::memory_order_acquire);
  f.discarded_at_deadline = discarded_at_deadline_.load(std::memory_order_acquire);
  f.delivered = control.delivered.load(std::memory_order_acquire);
  f.dropped_sink_disabled = control.dropped_sink_disabled.load(std::memory_order_acquire);
  f.written = control.events_written.load(std::memory_order_acquire);
  f.dropped_ring_full = dropped_ring_full_.load(std::memory_order_relaxed);
  f.dropped_too_large = dropped_too_large_.load(std::memory_order_relaxed);
  f.helper_restarts = helper_restarts_.load(std::memory_order_relaxed);
  return f;
}

void IsolatedOutput::adjust(SinkFigures& sink) const noexcept {
  if (!created_.load(std::memory_order_acquire)) return;  // nothing handed over
  const IsolatedFigures f = figures();
  // The delivery thread counted as delivered every event this sink's emit accepted:
  // written into the channel, or dropped here. Split them by their fate.
  const std::uint64_t handed = sink.delivered;
  const std::uint64_t resolved = f.delivered + f.dropped_sink_disabled + f.lost_in_helper +
                                 f.discarded_at_deadline + f.dropped_ring_full +
                                 f.dropped_too_large;
  sink.delivered = f.delivered;
  sink.dropped_ring_full += f.dropped_ring_full + f.dropped_too_large;
  sink.dropped_sink_disabled += f.dropped_sink_disabled;
  sink.lost_in_helper = f.lost_in_helper;
  sink.discarded_at_deadline += f.discarded_at_deadline;
  sink.queue_depth += handed > resolved ? handed - resolved : 0;  // in the channel, or in emit
  sink.helper_restarts = f.helper_restarts;
  sink.isolated = true;
  sink.plugin = channel_.control().plugin_figures.load();
}

// ------------------------------------------------------------ supervisor

void IsolatedOutput::report(const std::string& text) noexcept {
  try {
    log_.message(text, Clock::now());
  } catch (...) {
    // No memory for the line: what it reports is counted in the figures.
  }
}

void IsolatedOutput::start_helper() noexcept {
  ControlBlock& control = channel_.control();
  control.state.store(static_cast<std::uint32_t>(HelperState::starting), std::memory_order_release);
  control.parked.store(0, std::memory_order_relaxed);
  std::string error;
  const HelperLaunch launch{executable_, options_.plugin_path, options_.reporter, channel_.fd()};
  started_at_ = Clock::now();
  last_progress_ = started_at_;
  last_heartbeat_ = control.heartbeat.load(std::memory_order_relaxed);
  spawn_heartbeat_ = last_heartbeat_;
  kill_reason_.clear();
  pid_ = spawn_helper(launch, error);
  if (pid_ > 0) return;
  if (!first_outcome_) {
    first_error_ = error;
    first_outcome_ = true;
    cv_.notify_all();
    stop_ = true;
    return;
  }
  const std::chrono::milliseconds delay = backoff_.next();
  restart_at_ = started_at_ + delay;
  if (closing_) {
    report(error);
    return;
  }
  report(error + "; retrying in " + seconds_text(delay));
}

void IsolatedOutput::helper_ended(int wait_status, Clock::time_point now) noexcept {
  ControlBlock& control = channel_.control();
  const pid_t pid = pid_;
  pid_ = -1;
  const HelperState state = state_of(control);
  const bool clean = wait_status >= 0 && WIFEXITED(wait_status) &&
                     WEXITSTATUS(wait_status) == kHelperExitClosed && state == HelperState::closed;
  // Taken from the channel but neither delivered nor dropped: lost with it.
  const std::uint64_t read = control.events_read.load(std::memory_order_acquire);
  const std::uint64_t resolved = control.delivered.load(std::memory_order_acquire) +
                                 control.dropped_sink_disabled.load(std::memory_order_acquire) +
                                 lost_in_helper_.load(std::memory_order_relaxed);
  std::uint64_t in_flight = read > resolved ? read - resolved : 0;
  if (closing_ && close_kill_) {
    // Killed at the close deadline: what it held is discarded, as a queue
    // is at the deadline in this process.
    discarded_at_deadline_.fetch_add(in_flight, std::memory_order_relaxed);
    in_flight = 0;
  }
  lost_in_helper_.fetch_add(in_flight, std::memory_order_relaxed);

  std::string how;
  try {
    how = !kill_reason_.empty() ? kill_reason_ + "; killed"
          : wait_status < 0     ? std::string("ended (its exit status was reaped elsewhere)")
                                : describe_wait_status(wait_status);
    if (wait_status >= 0 && WIFEXITED(wait_status) && WEXITSTATUS(wait_status) != 0) {
      const std::string message = message_of(control);
      if (!message.empty()) how += " (" + message + ")";
    }
  } catch (...) {
    // No memory for the detail: the line below still says the helper ended.
  }
  const std::string who = "sink helper (pid " + std::to_string(pid) + ") ";

  if (!first_outcome_) {
    first_outcome_ = true;
    if (state == HelperState::create_failed) {
      first_error_ = message_of(control);
    } else {
      first_error_ = "the " + who + how + " before create_sink returned";
    }
    if (first_error_.empty()) first_error_ = "create_sink failed in the sink helper";
    stop_ = true;
    cv_.notify_all();
    return;
  }
  if (closing_) {
    helper_exited_ = true;
    if (clean) {
    } else if (state == HelperState::closed) {
      close_problem_ = message_of(control);  // the plugin's close failed
    } else if (close_kill_) {
      close_problem_ = "the " + who + how + " during close";
    } else {
      // Died while draining: its losses are counted like any other crash.
      report(who + how + " while draining at close; " + events_text(in_flight) +
             " lost in the helper");
    }
    cv_.notify_all();
    return;
  }
  // Unexpected: restart after the backoff.
  if (now - started_at_ >= options_.healthy_after) backoff_.reset();
  const std::chrono::milliseconds delay = backoff_.next();
  restart_at_ = now + delay;
  report(who + how + "; " + events_text(in_flight) + " lost in the helper; restarting in " +
         seconds_text(delay));
  control.state.store(static_cast<std::uint32_t>(HelperState::starting), std::memory_order_release);
}

void IsolatedOutput::watch_progress(Clock::time_point now) noexcept {
  const ControlBlock& control = channel_.control();
  const HelperState state = state_of(control);
  // Ready (or already disabled): the sink exists. A failed create_sink is
  // the helper's exit, which helper_ended reports with its message; taken
  // here, before the exit is reaped, it would read as success.
  if (!first_outcome_ && (state == HelperState::ready || state == HelperState::disabled)) {
    first_outcome_ = true;
    cv_.notify_all();
  }
  if (!kill_reason_.empty()) return;  // already killed, not reaped yet
  const std::uint64_t heartbeat = control.heartbeat.load(std::memory_order_acquire);
  const std::uint64_t written = control.events_written.load(std::memory_order_acquire);
  const std::uint64_t read = control.events_read.load(std::memory_order_acquire);
  const std::uint64_t resolved = control.delivered.load(std::memory_order_acquire) +
                                 control.dropped_sink_disabled.load(std::memory_order_acquire) +
                                 lost_in_helper_.load(std::memory_order_relaxed);
  const bool waiting = state == HelperState::starting || written > read || read > resolved ||
                       control.close_requested.load(std::memory_order_relaxed) != 0;
  if (heartbeat != last_heartbeat_ || !waiting) {
    last_heartbeat_ = heartbeat;
    last_progress_ = now;
    return;
  }
  if (closing_) return;  // close has its own deadline
  // Until the helper has beaten once it is still starting as a process.
  const bool launching = state == HelperState::starting && heartbeat == spawn_heartbeat_;
  const std::chrono::milliseconds allowed =
      launching ? std::max(options_.start_allowance, options_.settings.deadlock_timeout)
                : options_.settings.deadlock_timeout;
  if (now - last_progress_ < allowed) return;
  try {
    if (launching) {
      kill_reason_ = "did not start within " + seconds_text(allowed);
    } else {
      kill_reason_ =
          (state == HelperState::starting ? "did not finish create_sink within "
                                          : "made no progress while events waited for ") +
          seconds_text(allowed) + " (deadlock timeout)";
    }
  } catch (...) {
    // No memory for the reason: the helper is killed and its end reported all the same.
  }
  ::kill(pid_, SIGKILL);
}

void IsolatedOutput::supervise() noexcept {
  MutexLock lock(mutex_);
  start_helper();
  while (true) {
    if (pid_ > 0) {
      int status = 0;
      const pid_t result = ::waitpid(pid_, &status, WNOHANG);
      const Clock::time_point now = Clock::now();
      if (result == pid_) {
        helper_reaped(pid_);
        helper_ended(status, now);
      } else if (result < 0 && errno == ECHILD) {
        helper_reaped(pid_);
        helper_ended(-1, now);  // SIGCHLD ignored by the embedding process
      } else {
        watch_progress(now);
      }
    } else if (!stop_ && (final_drain_ || (!closing_ && Clock::now() >= restart_at_))) {
      final_drain_ = false;
      helper_restarts_.fetch_add(1, std::memory_order_relaxed);
      start_helper();
      cv_.notify_all();
      continue;
    }
    if (stop_ && pid_ <= 0) break;
    const std::uint64_t ring_full = dropped_ring_full_.load(std::memory_order_relaxed);
    if (ring_full > dropped_ring_full_reported_) {
      try {
        log_.report("events dropped (the sink helper's ring was full)",
                    ring_full - dropped_ring_full_reported_, Clock::now());
      } catch (...) {
        // No memory for the line: the drops are counted (dropped_ring_full).
      }
      dropped_ring_full_reported_ = ring_full;
    }
    cv_.wait_for(mutex_, options_.supervise_interval);
  }
}

}  // namespace tokenspeed::metrics::isolation
