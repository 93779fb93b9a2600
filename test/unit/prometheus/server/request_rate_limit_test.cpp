// request_rate_limit_test.cpp — unit tests of host/prometheus/request_rate_limit:
// the token bucket of rate_limit (burst at once, then one per interval), and
// the unauthenticated bucket running dry without touching the authenticated one.
#include <catch2/catch.hpp>

#include <chrono>

#include "prometheus/server/request_rate_limit.hpp"

using namespace tokenspeed::metrics;
using namespace std::chrono_literals;
using Bucket = RequestRateLimit::Bucket;

namespace {

RateLimitConfig limit_of(std::chrono::nanoseconds interval, std::int64_t burst) {
  RateLimitConfig limit;
  limit.interval = interval;
  limit.burst = burst;
  return limit;
}

}  // namespace

TEST_CASE("a bucket admits burst requests at once, then one per interval") {
  RequestRateLimit rate;
  const auto limit = limit_of(1s, 3);
  const auto t0 = RequestRateLimit::Clock::now();
  for (int i = 0; i < 3; ++i) CHECK(rate.admit(limit, Bucket::authenticated, t0));
  CHECK_FALSE(rate.admit(limit, Bucket::authenticated, t0));
  CHECK_FALSE(rate.admit(limit, Bucket::authenticated, t0 + 500ms));
  CHECK(rate.admit(limit, Bucket::authenticated, t0 + 1s));
  CHECK_FALSE(rate.admit(limit, Bucket::authenticated, t0 + 1s));
  // Saved up to burst, never beyond.
  for (int i = 0; i < 3; ++i) CHECK(rate.admit(limit, Bucket::authenticated, t0 + 100s));
  CHECK_FALSE(rate.admit(limit, Bucket::authenticated, t0 + 100s));
}

TEST_CASE("requests without valid credentials drain their own bucket, not the authenticated one") {
  RequestRateLimit rate;
  const auto limit = limit_of(1h, 2);
  const auto t0 = RequestRateLimit::Clock::now();
  int refused = 0;
  for (int i = 0; i < 100; ++i) refused += rate.admit(limit, Bucket::unauthenticated, t0) ? 0 : 1;
  CHECK(refused == 98);
  CHECK(rate.admit(limit, Bucket::authenticated, t0));
  CHECK(rate.admit(limit, Bucket::authenticated, t0));
  CHECK_FALSE(rate.admit(limit, Bucket::authenticated, t0));
}

TEST_CASE("an interval of zero is no rate limit") {
  RequestRateLimit rate;
  const auto t0 = RequestRateLimit::Clock::now();
  for (int i = 0; i < 1000; ++i) CHECK(rate.admit(limit_of(0s, 0), Bucket::unauthenticated, t0));
}

TEST_CASE("a burst of zero refuses every request, as Go's limiter does") {
  RequestRateLimit rate;
  const auto t0 = RequestRateLimit::Clock::now();
  CHECK_FALSE(rate.admit(limit_of(1s, 0), Bucket::authenticated, t0));
  CHECK_FALSE(rate.admit(limit_of(1s, 0), Bucket::authenticated, t0 + 10s));
}
