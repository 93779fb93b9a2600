// prometheus_output.cpp — the built-in output's face over its parts: the run
// directory, the files' mappings, the merge, the exposition and the endpoint.
#include "prometheus/prometheus_output.hpp"

#include "prometheus/server/endpoint_figures.hpp"
#include "prometheus/store/multiprocess_run_dir.hpp"
#include "prometheus/store/producer_file_mappings.hpp"
#include "prometheus/server/prometheus_endpoint.hpp"
#include "prometheus/scrape/prometheus_exposition.hpp"
#include "prometheus/scrape/prometheus_merge.hpp"
#include "prometheus/prometheus_options.hpp"

namespace tokenspeed::metrics {

PrometheusNode::PrometheusNode(const MetricsSettings& settings, std::function<void()> before_scrape)
    : run_dir_(std::make_unique<MultiprocessRunDir>(multiproc_base_dir(settings))),
      file_mappings_(std::make_unique<ProducerFileMappings>()),
      before_scrape_(std::move(before_scrape)) {}

PrometheusNode::~PrometheusNode() { stop(std::chrono::milliseconds(500)); }

const std::filesystem::path& PrometheusNode::run_dir() const noexcept { return run_dir_->path(); }

void PrometheusNode::serve(const MetricsSettings& settings) {
  endpoint_ = std::make_unique<PrometheusEndpoint>(endpoint_options(settings),
                                                   FamiliesHandler([this] { return scrape(); }));
  scraped_endpoint_.store(endpoint_.get(), std::memory_order_release);
}

std::string PrometheusNode::url() const { return endpoint_ ? endpoint_->url() : std::string(); }

std::string PrometheusNode::render() const { return render_exposition(scrape()); }

std::vector<MergedFamily> PrometheusNode::scrape() const {
  if (before_scrape_) before_scrape_();
  // Every family comes with its definition from the file of the process
  // that records it: the engine's own metrics and the host's figures alike.
  ScrapeSources sources;
  sources.run_dir = run_dir_->path();
  sources.file_mappings = file_mappings_.get();
  if (const PrometheusEndpoint* endpoint = scraped_endpoint_.load(std::memory_order_acquire)) {
    const EndpointFigures counters = endpoint->figures();
    sources.extra = [counters](PrometheusMerge& merge) {
      add_endpoint_self_figures(merge, counters);
    };
  }
  return merge_scrape(sources);
}

void PrometheusNode::stop(std::chrono::milliseconds timeout) noexcept {
  if (endpoint_) endpoint_->stop(timeout);
}

void PrometheusNode::remove() noexcept { run_dir_->remove(); }

std::string render_directory(const std::filesystem::path& directory) {
  std::error_code ec;
  if (directory.empty() || !std::filesystem::is_directory(directory, ec)) return {};
  ScrapeSources sources;
  sources.run_dir = directory;
  return render_exposition(merge_scrape(sources));
}

std::string render_store(const InProcessMetricStore& store) {
  ScrapeSources sources;
  sources.local_store = &store;
  return render_exposition(merge_scrape(sources));
}

std::string check_prometheus(const MetricsSettings& settings) {
  check_multiprocess_base_dir(multiproc_base_dir(settings));
  PrometheusEndpointOptions probe = endpoint_options(settings);
  probe.threads = 1;
  PrometheusEndpoint endpoint(probe, [] { return std::string(); });
  const std::string security = endpoint.security_summary();
  endpoint.stop(std::chrono::milliseconds(200));
  return security;
}

std::vector<std::filesystem::path> earlier_runs_files(const std::filesystem::path& dir) {
  return files_of_earlier_gone_writers(dir, current_process_instance().start_time);
}

}  // namespace tokenspeed::metrics
