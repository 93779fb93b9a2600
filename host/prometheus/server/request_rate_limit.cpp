// request_rate_limit.cpp — the two token buckets of the web configuration's
// rate_limit.
#include "prometheus/server/request_rate_limit.hpp"

#include <algorithm>

namespace tokenspeed::metrics {

bool RequestRateLimit::admit(const RateLimitConfig& limit, Bucket bucket, Clock::time_point now) {
  if (limit.interval.count() <= 0) return true;
  MutexLock lock(mutex_);
  TokenBucket& tokens = bucket == Bucket::authenticated ? authenticated_ : unauthenticated_;
  const double burst = static_cast<double>(limit.burst);
  if (!tokens.started) {
    tokens.tokens = burst;
    tokens.started = true;
  } else if (now > tokens.refilled) {
    const double earned = std::chrono::duration<double>(now - tokens.refilled).count() /
                          std::chrono::duration<double>(limit.interval).count();
    tokens.tokens = std::min(burst, tokens.tokens + earned);
  }
  tokens.refilled = std::max(tokens.refilled, now);
  if (tokens.tokens < 1) return false;
  tokens.tokens -= 1;
  return true;
}

}  // namespace tokenspeed::metrics
