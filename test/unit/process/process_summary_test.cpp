#include <catch2/catch.hpp>

#include <unistd.h>

#include <csignal>
#include <cstdio>

#include <filesystem>
#include <vector>

#include "process/process_summary.hpp"

using namespace tokenspeed::metrics;

TEST_CASE("each process's summary of its outputs reaches the launcher's table") {
  char pattern[] = "/tmp/tsm-summary-XXXXXX";
  const std::filesystem::path dir = ::mkdtemp(pattern);
  SinkFigures jsonl;
  jsonl.name = "jsonl";
  jsonl.accepted = 100;
  jsonl.delivered = 90;
  jsonl.dropped_ring_full = 6;
  jsonl.dropped_after_close = 1;
  jsonl.discarded_at_deadline = 3;
  SinkFigures failing;
  failing.name = "otlp";
  failing.accepted = 5;
  failing.dropped_sink_disabled = 5;
  failing.disabled = true;
  REQUIRE(write_process_summary(dir, {"scheduler-0", 41, {jsonl, failing}}));
  REQUIRE(write_process_summary(dir, {"frontend", 42, {jsonl}}));

  const auto summaries = read_process_summaries(dir);
  REQUIRE(summaries.size() == 2);
  CHECK(summaries[0].process == "frontend");
  CHECK(summaries[1].process == "scheduler-0");
  CHECK(summaries[1].pid == 41);
  REQUIRE(summaries[1].outputs.size() == 2);
  CHECK(summaries[1].outputs[0].delivered == 90);
  CHECK(summaries[1].outputs[0].discarded_at_deadline == 3);
  CHECK(summaries[1].outputs[1].disabled);

  const std::string table = format_summary_table(summaries);
  CHECK_THAT(table, Catch::Contains("scheduler-0"));
  // dropped = full + disabled + after close
  CHECK_THAT(table, Catch::Matches("(.|\n)*scheduler-0 +41 +jsonl +100 +90 +7 +3 +ok\n(.|\n)*"));
  CHECK_THAT(table, Catch::Matches("(.|\n)*scheduler-0 +41 +otlp +5 +0 +5 +0 +failed: disabled "
                                   "\\(emit failed\\)\n(.|\n)*"));
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "an output that was disabled, failed to be created, stalled or abandoned at close is failed "
    "in the table, and survives the summary file") {
  char pattern[] = "/tmp/tsm-summary-XXXXXX";
  const std::filesystem::path dir = ::mkdtemp(pattern);
  SinkFigures abandoned;
  abandoned.name = "stuck";
  abandoned.abandoned = true;
  SinkFigures stalled;
  stalled.name = "stalled";
  stalled.abandoned = true;
  stalled.abandoned_in = "emit";
  SinkFigures not_created;
  not_created.name = "nocreate";
  not_created.create_failed = true;
  not_created.disabled = true;
  SinkFigures fine;
  fine.name = "jsonl";
  REQUIRE(write_process_summary(dir, {"frontend", 42, {abandoned, not_created, fine, stalled}}));
  const auto summaries = read_process_summaries(dir);
  REQUIRE(summaries.size() == 1);
  REQUIRE(summaries[0].outputs.size() == 4);
  CHECK(summaries[0].outputs[3].abandoned_in == "emit");
  CHECK(summaries[0].outputs[0].abandoned);
  CHECK(output_failed(summaries[0].outputs[0]));
  CHECK(summaries[0].outputs[1].create_failed);
  CHECK_FALSE(output_failed(summaries[0].outputs[2]));
  const std::string table = format_summary_table(summaries);
  CHECK_THAT(table, Catch::Matches("(.|\n)*frontend +42 +stuck .* failed: stalled, abandoned at "
                                   "close(.|\n)*"));
  CHECK_THAT(table, Catch::Matches("(.|\n)*frontend +42 +stalled .* failed: stalled in emit, "
                                   "abandoned at close\n(.|\n)*"));
  CHECK_THAT(table, Catch::Matches("(.|\n)*frontend +42 +nocreate .* failed: create_sink "
                                   "failed\n(.|\n)*"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a producer that crashed has a crashed row; the table explains its rows") {
  SinkFigures jsonl;
  jsonl.name = "jsonl";
  const std::vector<ProcessSummary> summaries{{"launcher", 10, {jsonl}}, {"frontend", 12, {jsonl}}};
  ProducerProcess crashed;
  crashed.name = "scheduler-0";
  crashed.pid = 11;
  crashed.term_signal = SIGSEGV;
  crashed.exit_status = 139;
  ProducerProcess frontend;
  frontend.name = "frontend";
  frontend.pid = 12;
  frontend.stop_requested = true;
  frontend.exit_status = 0;
  const std::string table = format_summary_table(summaries, {crashed, frontend});
  CHECK_THAT(table, Catch::Matches("(.|\n)*scheduler-0 +11 +- +- +- +- +- +crashed: killed by "
                                   "SIGSEGV \\(segmentation fault\\)\n(.|\n)*"));
  CHECK_THAT(table, !Catch::Matches("(.|\n)*frontend +12 +-(.|\n)*"));  // it has its summary
  CHECK_THAT(table, Catch::Contains("launcher: the launcher process itself"));
  CHECK_THAT(table, Catch::Contains("scheduler-N: the scheduler producer of data-parallel rank N"));
  CHECK_THAT(table, Catch::Contains("discarded: still queued when the shutdown budget ran out"));
}

TEST_CASE("with Prometheus alone the table says so instead of printing a header with no rows") {
  const std::vector<ProcessSummary> summaries{{"launcher", 10, {}}, {"frontend", 12, {}}};
  const std::string table = format_summary_table(summaries);
  CHECK(table ==
        "outputs: Prometheus only (no external output selected); its totals are on /metrics\n");
  ProducerProcess crashed;
  crashed.name = "scheduler-0";
  crashed.pid = 11;
  crashed.term_signal = SIGABRT;
  CHECK_THAT(format_summary_table(summaries, {crashed}),
             Catch::Contains("producer 'scheduler-0' (pid 11): crashed: killed by SIGABRT"));
}

TEST_CASE("series a process could not store cross the summary file; the table names them") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tsm-unstored-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  REQUIRE(write_process_summary(dir, {"scheduler-0", 11, {}, {3, 40}}));
  REQUIRE(write_process_summary(dir, {"frontend", 12, {}, {2, 7}}));
  REQUIRE(write_process_summary(dir, {"launcher", 10, {}}));
  const std::vector<ProcessSummary> summaries = read_process_summaries(dir);
  std::filesystem::remove_all(dir);
  REQUIRE(summaries.size() == 3);
  CHECK(format_summary_table(summaries) ==
        "outputs: Prometheus only (no external output selected); its totals are on /metrics "
        "except 47 events of 5 series that 2 process(es) could not store (no room for their "
        "metric files): tokenspeed_metrics_prometheus_unstored_events_total counts them\n");
}

TEST_CASE("an isolated output's losses in its helper cross the summary file into dropped") {
  char pattern[] = "/tmp/tsm-summary-XXXXXX";
  const std::filesystem::path dir = ::mkdtemp(pattern);
  SinkFigures vendor;
  vendor.name = "vendor";
  vendor.accepted = 50;
  vendor.delivered = 45;
  vendor.dropped_ring_full = 2;
  vendor.lost_in_helper = 3;
  vendor.helper_restarts = 2;
  vendor.isolated = true;
  REQUIRE(write_process_summary(dir, {"scheduler-0", 41, {vendor}}));
  const auto summaries = read_process_summaries(dir);
  REQUIRE(summaries.size() == 1);
  REQUIRE(summaries[0].outputs.size() == 1);
  CHECK(summaries[0].outputs[0].lost_in_helper == 3);
  CHECK(summaries[0].outputs[0].helper_restarts == 2);
  CHECK(summaries[0].outputs[0].isolated);
  // dropped = full + lost in the helper
  CHECK_THAT(format_summary_table(summaries),
             Catch::Matches("(.|\n)*scheduler-0 +41 +vendor +50 +45 +5 +0 +ok \\(isolated: sink "
                            "helper restarted 2 times, 3 events lost in it\\)\n(.|\n)*"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a summary file with the older keys dropped_full and dropped_disabled is still read") {
  char pattern[] = "/tmp/tsm-summary-XXXXXX";
  const std::filesystem::path dir = ::mkdtemp(pattern);
  {
    std::FILE* file = std::fopen((dir / "summary-7.json").c_str(), "w");
    REQUIRE(file != nullptr);
    std::fputs(R"({"process":"frontend","pid":7,"outputs":[{"name":"jsonl","accepted":9,)"
               R"("delivered":4,"dropped_full":3,"dropped_disabled":2}]})",
               file);
    std::fclose(file);
  }
  const auto summaries = read_process_summaries(dir);
  REQUIRE(summaries.size() == 1);
  REQUIRE(summaries[0].outputs.size() == 1);
  CHECK(summaries[0].outputs[0].dropped_ring_full == 3);
  CHECK(summaries[0].outputs[0].dropped_sink_disabled == 2);
  std::filesystem::remove_all(dir);
}

TEST_CASE("what a plugin reports of its events crosses the summary file into the table") {
  char pattern[] = "/tmp/tsm-summary-XXXXXX";
  const std::filesystem::path dir = ::mkdtemp(pattern);
  SinkFigures reporting;
  reporting.name = "remote_write";
  reporting.accepted = 5000;
  reporting.delivered = 5000;
  reporting.plugin = PluginFigures{true, 3800, 1188, 12, 3, 0};
  SinkFigures quiet;
  quiet.name = "jsonl";
  quiet.accepted = 10;
  quiet.delivered = 10;
  REQUIRE(write_process_summary(dir, {"scheduler-0", 41, {reporting, quiet}}));
  const auto summaries = read_process_summaries(dir);
  REQUIRE(summaries.size() == 1);
  REQUIRE(summaries[0].outputs.size() == 2);
  const PluginFigures& read = summaries[0].outputs[0].plugin;
  CHECK(read.reported);
  CHECK(read.sent == 3800);
  CHECK(read.refused == 1188);
  CHECK(read.lost == 12);
  CHECK(read.retries == 3);
  CHECK_FALSE(summaries[0].outputs[1].plugin.reported);

  const std::string table = format_summary_table(summaries);
  // The host's row says it delivered everything; its status says what the plugin did not send.
  CHECK_THAT(table, Catch::Matches("(.|\n)*scheduler-0 +41 +remote_write +5000 +5000 +0 +0 "
                                   "+degraded \\(plugin: 1188 refused, 12 lost\\)\n(.|\n)*"));
  CHECK_THAT(table, Catch::Contains("  scheduler-0 remote_write: 3800 sent, 1188 refused, 12 lost, "
                                    "3 retries, 0 pending\n"));
  CHECK_THAT(table, Catch::Matches("(.|\n)*scheduler-0 +41 +jsonl +10 +10 +0 +0 +ok\n(.|\n)*"));
  CHECK_THAT(table, !Catch::Contains("scheduler-0 jsonl:"));  // it reports nothing
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "an output whose plugin lost events and sent none is failed, one that sent others degraded, "
    "through the summary file") {
  char pattern[] = "/tmp/tsm-summary-XXXXXX";
  const std::filesystem::path dir = ::mkdtemp(pattern);
  SinkFigures nothing;
  nothing.name = "otlp";
  nothing.accepted = 40;
  nothing.delivered = 40;
  nothing.plugin = PluginFigures{true, 0, 0, 40, 7, 0};
  SinkFigures some;
  some.name = "remote_write";
  some.accepted = 40;
  some.delivered = 40;
  some.plugin = PluginFigures{true, 30, 0, 10, 0, 0};
  SinkFigures refused_only;  // over a limit of the plugin: not a loss
  refused_only.name = "statsd";
  refused_only.accepted = 40;
  refused_only.delivered = 40;
  refused_only.plugin = PluginFigures{true, 0, 40, 0, 0, 0};
  SinkFigures closed_badly;  // already failed: the loss adds no second status
  closed_badly.name = "jsonl";
  closed_badly.close_failed = true;
  closed_badly.plugin = PluginFigures{true, 0, 0, 5, 0, 0};
  REQUIRE(
      write_process_summary(dir, {"scheduler-0", 41, {nothing, some, refused_only, closed_badly}}));
  const auto summaries = read_process_summaries(dir);
  REQUIRE(summaries.size() == 1);
  const std::vector<SinkFigures>& read = summaries[0].outputs;
  REQUIRE(read.size() == 4);
  CHECK(output_failed(read[0]));
  CHECK_FALSE(output_degraded(read[0]));
  CHECK_FALSE(read[0].disabled);  // failed for its figures, not read as disabled
  CHECK(output_status(read[0]) == "failed: nothing delivered (plugin: 0 refused, 40 lost)");
  CHECK_FALSE(output_failed(read[1]));
  CHECK(output_degraded(read[1]));
  CHECK(output_status(read[1]) == "degraded (plugin: 0 refused, 10 lost)");
  CHECK_FALSE(output_failed(read[2]));
  CHECK_FALSE(output_degraded(read[2]));
  CHECK(output_status(read[2]) == "ok (plugin: 40 refused, 0 lost)");
  CHECK(output_failed(read[3]));
  CHECK_FALSE(output_degraded(read[3]));
  CHECK(output_status(read[3]) == "failed: close failed (plugin: 0 refused, 5 lost)");
  CHECK_THAT(format_summary_table(summaries),
             Catch::Contains("  degraded: the plugin lost events but sent others; failed: "
                             "nothing delivered: it lost events and sent none\n"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("no plugin reporting figures: no figures lines") {
  SinkFigures quiet;
  quiet.name = "jsonl";
  quiet.accepted = 1;
  quiet.delivered = 1;
  const std::string table = format_summary_table({{"launcher", 7, {quiet}}});
  CHECK_THAT(table, !Catch::Contains("what the outputs' plugins report"));
}
