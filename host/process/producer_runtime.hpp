// producer_runtime.hpp — what one producer process runs, the counterpart of
// LauncherRuntime: from the launcher's handoff it registers the plugins again (never
// validate or start_node), records through this process's metrics, publishes
// the host's own figures once a second, and at close drains its sinks within
// its budget and leaves its summary for the launcher. Standalone, it records
// into a directory an engine shares (or its memory) with no launcher. Used by
// the public Producer and by `tokenspeed-metrics producer`; never on the hot path.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "core/thread_safety.hpp"
#include "plugin/plugin_loader.hpp"
#include "plugin/reporter_registry.hpp"
#include "process/process_pipeline.hpp"
#include "process/process_summary.hpp"
#include "process/producer_handoff.hpp"
#include "prometheus/prometheus_output.hpp"

namespace tokenspeed::metrics {

struct ProducerOptions {
  // This process in reports and in its metric file's name ("scheduler-0");
  // a character other than a letter, a digit, '-' or '.' becomes '_'.
  std::string name;
  // What the launcher handed over (read_handoff_from_environment). Standalone:
  // a default handoff whose run_dir is the directory the engine shares, or ""
  // for this process's memory.
  ProducerHandoff handoff;
  // No launcher: nothing reads a summary, so none is written, and the shared
  // directory must exist.
  bool standalone = false;
  std::function<void(const std::string&)> warn;  // one line each; stderr when empty
};

// What close did, for the process's report.
struct ProducerShutdownReport {
  ProcessSummary summary;      // this process's outputs, as left for the launcher
  bool closed_in_time = true;  // every sink closed within the budget
  UnstoredFigures unstored;    // what the metric file could not keep
  std::chrono::nanoseconds elapsed{0};
};

// Threading: one control thread constructs it and calls close; collector()
// from any number of collector threads. A thread of its own publishes the
// host's figures once a second; it never touches a plugin.
class ProducerRuntime {
 public:
  // Loads the plugins of the handoff (when it selects an output), creates
  // this process's metrics and starts publishing its figures. A metric file
  // that cannot be created leaves the series in memory, counted: recording
  // never raises into the engine for it. Throws StartupError (a standalone
  // directory that is not one) and the loader's errors.
  explicit ProducerRuntime(ProducerOptions options);
  ~ProducerRuntime();  // close() with the handoff's budget when it was not called
  ProducerRuntime(const ProducerRuntime&) = delete;
  ProducerRuntime& operator=(const ProducerRuntime&) = delete;

  const std::string& name() const noexcept { return name_; }
  const ProducerHandoff& handoff() const noexcept { return options_.handoff; }
  bool standalone() const noexcept { return options_.standalone; }
  ProcessPipeline& pipeline() noexcept { return *pipeline_; }
  const ProcessPipeline& pipeline() const noexcept { return *pipeline_; }
  std::chrono::nanoseconds shutdown_budget() const noexcept {
    return options_.handoff.shutdown_budget;
  }

  // Stops the figures, drains and closes the sinks within four fifths of
  // budget (the rest, at most 1 s, left for what follows), and writes this
  // process's summary into the run directory (attached, with one).
  // Repeated calls return the first report.
  ProducerShutdownReport close(std::chrono::nanoseconds budget) noexcept;
  ProducerShutdownReport close() noexcept { return close(shutdown_budget()); }

 private:
  void warn(const std::string& line) const;
  // Standalone in a shared directory: one line naming the files an earlier
  // run may have left there (prometheus_client sums them silently).
  void warn_of_earlier_files(const std::string& dir) const;
  void stop_figures() noexcept;

  ProducerOptions options_;
  std::string name_;
  // Declared before pipeline_: the sinks run plugin code the loader keeps loaded.
  ReporterRegistry registry_;
  std::unique_ptr<PluginLoader> loader_;
  std::unique_ptr<ProcessPipeline> pipeline_;
  std::optional<ProducerShutdownReport> report_;

  Mutex mutex_;
  CondVar wake_;
  bool stop_figures_ TSM_GUARDED_BY(mutex_) = false;
  std::thread figures_;
};

}  // namespace tokenspeed::metrics
