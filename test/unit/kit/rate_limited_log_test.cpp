// rate_limited_log_test.cpp — the kit's log limiter: the first occurrence at
// once, then at most one line per interval per topic with the count since,
// and, for reports about several events, how many events were suppressed.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include <tokenspeed/kit/rate_limited_log.hpp>

#include "capturing_host.hpp"

namespace kit = tokenspeed::metrics::kit;
using Clock = kit::RateLimitedLog::Clock;

using kit_test::capturing_host;
using kit_test::lines;

TEST_CASE("the first report is logged at once, repeats within the interval are counted") {
  lines.clear();
  kit::RateLimitedLog log(capturing_host(), std::chrono::seconds(10));
  const Clock::time_point t0 = Clock::now();
  CHECK(log.report(TSM_LOG_WARNING, "export failed", "failed 1", t0));
  CHECK_FALSE(
      log.report(TSM_LOG_WARNING, "export failed", "failed 2", t0 + std::chrono::seconds(1)));
  CHECK_FALSE(
      log.report(TSM_LOG_WARNING, "export failed", "failed 3", t0 + std::chrono::seconds(9)));
  CHECK(log.report(TSM_LOG_WARNING, "other topic", "other", t0 + std::chrono::seconds(9)));
  CHECK(log.report(TSM_LOG_WARNING, "export failed", "failed 4", t0 + std::chrono::seconds(10)));
  CHECK(lines ==
        std::vector<std::string>{"failed 1", "other", "failed 4 (2 more since the last report)"});
}

TEST_CASE("flush reports what is still suppressed") {
  lines.clear();
  kit::RateLimitedLog log(capturing_host(), std::chrono::seconds(10));
  const Clock::time_point t0 = Clock::now();
  log.report(TSM_LOG_WARNING, "dropped", "dropped 1", t0);
  log.report(TSM_LOG_WARNING, "dropped", "dropped 2", t0);
  log.flush(TSM_LOG_WARNING, "otlp");
  log.flush(TSM_LOG_WARNING, "otlp");
  CHECK(lines ==
        std::vector<std::string>{"dropped 1", "otlp: 1 more 'dropped' since the last report"});
}

TEST_CASE("suppressed reports about events are counted by events too, in the line and at flush") {
  lines.clear();
  kit::RateLimitedLog log(capturing_host(), std::chrono::seconds(10));
  const Clock::time_point t0 = Clock::now();
  CHECK(log.report(TSM_LOG_WARNING, "series limit", "500 events dropped", 500, t0));
  CHECK_FALSE(log.report(TSM_LOG_WARNING, "series limit", "x", 700, t0 + std::chrono::seconds(1)));
  CHECK_FALSE(log.report(TSM_LOG_WARNING, "series limit", "x", 488, t0 + std::chrono::seconds(2)));
  CHECK(log.report(TSM_LOG_WARNING, "series limit", "12 events dropped", 12,
                   t0 + std::chrono::seconds(10)));
  CHECK_FALSE(log.report(TSM_LOG_WARNING, "series limit", "x", 1, t0 + std::chrono::seconds(11)));
  CHECK(log.report(TSM_LOG_WARNING, "dropped", "d", 5, t0));
  CHECK_FALSE(log.report(TSM_LOG_WARNING, "dropped", "x", 3, t0 + std::chrono::seconds(1)));
  CHECK_FALSE(log.report(TSM_LOG_WARNING, "dropped", "x", 0, t0 + std::chrono::seconds(2)));
  log.flush(TSM_LOG_WARNING, "at close");
  CHECK(lines == std::vector<std::string>{
                     "500 events dropped",
                     "12 events dropped (1188 events in 2 more reports since the last line)",
                     "d",
                     "at close: 3 events in 2 more 'dropped' reports since the last line",
                     "at close: 1 more 'series limit' since the last report",
                 });
}

TEST_CASE("a single suppressed report of several events is said in the singular") {
  lines.clear();
  kit::RateLimitedLog log(capturing_host(), std::chrono::seconds(10));
  const Clock::time_point t0 = Clock::now();
  log.report(TSM_LOG_WARNING, "queue full", "dropped 64 data points", 64, t0);
  log.report(TSM_LOG_WARNING, "queue full", "dropped 64 data points", 64, t0);
  log.report(TSM_LOG_WARNING, "invalid events", "1 event ignored", 1, t0);
  log.report(TSM_LOG_WARNING, "invalid events", "2 events ignored", 2, t0);
  log.flush(TSM_LOG_WARNING, "at close");
  CHECK(lines == std::vector<std::string>{
                     "dropped 64 data points",
                     "1 event ignored",
                     "at close: 2 events in 1 more 'invalid events' report since the last line",
                     "at close: 64 events in 1 more 'queue full' report since the last line",
                 });
}
