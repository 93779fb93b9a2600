// statsd_format.hpp — how an observation becomes a StatsD or DogStatsD line:
// names (prefix, ':' -> '.', reserved characters -> '_'), labels (DogStatsD
// tags, or name segments for plain StatsD), numbers printed to round-trip,
// and the DogStatsD sample rate that carries a weight exactly. Pure
// functions over caller-owned buffers: no I/O, no locks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tokenspeed::metrics::statsd {

enum class Flavour {
  kStatsd,     // Etsy StatsD grammar: no tags, labels become name segments
  kDogstatsd,  // DogStatsD: labels as |#name:value tags, distributions |d
};

// The metric types this output sends.
enum class LineType { kCounter, kGauge, kTimer, kDistribution };

// A label list seen through two arrays of C strings or std::strings.
struct LabelView {
  uint32_t count = 0;
  const char* const* names = nullptr;  // either these two ...
  const char* const* values = nullptr;
  const std::string* name_strings = nullptr;  // ... or these two
  const std::string* value_strings = nullptr;

  std::string_view name(uint32_t i) const noexcept {
    if (name_strings != nullptr) return name_strings[i];
    return names[i] != nullptr ? std::string_view(names[i]) : std::string_view();
  }
  std::string_view value(uint32_t i) const noexcept {
    if (value_strings != nullptr) return value_strings[i];
    return values[i] != nullptr ? std::string_view(values[i]) : std::string_view();
  }
};

struct FormatOptions {
  Flavour flavour = Flavour::kStatsd;
  std::string prefix;  // prepended to every name; a '.' follows unless it ends in one
  // DogStatsD: tags added to every line after the event's own, as written
  // ("process:scheduler-0,node:gpu-3"); "" none. Ignored by plain StatsD.
  std::string constant_tags;
};

// The constant tags naming a process and its node, sanitized as tag text.
std::string identity_tags(std::string_view process, std::string_view node);

// Appends v printed in the shortest text that reads back as v (std::to_chars).
void append_number(std::string& out, double v);

// The DogStatsD sample rate that makes an agent count `weight` samples:
// the agent multiplies by int(1/rate), so the rate is 1/weight rounded down
// one step (nextafter toward 0), never up. weight > 1; the caller omits the
// rate for weight 1.
double sample_rate_for_weight(uint64_t weight) noexcept;

// Appends the sanitized metric name: prefix, metric (':' -> '.', characters
// outside [A-Za-z0-9_.-] -> '_'), and for plain StatsD each label as two more
// segments ".name.value" (value characters outside [A-Za-z0-9_-] -> '_').
void append_name(std::string& out, const FormatOptions& options, std::string_view metric,
                 const LabelView& labels);

// Appends "|#name:value,..." and then constant_tags as written (DogStatsD
// only; nothing without either). ',', '|', '#', newlines and control
// characters of a label become '_'; ':' too in names.
void append_tags(std::string& out, const LabelView& labels, const std::string& constant_tags = {});

// Appends one complete line without its trailing newline. value is in the
// unit to send (the caller converts seconds to milliseconds for timers).
// Plain StatsD sends `weight` repeated values "name:v|ms:v|ms..." (Etsy's
// multi-metric form: each value counts once); DogStatsD one value with
// "|@rate" for weight > 1. Counters and gauges take weight 1. A negative
// plain-StatsD gauge is sent as "name:0|g" then "name:-v|g" (a leading sign
// is a relative change there).
void append_line(std::string& out, const FormatOptions& options, std::string_view metric,
                 const LabelView& labels, LineType type, double value, uint64_t weight);

// The type's suffix without the '|': c, g, ms, d.
std::string_view type_code(LineType type) noexcept;

}  // namespace tokenspeed::metrics::statsd
