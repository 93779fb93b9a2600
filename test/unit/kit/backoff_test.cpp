// backoff_test.cpp — the kit's retry schedule: capped exponential backoff
// with jitter, and Retry-After in seconds or as an HTTP date.
#include <catch2/catch.hpp>

#include <chrono>
#include <set>
#include <vector>

#include <tokenspeed/kit/backoff.hpp>

namespace kit = tokenspeed::metrics::kit;
using std::chrono::milliseconds;

TEST_CASE("without jitter the delays double from the initial one and stop at the cap") {
  kit::Backoff backoff({milliseconds(100), milliseconds(1000), 2.0, 0.0});
  std::vector<int64_t> delays;
  for (int i = 0; i < 7; ++i) delays.push_back(backoff.next().count());
  CHECK(delays == std::vector<int64_t>{100, 200, 400, 800, 1000, 1000, 1000});
  backoff.reset();
  CHECK(backoff.next().count() == 100);
}

TEST_CASE("jitter spreads each delay within its band and never beyond the cap") {
  std::set<int64_t> first_delays;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    kit::Backoff backoff({milliseconds(1000), milliseconds(5000), 2.0, 0.2}, seed);
    double base = 1000;
    for (int i = 0; i < 6; ++i) {
      const int64_t delay = backoff.next().count();
      if (i == 0) first_delays.insert(delay);
      CHECK(delay >= static_cast<int64_t>(base * 0.8) - 1);
      CHECK(delay <= static_cast<int64_t>(std::min(base * 1.2, 5000.0)));
      CHECK(delay <= 5000);
      base = std::min(base * 2, 5000.0);
    }
  }
  CHECK(first_delays.size() > 10);  // producers that failed together do not retry together
}

TEST_CASE("Retry-After in delay-seconds") {
  CHECK(kit::parse_retry_after("120") == milliseconds(120000));
  CHECK(kit::parse_retry_after(" 5\r\n") == milliseconds(5000));
  CHECK(kit::parse_retry_after("0") == milliseconds(0));
}

TEST_CASE("Retry-After as an HTTP date, in all three forms, relative to now") {
  // Wed, 21 Oct 2015 07:28:00 GMT is 1445412480.
  const auto now = std::chrono::system_clock::from_time_t(1445412480 - 30);
  CHECK(kit::parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now) == milliseconds(30000));
  CHECK(kit::parse_retry_after("Wednesday, 21-Oct-15 07:28:00 GMT", now) == milliseconds(30000));
  CHECK(kit::parse_retry_after("Wed Oct 21 07:28:00 2015", now) == milliseconds(30000));
  CHECK(kit::parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now) == milliseconds(0));
}

TEST_CASE("a Retry-After that is neither is ignored") {
  CHECK_FALSE(kit::parse_retry_after("soon").has_value());
  CHECK_FALSE(kit::parse_retry_after("").has_value());
  CHECK_FALSE(kit::parse_retry_after("-5").has_value());
  CHECK_FALSE(kit::parse_retry_after("Wed, 21 Oct 2015").has_value());
}
