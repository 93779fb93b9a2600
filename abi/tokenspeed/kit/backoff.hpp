/*
 * tokenspeed/kit/backoff.hpp — when to try a failed export again: capped
 * exponential backoff with jitter, and the Retry-After header (seconds or an
 * HTTP date). Header-only C++17, no I/O. Never used on the event path.
 */
#ifndef TOKENSPEED_KIT_BACKOFF_HPP
#define TOKENSPEED_KIT_BACKOFF_HPP

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <string_view>

namespace tokenspeed::metrics::kit {

struct BackoffOptions {
  std::chrono::milliseconds initial{1000};  // the first delay, before jitter
  std::chrono::milliseconds max{30000};     // no delay exceeds it, jitter included
  double multiplier = 2.0;                  // growth per failed attempt
  double jitter = 0.2;                      // each delay is drawn from base*(1 +- jitter)
};

/* The delays of successive failures: base_n = min(max, initial *
 * multiplier^n), each drawn uniformly from [base_n*(1-jitter),
 * base_n*(1+jitter)] and capped at max, so that producers that failed
 * together do not retry together. reset() after a success.
 * Threading: one thread (the delivery thread). */
class Backoff {
 public:
  explicit Backoff(BackoffOptions options, uint64_t seed = std::random_device{}())
      : options_(options), random_(seed) {}

  /* The delay before the next attempt; counts one more failure. */
  std::chrono::milliseconds next() {
    const double initial = static_cast<double>(options_.initial.count());
    const double cap = static_cast<double>(options_.max.count());
    double base = initial;
    for (uint32_t i = 0; i < failures_ && base < cap; ++i) base *= options_.multiplier;
    base = std::min(base, cap);
    if (failures_ < 64) ++failures_;
    std::uniform_real_distribution<double> spread(1.0 - options_.jitter, 1.0 + options_.jitter);
    const double delay = std::min(cap, base * spread(random_));
    return std::chrono::milliseconds(static_cast<int64_t>(delay));
  }

  void reset() noexcept { failures_ = 0; }
  uint32_t failures() const noexcept { return failures_; }
  const BackoffOptions& options() const noexcept { return options_; }

 private:
  BackoffOptions options_;
  std::mt19937_64 random_;
  uint32_t failures_ = 0;
};

/* The delay a Retry-After header value asks for: delay-seconds ("120") or an
 * HTTP date ("Wed, 21 Oct 2015 07:28:00 GMT", also the obsolete RFC 850 and
 * asctime forms), relative to now. A date in the past is zero; a value that
 * is neither is nullopt (ignored: the backoff applies). */
inline std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t' || value.back() == '\r' ||
                            value.back() == '\n'))
    value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    if (value.size() > 9) return std::chrono::milliseconds(std::chrono::hours(24 * 365));
    return std::chrono::seconds(std::stoll(std::string(value)));
  }
  const std::string text(value);
  for (const char* format :
       {"%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %d %H:%M:%S %Y"}) {
    struct tm parts;
    std::memset(&parts, 0, sizeof parts);
    const char* end = strptime(text.c_str(), format, &parts);
    if (end == nullptr || *end != '\0') continue;
    const time_t at = timegm(&parts);
    const auto when = std::chrono::system_clock::from_time_t(at);
    if (when <= now) return std::chrono::milliseconds(0);
    return std::chrono::duration_cast<std::chrono::milliseconds>(when - now);
  }
  return std::nullopt;
}

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_BACKOFF_HPP
