// shutdown_report_test.cpp — the report an engine reads at close has one row
// per process and output, each figure of the host's summaries under its
// published name, the failed flag as the status column says, and the table.
#include <catch2/catch.hpp>

#include <vector>

#include "api/shutdown_report.hpp"
#include "process/process_summary.hpp"

using namespace tokenspeed::metrics;

namespace {

SinkFigures figures(const char* name, std::uint64_t base) {
  SinkFigures stats;
  stats.name = name;
  stats.accepted = base + 1;
  stats.delivered = base + 2;
  stats.dropped_ring_full = base + 3;
  stats.dropped_sink_disabled = base + 4;
  stats.dropped_after_close = base + 5;
  stats.discarded_at_deadline = base + 6;
  stats.lost_in_helper = base + 7;
  stats.created = stats.closed = true;
  stats.plugin = {true, base + 8, base + 9, base + 10, base + 11, base + 12};
  return stats;
}

}  // namespace

TEST_CASE("each process and output is one row, in the summaries' order") {
  const std::vector<ProcessSummary> summaries{
      {"launcher", 100, {figures("jsonl", 0)}},
      {"scheduler-0", 101, {figures("jsonl", 100), figures("otlp", 200)}},
  };
  const ShutdownReport report = shutdown_report_from(summaries);
  REQUIRE(report.outputs.size() == 3);
  CHECK(report.outputs[0].process == "launcher");
  CHECK(report.outputs[0].pid == 100);
  CHECK(report.outputs[1].process == "scheduler-0");
  CHECK(report.outputs[1].output == "jsonl");
  CHECK(report.outputs[2].output == "otlp");
  CHECK(report.outputs[2].pid == 101);
  CHECK(report.table == format_summary_table(summaries));
}

TEST_CASE("each figure is reported under its published name") {
  const ShutdownReport report = shutdown_report_from({{"scheduler-0", 7, {figures("otlp", 0)}}});
  REQUIRE(report.outputs.size() == 1);
  const OutputReport& row = report.outputs[0];
  CHECK(row.accepted == 1);
  CHECK(row.delivered == 2);
  CHECK(row.dropped_queue_full == 3);  // dropped_ring_full
  CHECK(row.dropped_disabled == 4);    // dropped_sink_disabled
  CHECK(row.dropped_after_close == 5);
  CHECK(row.discarded_at_close == 6);  // discarded_at_deadline
  CHECK(row.lost_in_helper == 7);
  CHECK(row.plugin_reported);
  CHECK(row.plugin_sent == 8);
  CHECK(row.plugin_refused == 9);
  CHECK(row.plugin_lost == 10);
  CHECK(row.plugin_retries == 11);
  CHECK(row.plugin_pending == 12);
  CHECK_FALSE(row.failed);
}

TEST_CASE("an output that did not work to the end is reported failed") {
  SinkFigures disabled = figures("otlp", 0);
  disabled.disabled = true;
  SinkFigures abandoned = figures("jsonl", 0);
  abandoned.abandoned = true;
  const ShutdownReport report = shutdown_report_from({{"scheduler-0", 7, {disabled, abandoned}}});
  REQUIRE(report.outputs.size() == 2);
  CHECK(report.outputs[0].failed);
  CHECK(report.outputs[1].failed);
}

TEST_CASE("no summaries make an empty report") { CHECK(shutdown_report_from({}).outputs.empty()); }
