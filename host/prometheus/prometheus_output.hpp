// prometheus_output.hpp — the built-in Prometheus output as the folders above
// this one use it, and the only header of this folder they include:
// - the launcher's node: the run directory, its files kept mapped between
//   scrapes, the /metrics endpoint when the output is selected (PrometheusNode);
// - rendering for any process: a directory of metric files, or one process's
//   series kept in its memory;
// - what `check` does of it, and the delivery totals a run reads back;
// - a process's metric file and the host's own families written into it:
//   MultiprocessMetricStore and the reporter self-metrics, whose headers come
//   with this one, since the per-process pipeline writes into them.
// Startup, scrape and shutdown only: never on the hot path.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/metrics_flags.hpp"
#include "core/in_process_metric_store.hpp"
#include "prometheus/store/multiprocess_metric_store.hpp"
#include "prometheus/scrape/reporter_self_metrics.hpp"

namespace tokenspeed::metrics {

class MultiprocessRunDir;
class ProducerFileMappings;
class PrometheusEndpoint;
struct MergedFamily;

// The built-in output of one node, in its launcher. Threading: one control
// thread constructs, serves, stops and removes; scrapes run on the endpoint's
// render threads and on any thread calling render().
class PrometheusNode {
 public:
  // Creates the run directory under the settings' base directory
  // (--metrics-multiproc-dir), mode 0700; StartupError when it cannot.
  // before_scrape runs first at every scrape (the launcher writes its own
  // figures into its file then).
  PrometheusNode(const MetricsSettings& settings, std::function<void()> before_scrape);
  ~PrometheusNode();  // stops the endpoint; the directory stays until remove()
  PrometheusNode(const PrometheusNode&) = delete;
  PrometheusNode& operator=(const PrometheusNode&) = delete;

  const std::filesystem::path& run_dir() const noexcept;
  // Serves /metrics over the run directory on the settings' address, with
  // their web configuration; StartupError when it cannot bind.
  void serve(const MetricsSettings& settings);
  // "http://host:port/metrics" ("https://" with TLS); "" when not serving.
  std::string url() const;
  // The merged exposition, as a text scrape returns it.
  std::string render() const;
  // Stops the endpoint (its connections get up to timeout). Idempotent.
  void stop(std::chrono::milliseconds timeout) noexcept;
  // Removes the run directory and its files. Idempotent.
  void remove() noexcept;

 private:
  std::vector<MergedFamily> scrape() const;

  std::unique_ptr<MultiprocessRunDir> run_dir_;
  // Declared before endpoint_, so they outlive every scrape.
  std::unique_ptr<ProducerFileMappings> file_mappings_;
  std::function<void()> before_scrape_;
  std::unique_ptr<PrometheusEndpoint> endpoint_;
  // endpoint_ for its own scrapes, which may begin before endpoint_ is set.
  std::atomic<const PrometheusEndpoint*> scraped_endpoint_{nullptr};
};

// The merged exposition of a directory of metric files, from any process;
// "" when it is not a directory.
std::string render_directory(const std::filesystem::path& directory);
// The exposition of one process's series kept in its memory.
std::string render_store(const InProcessMetricStore& store);

// What startup does for the built-in output, undone at once: the base
// directory's checks, and binding the endpoint's address (a port in use fails
// as it would at startup). Creates no directory and serves nothing. Returns
// what the web configuration, if any, protects the endpoint with.
std::string check_prometheus(const MetricsSettings& settings);

// The metric files of dir left by processes that started before this one
// and are gone: an earlier run's, when a shared directory is reused.
std::vector<std::filesystem::path> earlier_runs_files(const std::filesystem::path& dir);

}  // namespace tokenspeed::metrics
