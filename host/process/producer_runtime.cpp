// producer_runtime.cpp — a producer's startup in the order the spec gives (plugins
// again, then this process's metrics) and its close (figures stopped, sinks
// drained within the budget, summary left in the run directory).
#include "process/producer_runtime.hpp"

#include <algorithm>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <system_error>
#include <utility>

#include "core/startup_error.hpp"

namespace tokenspeed::metrics {
namespace {

// The name becomes part of a file name in the run directory.
std::string plain_process_name(std::string name) {
  for (char& c : name) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '.';
    if (!plain) c = '_';
  }
  return name;
}

}  // namespace

ProducerRuntime::ProducerRuntime(ProducerOptions options)
    : options_(std::move(options)), name_(plain_process_name(options_.name)) {
  const ProducerHandoff& handoff = options_.handoff;
  if (options_.standalone && !handoff.run_dir.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(handoff.run_dir, ec)) {
      throw StartupError({"", handoff.run_dir, ""},
                         "the shared metrics directory does not exist or is not a directory");
    }
  }
  if (options_.standalone && !handoff.run_dir.empty()) warn_of_earlier_files(handoff.run_dir);
  // Register the plugins again in this process; never validate or start_node.
  if (!handoff.outputs.empty()) {
    PluginSearchOptions search;
    search.plugin_dirs = handoff.plugin_dirs;
    search.disabled_plugins = handoff.disabled_plugins;
    search.allow_insecure = handoff.allow_insecure_plugins;
    search.warn_unmatched_disabled = false;  // the launcher already said so, once per node
    loader_ =
        std::make_unique<PluginLoader>(registry_, [this](const std::string& line) { warn(line); });
    loader_->load(search);
  }
  RouterOptions router;
  router.queue_size = handoff.queue_size;
  pipeline_ = std::make_unique<ProcessPipeline>(
      registry_, ProcessPipelineOptions{handoff.outputs, handoff.run_dir, name_, router,
                                        handoff.max_series_per_family, handoff.node_name,
                                        /*keep_in_memory_without_file=*/true, handoff.views});
  // The host's own figures reach /metrics once a second; the thread sleeps in
  // between and never touches a plugin.
  figures_ = std::thread([this] {
    MutexLock lock(mutex_);
    while (!stop_figures_) {
      wake_.wait_for(mutex_, std::chrono::seconds(1));
      pipeline_->publish_self_figures();
    }
  });
}

ProducerRuntime::~ProducerRuntime() { static_cast<void>(close()); }

void ProducerRuntime::warn(const std::string& line) const {
  if (options_.warn) {
    options_.warn(line);
  } else {
    std::fprintf(stderr, "tokenspeed-metrics: warning: %s\n", line.c_str());
  }
}

void ProducerRuntime::warn_of_earlier_files(const std::string& dir) const {
  const auto earlier = earlier_runs_files(dir);
  if (earlier.empty()) return;
  std::string names;
  for (std::size_t i = 0; i < earlier.size() && i < 4; ++i) {
    names += (i == 0 ? "" : ", ") + earlier[i].filename().string();
  }
  if (earlier.size() > 4) names += ", and " + std::to_string(earlier.size() - 4) + " more";
  warn("the shared metrics directory '" + dir + "' holds " + std::to_string(earlier.size()) +
       " metric files of processes that started before this one and are gone (" + names +
       "): /metrics sums their counters and histograms with this run's, as prometheus_client "
       "does; empty the directory when the engine starts if they are an earlier run's");
}

void ProducerRuntime::stop_figures() noexcept {
  {
    MutexLock lock(mutex_);
    stop_figures_ = true;
  }
  wake_.notify_all();
  if (figures_.joinable()) figures_.join();
}

ProducerShutdownReport ProducerRuntime::close(std::chrono::nanoseconds budget) noexcept {
  if (report_) return *report_;
  const auto begin = std::chrono::steady_clock::now();
  stop_figures();
  ProducerShutdownReport report;
  // The summary, the metric file's close and the process's exit come out of
  // the budget too (the launcher kills a producer past it), and a busy
  // machine makes them slow: the sinks get four fifths of it, the rest at
  // most 1 s.
  const auto reserve = std::min<std::chrono::nanoseconds>(budget / 5, std::chrono::seconds(1));
  report.closed_in_time = pipeline_->close(budget - reserve);
  report.unstored = pipeline_->unstored();
  report.summary = ProcessSummary{name_, ::getpid(), pipeline_->sink_figures(), report.unstored};
  // A shared directory is the engine's: no launcher reads summaries there.
  const std::string& run_dir = options_.handoff.run_dir;
  if (!run_dir.empty() && !options_.standalone) write_process_summary(run_dir, report.summary);
  report.elapsed = std::chrono::steady_clock::now() - begin;
  report_ = report;
  return *report_;
}

}  // namespace tokenspeed::metrics
