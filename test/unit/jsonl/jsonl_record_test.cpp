// jsonl_record_test.cpp — the jsonl output's copy of an event (taken in emit)
// becomes, on the writer thread, one JSON object per line with the event's
// time, metric, operation, value, labels and weight; numbers JSON cannot
// hold are written as Prometheus spells them; a malformed event is refused.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "jsonl_record.hpp"

namespace jsonl = tokenspeed::metrics::jsonl;

namespace {

const char* const kNames[] = {"model_name", "dp_rank"};
const char* const kValues[] = {"llama \"3\"", "0"};

tsm_metric_event observation() {
  tsm_metric_event event{};
  event.struct_size = sizeof event;
  event.operation = TSM_OP_OBSERVE;
  event.timestamp_ns = 1700000000123456789;
  event.metric = "tokenspeed:latency_seconds";
  event.value = 0.25;
  event.weight = 3;
  event.label_count = 2;
  event.label_names = kNames;
  event.label_values = kValues;
  return event;
}

// The JSON lines of the given events, copied and formatted as the sink does.
std::string lines_of(std::initializer_list<tsm_metric_event> events) {
  std::string records;
  for (const tsm_metric_event& event : events) {
    const std::size_t before = records.size();
    jsonl::append_record(records, event);
    REQUIRE(records.size() - before == jsonl::record_size(event));
  }
  std::string lines;
  for (std::size_t offset = 0; offset < records.size();) {
    offset = jsonl::append_json_line(lines, records, offset);
  }
  return lines;
}

std::string number(double value) {
  std::string out;
  jsonl::append_json_number(out, value);
  return out;
}

}  // namespace

TEST_CASE(
    "an event becomes one JSON line with its time, metric, operation, value, labels and weight") {
  CHECK(lines_of({observation()}) ==
        "{\"timestamp_ns\":1700000000123456789,\"metric\":\"tokenspeed:latency_seconds\","
        "\"operation\":\"observe\",\"value\":0.25,"
        "\"labels\":{\"model_name\":\"llama \\\"3\\\"\",\"dp_rank\":\"0\"},\"weight\":3}\n");
}

TEST_CASE("events read back in order, each operation by its name") {
  tsm_metric_event inc = observation();
  inc.operation = TSM_OP_INC;
  inc.metric = "requests_total";
  inc.label_count = 0;
  inc.value = 1;
  inc.weight = 1;
  tsm_metric_event set = inc;
  set.operation = TSM_OP_SET;
  set.metric = "queue";
  set.value = -2.5;
  CHECK(lines_of({inc, set}) ==
        "{\"timestamp_ns\":1700000000123456789,\"metric\":\"requests_total\",\"operation\":"
        "\"inc\",\"value\":1,\"labels\":{},\"weight\":1}\n"
        "{\"timestamp_ns\":1700000000123456789,\"metric\":\"queue\",\"operation\":\"set\","
        "\"value\":-2.5,\"labels\":{},\"weight\":1}\n");
}

TEST_CASE("numbers are written to read back exactly; NaN and the infinities as strings") {
  CHECK(number(0.1) == "0.1");
  CHECK(std::stod(number(1.0 / 3.0)) == 1.0 / 3.0);
  CHECK(number(1e300) == "1e+300");
  CHECK(number(std::numeric_limits<double>::quiet_NaN()) == "\"NaN\"");
  CHECK(number(std::numeric_limits<double>::infinity()) == "\"+Inf\"");
  CHECK(number(-std::numeric_limits<double>::infinity()) == "\"-Inf\"");
}

TEST_CASE("a malformed event is refused when it is copied") {
  std::string records;
  tsm_metric_event unknown = observation();
  unknown.operation = 99;
  CHECK_THROWS_WITH(jsonl::record_size(unknown), Catch::Contains("unknown operation 99"));
  CHECK_THROWS_AS(jsonl::append_record(records, unknown), std::invalid_argument);
  tsm_metric_event small = observation();
  small.struct_size = 8;
  CHECK_THROWS_WITH(jsonl::record_size(small), Catch::Contains("smaller than API version 1"));
  tsm_metric_event no_arrays = observation();
  no_arrays.label_values = nullptr;
  CHECK_THROWS_WITH(jsonl::record_size(no_arrays), Catch::Contains("no label arrays"));
  CHECK(records.empty());
}
