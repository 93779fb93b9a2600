// metric_files_exposition.cpp — render_metric_files: the merged exposition of
// a directory of metric files, for any process of an engine (a child that
// serves /metrics, a process that only exposes what the others record).
// Tested in test/unit/api/standalone_producer_test.cpp.
#include <filesystem>

#include "prometheus/prometheus_exposition.hpp"
#include "prometheus/prometheus_merge.hpp"
#include "tokenspeed/metrics/producer.hpp"

namespace tokenspeed::metrics {

std::string render_metric_files(const std::string& directory) {
  std::error_code ec;
  if (directory.empty() || !std::filesystem::is_directory(directory, ec)) return {};
  ScrapeSources sources;
  sources.run_dir = directory;
  return render_exposition(merge_scrape(sources));
}

}  // namespace tokenspeed::metrics
