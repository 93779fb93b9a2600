// refused_events_test.cpp — the kit's report of events an Aggregator refused:
// one line per kind with the count since the last report and the total, and
// nothing when nothing new was refused.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include <tokenspeed/kit/refused_events.hpp>

#include "capturing_host.hpp"

namespace kit = tokenspeed::metrics::kit;

using kit_test::capturing_host;
using kit_test::lines;

TEST_CASE("refused events are reported as the count since the last report, with the total") {
  lines.clear();
  // An interval of zero: every report is written, so each line shows here.
  kit::RateLimitedLog log(capturing_host(), std::chrono::nanoseconds(0));
  kit::RefusedEventsReport refused;
  kit::AggregationFigures stats;

  refused.report(stats, 100, log);
  CHECK(lines.empty());  // nothing refused: no line

  stats.over_series_limit = 5;
  stats.invalid = 2;
  refused.report(stats, 100, log);
  REQUIRE(lines.size() == 2);
  CHECK_THAT(lines[0], Catch::Contains("5 events dropped: their series would exceed "
                                       "max_series=100 (5 in total)"));
  CHECK_THAT(lines[1], Catch::Contains("2 events ignored: NaN, a negative counter delta") &&
                           Catch::Contains("(2 in total)"));

  refused.report(stats, 100, log);
  CHECK(lines.size() == 2);  // no new refusals: no new line

  stats.over_series_limit = 12;
  refused.report(stats, 100, log);
  REQUIRE(lines.size() == 3);
  CHECK_THAT(lines[2], Catch::Contains("7 events dropped") && Catch::Contains("(12 in total)"));
}

TEST_CASE("suppressed refused-event lines are counted by events, and flush says how many") {
  lines.clear();
  kit::RateLimitedLog log(capturing_host(), std::chrono::hours(1));
  kit::RefusedEventsReport refused;
  kit::AggregationFigures stats;
  stats.over_series_limit = 5;
  refused.report(stats, 100, log);  // written at once
  stats.over_series_limit = 105;
  refused.report(stats, 100, log);  // 100 more, suppressed
  stats.over_series_limit = 1293;
  stats.invalid = 3;
  refused.report(stats, 100, log);  // 1188 more, suppressed; 3 invalid, written
  stats.invalid = 10;
  refused.report(stats, 100, log);  // 7 invalid, suppressed
  log.flush(TSM_LOG_WARNING, "at close");
  REQUIRE(lines.size() == 4);
  CHECK_THAT(lines[0], Catch::StartsWith("5 events dropped"));
  CHECK_THAT(lines[1], Catch::StartsWith("3 events ignored"));
  CHECK(lines[2] == "at close: 7 events in 1 more 'invalid events' report since the last line");
  CHECK(lines[3] == "at close: 1288 events in 2 more 'series limit' reports since the last line");
}
