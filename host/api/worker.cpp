// worker.cpp — the public Worker: a process an engine started attaches to its
// Node from the environment, registers the plugins again (never validate or
// start_node), records, and at close drains within its budget and leaves its
// report in the run directory. Standalone, it records into a directory the
// engine shares between its processes (or its memory) with no Node at all.
// Tested in test/unit/api/node_test.cpp, test/unit/api/standalone_worker_test.cpp and
// test/embedding/test_example_engine.py.
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "api/shutdown_report.hpp"
#include "plugin/plugin_loader.hpp"
#include "process/process_metrics.hpp"
#include "process/producer_handoff.hpp"
#include "prometheus/prometheus_exposition.hpp"
#include "prometheus/prometheus_merge.hpp"
#include "tokenspeed/metrics/node.hpp"
#include "tokenspeed/metrics/startup_error.hpp"

namespace tokenspeed::metrics {
namespace {

void warn(const std::string& line) {
  std::fprintf(stderr, "tokenspeed-metrics: warning: %s\n", line.c_str());
}

// The name becomes part of a file name in the run directory.
std::string process_name(std::string name) {
  if (name.empty()) return "worker-" + std::to_string(::getpid());
  for (char& c : name) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '.';
    if (!plain) c = '_';
  }
  return name;
}

}  // namespace

class WorkerImpl {
 public:
  explicit WorkerImpl(std::string name) : name_(process_name(std::move(name))) {
    if (metrics_disabled_in_environment()) return;
    handoff_ = read_handoff_from_environment();
    if (!handoff_.outputs.empty()) {
      PluginSearchOptions search;
      search.plugin_dirs = handoff_.plugin_dirs;
      search.disabled_plugins = handoff_.disabled_plugins;
      search.allow_insecure = handoff_.allow_insecure_plugins;
      search.warn_unmatched_disabled = false;  // the launcher already said so
      loader_ = std::make_unique<PluginLoader>(registry_, warn);
      loader_->load(search);
    }
    start_recording();
  }

  // No handoff and no plugins: the series go to the shared directory (or
  // stay in memory), where any process of the engine renders them.
  WorkerImpl(std::string name, const StandaloneRecording& standalone)
      : name_(process_name(std::move(name))) {
    if (!standalone.shared_dir.empty()) {
      std::error_code ec;
      if (!std::filesystem::is_directory(standalone.shared_dir, ec)) {
        throw StartupError({"", standalone.shared_dir, ""},
                           "the shared metrics directory does not exist or is not a directory");
      }
    }
    handoff_.run_dir = standalone.shared_dir;
    standalone_ = true;
    start_recording();
  }

  void start_recording() {
    RouterOptions router;
    router.queue_size = handoff_.queue_size;
    // A worker records on when its metric file cannot be created (a full
    // file system): recording never raises into the engine for it.
    metrics_ = std::make_unique<ProcessMetrics>(
        registry_, ProcessMetricsOptions{handoff_.outputs, handoff_.run_dir, name_, router,
                                         handoff_.max_series_per_family, handoff_.node_name,
                                         /*keep_in_memory_without_file=*/true});
    recorder_ = Recorder(&metrics_->collector());
    // The host's own figures reach /metrics once a second; the thread sleeps
    // in between and never touches a plugin.
    figures_ = std::thread([this] {
      std::unique_lock lock(mutex_);
      while (!stop_figures_) {
        wake_.wait_for(lock, std::chrono::seconds(1));
        metrics_->publish_self_figures();
      }
    });
  }

  std::string render_metrics() const {
    if (!metrics_) return {};
    if (!handoff_.run_dir.empty()) return render_metric_files(handoff_.run_dir);
    ScrapeSources sources;
    sources.local_store = metrics_->memory_store();
    return render_exposition(merge_scrape(sources));
  }

  ~WorkerImpl() {
    stop_figures();
    if (metrics_ && !report_) static_cast<void>(close(handoff_.shutdown_budget));
  }

  void stop_figures() noexcept {
    {
      std::lock_guard lock(mutex_);
      stop_figures_ = true;
    }
    wake_.notify_all();
    if (figures_.joinable()) figures_.join();
  }

  ShutdownReport close(std::chrono::nanoseconds budget) {
    if (report_) return *report_;
    if (!metrics_) {
      report_ = ShutdownReport{};
      return *report_;
    }
    const auto begin = std::chrono::steady_clock::now();
    stop_figures();
    const bool in_time = metrics_->close(budget);
    const ProcessSummary summary{name_, ::getpid(), metrics_->sink_stats()};
    // A shared directory is the engine's: no Node reads summaries there.
    if (!handoff_.run_dir.empty() && !standalone_) write_process_summary(handoff_.run_dir, summary);
    report_ = shutdown_report_from({summary});
    report_->closed_in_time = in_time;
    const UnstoredFigures unstored = metrics_->unstored();
    report_->unstored_series = unstored.series;
    report_->unstored_events = unstored.events;
    report_->elapsed = std::chrono::steady_clock::now() - begin;
    return *report_;
  }

  std::string name_;
  ProducerHandoff handoff_;
  bool standalone_ = false;
  ReporterRegistry registry_;
  std::unique_ptr<PluginLoader> loader_;
  std::unique_ptr<ProcessMetrics> metrics_;  // null with metrics disabled
  Collector disabled_{nullptr};
  Recorder recorder_{&disabled_};
  std::optional<ShutdownReport> report_;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_figures_ = false;
  std::thread figures_;
};

Worker::Worker(std::string name) : impl_(std::make_unique<WorkerImpl>(std::move(name))) {}

Worker::Worker(std::string name, const StandaloneRecording& standalone)
    : impl_(std::make_unique<WorkerImpl>(std::move(name), standalone)) {}

Worker::~Worker() = default;

Recorder& Worker::recorder() noexcept { return impl_->recorder_; }

bool Worker::enabled() const noexcept { return impl_->metrics_ != nullptr; }

std::string Worker::render_metrics() const { return impl_->render_metrics(); }

ShutdownReport Worker::close(std::chrono::nanoseconds budget) { return impl_->close(budget); }

ShutdownReport Worker::close() { return impl_->close(impl_->handoff_.shutdown_budget); }

}  // namespace tokenspeed::metrics
