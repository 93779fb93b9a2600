// jsonl_record.hpp — the copy of one event kept between emit and the writer
// thread, and the JSON line it becomes. Never touches files, locks or threads.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <tokenspeed/metric_reporter.h>

namespace tokenspeed::metrics::jsonl {

// Bytes append_record adds for this event. Throws std::invalid_argument on a
// malformed event (unknown operation, struct too small).
std::size_t record_size(const tsm_metric_event& event);

// Appends a stable binary copy of the event (fixed header, then the metric
// name and the label strings, each with its length) to out. Only copies:
// the JSON formatting happens later on the writer thread. Call record_size
// first; out must have room for growth (it may allocate).
void append_record(std::string& out, const tsm_metric_event& event);

// Formats the record starting at records[offset] as one JSON object plus
// '\n', appends it to line, and returns the offset of the next record.
std::size_t append_json_line(std::string& line, std::string_view records, std::size_t offset);

// Shortest text that reads back to the same double (std::to_chars). NaN and
// the infinities, which JSON cannot represent, become the strings "NaN",
// "+Inf" and "-Inf" (the Prometheus spelling).
void append_json_number(std::string& out, double value);

}  // namespace tokenspeed::metrics::jsonl
