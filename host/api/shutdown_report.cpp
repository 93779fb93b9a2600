// shutdown_report.cpp — one OutputReport per process and output.
#include "api/shutdown_report.hpp"

namespace tokenspeed::metrics {

ShutdownReport shutdown_report_from(const std::vector<ProcessSummary>& summaries) {
  ShutdownReport report;
  for (const ProcessSummary& summary : summaries) {
    for (const SinkFigures& sink : summary.outputs) {
      OutputReport output;
      output.process = summary.process;
      output.pid = summary.pid;
      output.output = sink.name;
      output.accepted = sink.accepted;
      output.delivered = sink.delivered;
      // OutputReport is the installed API (and the Python module's keys):
      // it keeps its published names for dropped_ring_full,
      // dropped_sink_disabled and discarded_at_deadline.
      output.dropped_queue_full = sink.dropped_ring_full;
      output.dropped_disabled = sink.dropped_sink_disabled;
      output.dropped_after_close = sink.dropped_after_close;
      output.discarded_at_close = sink.discarded_at_deadline;
      output.lost_in_helper = sink.lost_in_helper;
      output.failed = output_failed(sink);
      output.plugin_reported = sink.plugin.reported;
      output.plugin_sent = sink.plugin.sent;
      output.plugin_refused = sink.plugin.refused;
      output.plugin_lost = sink.plugin.lost;
      output.plugin_retries = sink.plugin.retries;
      output.plugin_pending = sink.plugin.pending;
      report.outputs.push_back(std::move(output));
    }
  }
  report.table = format_summary_table(summaries);
  return report;
}

}  // namespace tokenspeed::metrics
