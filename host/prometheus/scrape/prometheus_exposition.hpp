// prometheus_exposition.hpp — renders merged families in the Prometheus text
// exposition format 0.0.4 (HELP, TYPE, escaped labels, cumulative histogram
// buckets, Go-compatible numbers). Pure formatting: reads no store, no file.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "prometheus/scrape/prometheus_merge.hpp"

namespace tokenspeed::metrics {

inline constexpr std::string_view kExpositionContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// A sample value or le bound as Prometheus's Go client writes it:
// "+Inf", "-Inf", "NaN", otherwise the shortest text that reads back as the
// same double, in strconv 'g' style ("3", "0.03", "1e+06", "1e-05").
std::string format_prometheus_value(double value);

// True when text is well-formed UTF-8 (RFC 3629).
bool is_valid_utf8(std::string_view text) noexcept;
// text with every byte that starts no well-formed UTF-8 sequence replaced by
// U+FFFD (what the exposition writes for it).
std::string to_valid_utf8(std::string_view text);

// Label values: backslash, double quote and newline escaped. The format is
// UTF-8: every byte that starts no well-formed UTF-8 sequence is written as
// U+FFFD, so one bad label value never makes a scraper reject the scrape.
void append_escaped_label_value(std::string& out, std::string_view value);
// HELP text: backslash and newline escaped, invalid UTF-8 replaced as above.
void append_escaped_help(std::string& out, std::string_view help);

// One family: HELP (when there is help text), TYPE, then its samples.
// Counters are named with _total; histograms expose _bucket (cumulative, le
// ending in +Inf), _sum and _count; the count is the +Inf bucket. An
// exponential histogram's buckets are written as kit::for_each_classic_bucket
// gives them.
void append_family(std::string& out, const MergedFamily& family);

// Threading: pure function, any thread.
std::string render_exposition(std::span<const MergedFamily> families);

}  // namespace tokenspeed::metrics
