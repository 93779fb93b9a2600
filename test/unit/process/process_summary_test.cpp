#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>

#include "process/process_summary.hpp"

using namespace tokenspeed::metrics;

TEST_CASE("each process's summary of its outputs reaches the launcher's table") {
  char pattern[] = "/tmp/tsm-summary-XXXXXX";
  const std::filesystem::path dir = ::mkdtemp(pattern);
  SinkStats jsonl;
  jsonl.name = "jsonl";
  jsonl.accepted = 100;
  jsonl.delivered = 90;
  jsonl.dropped_full = 6;
  jsonl.dropped_after_close = 1;
  jsonl.discarded_at_deadline = 3;
  SinkStats failing;
  failing.name = "otlp";
  failing.accepted = 5;
  failing.dropped_disabled = 5;
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
  CHECK_THAT(table, Catch::Matches("(.|\n)*scheduler-0 +41 +jsonl +100 +90 +7 +3 +no(.|\n)*"));
  CHECK_THAT(table, Catch::Matches("(.|\n)*scheduler-0 +41 +otlp +5 +0 +5 +0 +yes(.|\n)*"));
  std::filesystem::remove_all(dir);
}
