// remote_write_naming.hpp — how the engine's series become Prometheus sample
// names and label text: the exposition's names (counters keep "_total"),
// histograms' _bucket/_sum/_count, le written as /metrics writes it, and the
// label-name rule. Pure functions.
#pragma once

#include <charconv>
#include <cmath>
#include <cstring>
#include <string>
#include <string_view>

namespace tokenspeed::metrics::remote_write {

// A bucket bound as the exposition writes it (Go's FormatFloat 'g', -1).
inline std::string format_le(double bound) {
  if (std::isinf(bound)) return bound > 0 ? "+Inf" : "-Inf";
  char buffer[64];
  auto [end, ec] =
      std::to_chars(buffer, buffer + sizeof buffer, bound, std::chars_format::scientific);
  if (ec != std::errc()) return "NaN";
  const char* e =
      static_cast<const char*>(std::memchr(buffer, 'e', static_cast<std::size_t>(end - buffer)));
  int exponent = 0;
  if (e != nullptr) {
    const char* digits = e + 1;
    if (digits < end && *digits == '+') ++digits;
    std::from_chars(digits, end, exponent);
  }
  if (exponent < -4 || exponent >= 6) return std::string(buffer, end);
  auto [fixed_end, fixed_ec] =
      std::to_chars(buffer, buffer + sizeof buffer, bound, std::chars_format::fixed);
  if (fixed_ec != std::errc()) return "NaN";
  return std::string(buffer, fixed_end);
}

// A label name Prometheus accepts that is not reserved ("__" prefixes).
inline bool valid_label_name(std::string_view name) {
  if (name.empty() || name.rfind("__", 0) == 0) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

}  // namespace tokenspeed::metrics::remote_write
