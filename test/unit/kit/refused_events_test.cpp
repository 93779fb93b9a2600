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
  kit::AggregationStats stats;

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
