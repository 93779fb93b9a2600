// shutdown_report.cpp — one OutputReport per process and output.
#include "api/shutdown_report.hpp"

namespace tokenspeed::metrics {

ShutdownReport shutdown_report_from(const std::vector<ProcessSummary>& summaries) {
  ShutdownReport report;
  for (const ProcessSummary& summary : summaries) {
    for (const SinkFigures& stats : summary.outputs) {
      OutputReport output;
      output.process = summary.process;
      output.pid = summary.pid;
      output.output = stats.name;
      output.accepted = stats.accepted;
      output.delivered = stats.delivered;
      // OutputReport is the installed API (and the Python module's keys):
      // it keeps its published names for dropped_ring_full,
      // dropped_sink_disabled and discarded_at_deadline.
      output.dropped_queue_full = stats.dropped_ring_full;
      output.dropped_disabled = stats.dropped_sink_disabled;
      output.dropped_after_close = stats.dropped_after_close;
      output.discarded_at_close = stats.discarded_at_deadline;
      output.lost_in_helper = stats.lost_in_helper;
      output.failed = output_failed(stats);
      output.plugin_reported = stats.plugin.reported;
      output.plugin_sent = stats.plugin.sent;
      output.plugin_refused = stats.plugin.refused;
      output.plugin_lost = stats.plugin.lost;
      output.plugin_retries = stats.plugin.retries;
      output.plugin_pending = stats.plugin.pending;
      report.outputs.push_back(std::move(output));
    }
  }
  report.table = format_summary_table(summaries);
  return report;
}

}  // namespace tokenspeed::metrics
