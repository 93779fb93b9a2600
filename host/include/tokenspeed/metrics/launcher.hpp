// launcher.hpp — the launcher of a node (or the only process of a
// single-process engine): it validates the whole configuration, runs
// start_node, serves /metrics and hands its producers what they need.
// Startup and shutdown only; recording goes through the handles of
// recording.hpp, created from the Recorder.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenspeed/metrics/options.hpp"
#include "tokenspeed/metrics/recorder.hpp"
#include "tokenspeed/metrics/shutdown_report.hpp"

namespace tokenspeed::metrics {

class LauncherImpl;

// Threading: one control thread calls everything but recorder(), which any
// thread may use.
class Launcher {
 public:
  // Validates everything (StartupError with reporter, file and key), loads
  // the plugins (once for this process), runs start_node, creates this
  // process's outputs, serves /metrics when prometheus is selected, and
  // writes the handoff for producers. With metrics disabled nothing is loaded
  // and every handle does nothing.
  explicit Launcher(const Options& options);
  ~Launcher();  // close() with the configured shutdown timeout, unless called
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  Recorder& recorder() noexcept;
  bool enabled() const noexcept;
  // "http://127.0.0.1:8000/metrics", or "" when no endpoint runs.
  std::string metrics_url() const;
  // The merged exposition of the node, as a scrape returns it.
  std::string render_metrics() const;

  // For producers the engine starts itself: the variables to put into their
  // environment (a file of the private run directory, never argv).
  std::vector<std::pair<std::string, std::string>> producer_environment() const;
  // Puts them into this process's environment, so that every process it
  // starts from now on inherits them (multiprocessing, posix_spawn, fork).
  void export_producer_environment() const;
  // Or let the Launcher start a producer: argv[0] is the executable; its only
  // inherited descriptor besides 0-2 carries the handoff. Returns its pid;
  // close() stops it (SIGTERM, then SIGKILL at the deadline).
  pid_t spawn_producer(const std::string& name, const std::vector<std::string>& argv);

  // Stops the producers it spawned, closes this process's sinks and then the
  // node sessions, all within budget; stops the endpoint and removes the run
  // directory. Producers the engine started should close before this: their
  // reports are in the result when they did. Repeated calls return the
  // first report.
  ShutdownReport close(std::chrono::nanoseconds budget);
  ShutdownReport close();  // with the configured --metrics-shutdown-timeout

  // The names of the releases before the roles were called launcher and producer.
  [[deprecated("use producer_environment")]] std::vector<std::pair<std::string, std::string>>
  worker_environment() const {
    return producer_environment();
  }
  [[deprecated("use export_producer_environment")]] void export_worker_environment() const {
    export_producer_environment();
  }
  [[deprecated("use spawn_producer")]] pid_t spawn_worker(const std::string& name,
                                                          const std::vector<std::string>& argv) {
    return spawn_producer(name, argv);
  }

 private:
  std::unique_ptr<LauncherImpl> impl_;
};

}  // namespace tokenspeed::metrics
