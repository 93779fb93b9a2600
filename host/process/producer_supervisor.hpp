// producer_supervisor.hpp — starts the producer processes of a launcher with
// the handoff descriptor as their only inherited file, asks them to stop,
// kills those that overrun the budget, and reaps them. Launcher only; never
// blocks longer than the deadline it is given.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tokenspeed::metrics {

struct ProducerSpec {
  std::string name;               // for messages: "scheduler-0", "frontend"
  std::vector<std::string> argv;  // argv[0] is the executable to run
};

struct ProducerProcess {
  std::string name;
  pid_t pid = 0;
  bool running = false;
  int exit_status = -1;         // exit code, or 128 + signal
  bool killed = false;          // killed by the supervisor after the deadline
  int term_signal = 0;          // the signal that ended it, 0 when it exited
  bool stop_requested = false;  // the supervisor had sent SIGTERM (stop())
};

// Threading: one launcher thread. SIGCHLD need not be handled: reap() polls.
class ProducerSupervisor {
 public:
  ProducerSupervisor() = default;
  ~ProducerSupervisor();  // kills and reaps what still runs
  ProducerSupervisor(const ProducerSupervisor&) = delete;
  ProducerSupervisor& operator=(const ProducerSupervisor&) = delete;

  // Spawns one producer. handoff_fd becomes its descriptor 3 (named by
  // TOKENSPEED_METRICS_HANDOFF_FD); every other descriptor but 0-2 is closed
  // in the child; signal mask and dispositions are reset. Throws
  // std::system_error when the process cannot be started.
  void spawn(const ProducerSpec& spec, int handoff_fd);

  // Reaps producers that exited; returns those that exited since the last call.
  std::vector<ProducerProcess> reap() noexcept;

  // SIGTERM to every running producer, waits until deadline for them to
  // exit, SIGKILLs the rest and reaps them. Returns the final table.
  const std::vector<ProducerProcess>& stop(std::chrono::steady_clock::time_point deadline) noexcept;

  const std::vector<ProducerProcess>& processes() const noexcept { return processes_; }
  std::size_t running_count() const noexcept;

  // Called once for every producer that ended (reap or stop), on the thread
  // that reaped it. Must not throw.
  void on_exit(std::function<void(const ProducerProcess&)> observer) {
    exit_observer_ = std::move(observer);
  }

 private:
  void record_exit(ProducerProcess& process, int status) noexcept;

  std::vector<ProducerProcess> processes_;
  std::function<void(const ProducerProcess&)> exit_observer_;
};

}  // namespace tokenspeed::metrics
