// metric_files_exposition.cpp — render_metric_files: the merged exposition of
// a directory of metric files, for any process of an engine (a child that
// serves /metrics, a process that only exposes what the others record).
// Tested in test/unit/api/standalone_producer_test.cpp.
#include "prometheus/prometheus_output.hpp"
#include "tokenspeed/metrics/producer.hpp"

namespace tokenspeed::metrics {

std::string render_metric_files(const std::string& directory) {
  return render_directory(directory);
}

}  // namespace tokenspeed::metrics
