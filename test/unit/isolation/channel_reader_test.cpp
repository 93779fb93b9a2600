// channel_reader_test.cpp — the helper's end of an isolated output's channel
// reads each event as the host wrote it, with its metric's description, in
// order and across the ring's end; a record that fails validation is
// corrupt, never delivered.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "isolation/channel_reader.hpp"
#include "isolation/channel_writer.hpp"
#include "isolation/channel_test_events.hpp"

using namespace tokenspeed::metrics::isolation;
using namespace tokenspeed::metrics::test;

TEST_CASE("an empty channel has nothing to read") {
  SharedChannel channel = SharedChannel::create();
  ChannelReader reader(channel);
  tsm_metric_event event{};
  CHECK(reader.empty());
  CHECK(reader.next(event) == ReadResult::empty);
}

TEST_CASE("the helper reads an event as the host wrote it, with its metric's description") {
  SharedChannel channel = SharedChannel::create();
  ChannelWriter writer(channel);
  ChannelReader reader(channel);
  const tsm_metric_info info = channel_histogram_info();
  const char* const values[] = {"llama \"3\"", ""};
  REQUIRE(writer.write(channel_event(info, values, 0.25)) == WriteResult::written);
  CHECK_FALSE(reader.empty());

  tsm_metric_event event{};
  REQUIRE(reader.next(event) == ReadResult::event);
  CHECK(event.operation == TSM_OP_OBSERVE);
  CHECK(event.timestamp_ns == 1700000000000000000);
  CHECK(std::string(event.metric) == "tokenspeed:latency_seconds");
  CHECK(event.value == 0.25);
  CHECK(event.weight == 2);
  REQUIRE(event.label_count == 2);
  CHECK(std::string(event.label_names[0]) == "model_name");
  CHECK(std::string(event.label_values[0]) == "llama \"3\"");
  CHECK(std::string(event.label_values[1]) == "");
  REQUIRE(event.info != nullptr);
  CHECK(event.info->kind == TSM_KIND_HISTOGRAM);
  CHECK(std::string(event.info->help) == "Latency.");
  CHECK(std::string(event.info->unit) == "seconds");
  REQUIRE(event.info->bucket_count == 3);
  CHECK(event.info->bucket_bounds[2] == 10.0);
  CHECK(reader.empty());
  CHECK(channel.control().events_read.load() == 1);
}

TEST_CASE("the helper sees a histogram's exponential layout as the host described it") {
  SharedChannel channel = SharedChannel::create();
  ChannelWriter writer(channel);
  ChannelReader reader(channel);
  tsm_metric_info info = channel_histogram_info();
  info.histogram_layout = TSM_HISTOGRAM_EXPONENTIAL;
  info.max_buckets = 40;
  info.max_scale = 5;
  info.zero_threshold = 1e-9;
  const char* const values[] = {"llama", "0"};
  REQUIRE(writer.write(channel_event(info, values, 0.25)) == WriteResult::written);
  tsm_metric_event event{};
  REQUIRE(reader.next(event) == ReadResult::event);
  REQUIRE(event.info->struct_size >= TSM_METRIC_INFO_SIZE_V2);
  CHECK(event.info->histogram_layout == TSM_HISTOGRAM_EXPONENTIAL);
  CHECK(event.info->max_buckets == 40);
  CHECK(event.info->max_scale == 5);
  CHECK(event.info->zero_threshold == 1e-9);
  REQUIRE(event.info->bucket_count == 3);  // the classic bounds travel too
}

TEST_CASE("events are read in order, across the ring's end") {
  SharedChannel channel = SharedChannel::create();
  ChannelWriter writer(channel);
  ChannelReader reader(channel);
  const tsm_metric_info info = channel_histogram_info();
  const std::string label(3000, 'v');
  const char* const values[] = {label.c_str(), "0"};
  // Three times round the ring, reading as the helper does while writing.
  const int total = static_cast<int>(3 * kRingBytes / 3000);
  int next_read = 0;
  tsm_metric_event event{};
  for (int i = 0; i < total; ++i) {
    while (writer.write(channel_event(info, values, i)) != WriteResult::written) {
      REQUIRE(reader.next(event) == ReadResult::event);
      REQUIRE(event.value == next_read++);
    }
  }
  while (reader.next(event) == ReadResult::event) REQUIRE(event.value == next_read++);
  CHECK(next_read == total);
}

TEST_CASE("a record that fails validation is corrupt and is not delivered") {
  SharedChannel channel = SharedChannel::create();
  ChannelWriter writer(channel);
  const tsm_metric_info info = channel_histogram_info();
  const char* const values[] = {"llama", "0"};
  REQUIRE(writer.write(channel_event(info, values, 1)) == WriteResult::written);

  SECTION("a size that is not a multiple of 8") {
    const std::uint32_t size = sizeof(EventHeader) + 3;
    std::memcpy(channel.writable_ring(), &size, sizeof size);
  }
  SECTION("a description the table does not hold") {
    EventHeader header{};
    std::memcpy(&header, channel.ring(), sizeof header);
    header.definition = 7;
    std::memcpy(channel.writable_ring(), &header, sizeof header);
  }
  SECTION("a label count other than its description's") {
    EventHeader header{};
    std::memcpy(&header, channel.ring(), sizeof header);
    header.label_count = 1;
    std::memcpy(channel.writable_ring(), &header, sizeof header);
  }
  ChannelReader reader(channel);
  tsm_metric_event event{};
  CHECK(reader.next(event) == ReadResult::corrupt);
  CHECK(channel.control().events_read.load() == 0);
}
