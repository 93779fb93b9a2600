// producer.cpp — the public Producer over the host's ProducerRuntime: a process an engine
// started attaches to its Launcher from the environment (the handoff, the plugins
// again, never validate or start_node), records, and at close drains within
// its budget and leaves its report in the run directory. Standalone, it
// records into a directory the engine shares between its processes (or its
// memory) with no Launcher at all.
// Tested in test/unit/api/launcher_test.cpp and test/unit/api/standalone_producer_test.cpp
// (and by the embedding example's test, which runs an engine built on it).
#include <unistd.h>

#include <memory>
#include <optional>

#include "api/shutdown_report.hpp"
#include "config/metric_views.hpp"
#include "process/producer_runtime.hpp"
#include "process/producer_handoff.hpp"
#include "prometheus/prometheus_output.hpp"
#include "tokenspeed/metrics/options.hpp"
#include "tokenspeed/metrics/producer.hpp"

namespace tokenspeed::metrics {
namespace {

std::string producer_name(std::string name) {
  return name.empty() ? "producer-" + std::to_string(::getpid()) : name;
}

}  // namespace

class ProducerImpl {
 public:
  // With the launcher's metrics disabled there is no producer: the handles
  // do nothing.
  explicit ProducerImpl(std::string name) {
    if (metrics_disabled_in_environment()) return;
    ProducerOptions options;
    options.name = producer_name(std::move(name));
    options.handoff = read_handoff_from_environment();
    start(std::move(options));
  }

  // No handoff and no plugins: the series go to the shared directory (or
  // stay in memory), where any process of the engine renders them.
  ProducerImpl(std::string name, const StandaloneRecording& standalone) {
    ProducerOptions options;
    options.name = producer_name(std::move(name));
    options.standalone = true;
    options.handoff.run_dir = standalone.shared_dir;
    // A launcher hands its producers the series bound; without one the
    // engine's environment is its only source (the refusal line names it).
    const Options environment = metrics_options_from_environment();
    if (const auto bound = environment.max_series_per_family) {
      options.handoff.max_series_per_family = *bound;
    }
    // Likewise the views (TOKENSPEED_METRICS_VIEWS): every process of the
    // engine reads the same file.
    if (environment.metric_views) {
      options.handoff.views =
          std::make_shared<const MetricViews>(read_metric_views(*environment.metric_views));
    }
    start(std::move(options));
  }

  void start(ProducerOptions options) {
    producer_ = std::make_unique<ProducerRuntime>(std::move(options));
    recorder_ = Recorder(&producer_->pipeline().collector());
  }

  std::string render_metrics() const {
    if (!producer_) return {};
    const std::string& run_dir = producer_->handoff().run_dir;
    if (!run_dir.empty()) return render_directory(run_dir);
    const InProcessMetricStore* store = producer_->pipeline().memory_store();
    return store ? render_store(*store) : std::string();
  }

  ShutdownReport close(std::chrono::nanoseconds budget) {
    if (report_) return *report_;
    if (!producer_) {
      report_ = ShutdownReport{};
      return *report_;
    }
    const ProducerShutdownReport closed = producer_->close(budget);
    report_ = shutdown_report_from({closed.summary});
    report_->closed_in_time = closed.closed_in_time;
    report_->unstored_series = closed.unstored.series;
    report_->unstored_events = closed.unstored.events;
    report_->elapsed = closed.elapsed;
    return *report_;
  }

  std::chrono::nanoseconds shutdown_budget() const noexcept {
    return producer_ ? producer_->shutdown_budget() : std::chrono::nanoseconds{0};
  }

  std::unique_ptr<ProducerRuntime> producer_;  // null with metrics disabled
  Collector disabled_{nullptr};
  Recorder recorder_{&disabled_};
  std::optional<ShutdownReport> report_;
};

Producer::Producer(std::string name) : impl_(std::make_unique<ProducerImpl>(std::move(name))) {}

Producer::Producer(std::string name, const StandaloneRecording& standalone)
    : impl_(std::make_unique<ProducerImpl>(std::move(name), standalone)) {}

Producer::~Producer() = default;

Recorder& Producer::recorder() noexcept { return impl_->recorder_; }

bool Producer::enabled() const noexcept { return impl_->producer_ != nullptr; }

std::string Producer::render_metrics() const { return impl_->render_metrics(); }

ShutdownReport Producer::close(std::chrono::nanoseconds budget) { return impl_->close(budget); }

ShutdownReport Producer::close() { return impl_->close(impl_->shutdown_budget()); }

}  // namespace tokenspeed::metrics
