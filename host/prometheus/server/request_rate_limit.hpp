// request_rate_limit.hpp — the web configuration's rate_limit as two token
// buckets: one for requests that authenticated (or every request when no
// users are configured), one for requests without valid credentials, so that
// clients without credentials never use up the authorized scraper's share.
// Never blocks: a request over its bucket is refused, not delayed.
#pragma once

#include <chrono>

#include "core/thread_safety.hpp"
#include "prometheus/server/web_config.hpp"

namespace tokenspeed::metrics {

// Threading: admit from any thread (one mutex around a few arithmetic steps).
class RequestRateLimit {
 public:
  using Clock = std::chrono::steady_clock;

  enum class Bucket {
    // Credentials remembered as verified, or no users configured.
    authenticated,
    // No credentials, wrong ones, or ones still to be checked with bcrypt.
    unauthenticated,
  };

  // True when a request of bucket, arriving at now, is within limit (a token
  // bucket as Go's rate.Limiter: one token per interval, at most burst saved
  // up, full at the first request); always true when limit.interval is zero.
  // The limit in force is passed each time: a reloaded configuration applies
  // to the tokens already saved.
  bool admit(const RateLimitConfig& limit, Bucket bucket, Clock::time_point now);

 private:
  struct TokenBucket {
    double tokens = 0;
    Clock::time_point refilled{};
    bool started = false;
  };
  Mutex mutex_;
  TokenBucket authenticated_ TSM_GUARDED_BY(mutex_);
  TokenBucket unauthenticated_ TSM_GUARDED_BY(mutex_);
};

}  // namespace tokenspeed::metrics
