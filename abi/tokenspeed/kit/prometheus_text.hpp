/*
 * tokenspeed/kit/prometheus_text.hpp — the Prometheus text rules an output
 * that speaks to Prometheus (the host's /metrics, remote write) must follow
 * to the letter: a sample value or bucket bound written as Go's
 * strconv.FormatFloat(v, 'g', -1, 64) writes it, and the label-name rule.
 * Header-only C++17, pure functions.
 */
#ifndef TOKENSPEED_KIT_PROMETHEUS_TEXT_HPP
#define TOKENSPEED_KIT_PROMETHEUS_TEXT_HPP

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <system_error>

namespace tokenspeed::metrics::kit {

/* A value as Prometheus writes it: "NaN", "+Inf", "-Inf", else the shortest
 * digits that read back to value, in exponent form when the decimal exponent
 * is below -4 or at least 6 ("0.1", "1", "1e+06", "1e-05"). */
inline std::string format_prometheus_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[64];
  // Shortest round-trip digits in scientific form tell the decimal exponent.
  auto [end, ec] =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  if (ec != std::errc()) return "NaN";
  const char* e =
      static_cast<const char*>(std::memchr(buffer, 'e', static_cast<std::size_t>(end - buffer)));
  int exponent = 0;
  if (e != nullptr) {
    const char* digits = e + 1;
    if (digits < end && *digits == '+') ++digits;  // from_chars takes '-' only
    std::from_chars(digits, end, exponent);
  }
  // Go's shortest-precision rule for 'g'.
  if (exponent < -4 || exponent >= 6) return std::string(buffer, end);
  auto [fixed_end, fixed_ec] =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed);
  if (fixed_ec != std::errc()) return "NaN";
  return std::string(buffer, fixed_end);
}

/* A label name Prometheus accepts ([a-zA-Z_][a-zA-Z0-9_]*) that is not
 * reserved (no "__" prefix). */
inline bool valid_prometheus_label_name(std::string_view name) noexcept {
  if (name.empty() || name.rfind("__", 0) == 0) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_PROMETHEUS_TEXT_HPP
