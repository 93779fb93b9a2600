// jsonl_record.cpp — event snapshot encoding and JSON line formatting.
// Pure functions of their arguments: no I/O, no shared state.
#include "jsonl_record.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include <tokenspeed/kit/json.hpp>

namespace tokenspeed::metrics::jsonl {
namespace {

// Fixed part of a record; followed by metric_size bytes of the metric name,
// then label_count times {uint32 name size, uint32 value size, name, value}.
struct RecordHeader {
  int64_t timestamp_ns;
  double value;
  uint64_t weight;
  uint32_t operation;
  uint32_t metric_size;
  uint32_t label_count;
  uint32_t reserved;
};

constexpr std::size_t kLabelSizes = 2 * sizeof(uint32_t);

std::string_view view(const char* text) noexcept {
  return text == nullptr ? std::string_view() : std::string_view(text);
}

void check(const tsm_metric_event& event) {
  if (event.struct_size < offsetof(tsm_metric_event, info)) {
    throw std::invalid_argument("event struct_size " + std::to_string(event.struct_size) +
                                " is smaller than API version 1 requires");
  }
  if (event.operation != TSM_OP_INC && event.operation != TSM_OP_SET &&
      event.operation != TSM_OP_OBSERVE) {
    throw std::invalid_argument("event with unknown operation " + std::to_string(event.operation));
  }
  if (event.label_count > 0 && (event.label_names == nullptr || event.label_values == nullptr)) {
    throw std::invalid_argument("event has labels but no label arrays");
  }
}

void append_u32(std::string& out, std::size_t value) {
  const auto v = static_cast<uint32_t>(value);
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

uint32_t read_u32(std::string_view records, std::size_t offset) {
  uint32_t v = 0;
  std::memcpy(&v, records.data() + offset, sizeof v);
  return v;
}

template <class Integer>
void append_integer(std::string& out, Integer value) {
  char digits[24];
  const auto result = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, result.ptr);
}

const char* operation_text(uint32_t operation) noexcept {
  switch (operation) {
    case TSM_OP_INC:
      return "inc";
    case TSM_OP_SET:
      return "set";
    default:
      return "observe";
  }
}

}  // namespace

std::size_t record_size(const tsm_metric_event& event) {
  check(event);
  std::size_t size = sizeof(RecordHeader) + view(event.metric).size();
  for (uint32_t i = 0; i < event.label_count; ++i) {
    size += kLabelSizes + view(event.label_names[i]).size() + view(event.label_values[i]).size();
  }
  return size;
}

void append_record(std::string& out, const tsm_metric_event& event) {
  check(event);
  const std::string_view metric = view(event.metric);
  const RecordHeader header{event.timestamp_ns,
                            event.value,
                            event.weight,
                            event.operation,
                            static_cast<uint32_t>(metric.size()),
                            event.label_count,
                            0};
  out.append(reinterpret_cast<const char*>(&header), sizeof header);
  out.append(metric);
  for (uint32_t i = 0; i < event.label_count; ++i) {
    const std::string_view name = view(event.label_names[i]);
    const std::string_view value = view(event.label_values[i]);
    append_u32(out, name.size());
    append_u32(out, value.size());
    out.append(name);
    out.append(value);
  }
}

std::size_t append_json_line(std::string& line, std::string_view records, std::size_t offset) {
  RecordHeader header{};
  std::memcpy(&header, records.data() + offset, sizeof header);
  offset += sizeof header;

  line += "{\"timestamp_ns\":";
  append_integer(line, header.timestamp_ns);
  line += ",\"metric\":";
  kit::json::append_string(line, records.substr(offset, header.metric_size), true);
  offset += header.metric_size;
  line += ",\"operation\":\"";
  line += operation_text(header.operation);
  line += "\",\"value\":";
  append_json_number(line, header.value);
  line += ",\"labels\":{";
  for (uint32_t i = 0; i < header.label_count; ++i) {
    const uint32_t name_size = read_u32(records, offset);
    const uint32_t value_size = read_u32(records, offset + sizeof(uint32_t));
    offset += kLabelSizes;
    if (i > 0) line += ',';
    kit::json::append_string(line, records.substr(offset, name_size), true);
    line += ':';
    kit::json::append_string(line, records.substr(offset + name_size, value_size), true);
    offset += name_size + value_size;
  }
  line += "},\"weight\":";
  append_integer(line, header.weight);
  line += "}\n";
  return offset;
}

void append_json_number(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "\"NaN\"";
  } else if (std::isinf(value)) {
    out += value > 0 ? "\"+Inf\"" : "\"-Inf\"";
  } else {
    char digits[32];
    const auto result = std::to_chars(digits, digits + sizeof digits, value);
    out.append(digits, result.ptr);
  }
}

}  // namespace tokenspeed::metrics::jsonl
