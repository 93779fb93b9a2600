/*
 * tokenspeed/kit/refused_events.hpp — tells the operator about the events an
 * Aggregator refused (series beyond max_series, invalid events) since it
 * last said so: call report from the delivery thread before each collect;
 * the lines go through a RateLimitedLog under the topics "series limit" and
 * "invalid events", each report carrying its count of events (so a line after
 * suppressed ones, and flush, say how many events those were about).
 */
#ifndef TOKENSPEED_KIT_REFUSED_EVENTS_HPP
#define TOKENSPEED_KIT_REFUSED_EVENTS_HPP

#include <tokenspeed/kit/aggregation.hpp>
#include <tokenspeed/kit/rate_limited_log.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace tokenspeed::metrics::kit {

/* Threading: one thread (the delivery thread) calls report. */
class RefusedEventsReport {
 public:
  /* invalid_reasons: what makes an event invalid, as the log line says it
   * (an output that refuses more than the Aggregator does says so). */
  explicit RefusedEventsReport(std::string invalid_reasons =
                                   "NaN, a negative counter delta or an operation that does not "
                                   "fit the metric's kind")
      : invalid_reasons_(std::move(invalid_reasons)) {}

  void report(const AggregationFigures& stats, std::size_t max_series, RateLimitedLog& log) {
    if (stats.over_series_limit > reported_over_limit_) {
      log.report(TSM_LOG_WARNING, "series limit",
                 std::to_string(stats.over_series_limit - reported_over_limit_) +
                     " events dropped: their series would exceed max_series=" +
                     std::to_string(max_series) + " (" + std::to_string(stats.over_series_limit) +
                     " in total)",
                 stats.over_series_limit - reported_over_limit_);
      reported_over_limit_ = stats.over_series_limit;
    }
    if (stats.invalid > reported_invalid_) {
      log.report(TSM_LOG_WARNING, "invalid events",
                 std::to_string(stats.invalid - reported_invalid_) + " events ignored: " +
                     invalid_reasons_ + " (" + std::to_string(stats.invalid) + " in total)",
                 stats.invalid - reported_invalid_);
      reported_invalid_ = stats.invalid;
    }
  }

 private:
  std::string invalid_reasons_;
  uint64_t reported_over_limit_ = 0;
  uint64_t reported_invalid_ = 0;
};

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_REFUSED_EVENTS_HPP
