// channel_writer_test.cpp — the host's end of an isolated output's channel
// writes each event for the helper, refuses what no record can hold, and
// says the ring is full (never blocking) while the helper does not read.
#include <catch2/catch.hpp>

#include <string>

#include "isolation/channel_reader.hpp"
#include "isolation/channel_writer.hpp"
#include "isolation/channel_test_events.hpp"

using namespace tokenspeed::metrics::isolation;
using namespace tokenspeed::metrics::test;

TEST_CASE("an event is written into the channel for the helper") {
  SharedChannel channel = SharedChannel::create();
  REQUIRE(channel.valid());
  ChannelWriter writer(channel);
  const tsm_metric_info info = channel_histogram_info();
  const char* const values[] = {"llama", "0"};
  CHECK(writer.write(channel_event(info, values, 0.5)) == WriteResult::written);
  CHECK(channel.control().events_written.load() == 1);
  CHECK(channel.control().definitions.load() == 1);
  CHECK(channel.control().write_pos.load() > 0);
}

TEST_CASE("a metric's description is written once, with its first event") {
  SharedChannel channel = SharedChannel::create();
  ChannelWriter writer(channel);
  const tsm_metric_info info = channel_histogram_info();
  const char* const values[] = {"llama", "0"};
  for (int i = 0; i < 10; ++i) {
    REQUIRE(writer.write(channel_event(info, values, i)) == WriteResult::written);
  }
  CHECK(channel.control().definitions.load() == 1);
  CHECK(channel.control().events_written.load() == 10);
}

TEST_CASE("an event larger than the largest record, or without a description, is too large") {
  SharedChannel channel = SharedChannel::create();
  ChannelWriter writer(channel);
  const tsm_metric_info info = channel_histogram_info();
  const std::string huge(kMaxEventRecord, 'x');
  const char* const values[] = {huge.c_str(), "0"};
  CHECK(writer.write(channel_event(info, values, 1)) == WriteResult::too_large);
  tsm_metric_event orphan = channel_event(info, values, 1);
  orphan.info = nullptr;
  CHECK(writer.write(orphan) == WriteResult::too_large);
  CHECK(channel.control().events_written.load() == 0);
}

TEST_CASE("a ring the helper does not read fills, and takes events again once it is read") {
  SharedChannel channel = SharedChannel::create();
  ChannelWriter writer(channel);
  const tsm_metric_info info = channel_histogram_info();
  const std::string label(1000, 'v');
  const char* const values[] = {label.c_str(), "0"};
  std::size_t written = 0;
  while (writer.write(channel_event(info, values, 1)) == WriteResult::written) {
    ++written;
    REQUIRE(written * 1000 <= kRingBytes);  // a ring that never fills would loop forever
  }
  CHECK(written > kRingBytes / (1000 + 2 * sizeof(EventHeader)));
  CHECK(writer.write(channel_event(info, values, 1)) == WriteResult::ring_full);

  ChannelReader reader(channel);
  tsm_metric_event event{};
  std::size_t read = 0;
  while (reader.next(event) == ReadResult::event) ++read;
  CHECK(read == written);
  CHECK(writer.write(channel_event(info, values, 1)) == WriteResult::written);
}
