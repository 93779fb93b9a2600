// shared_channel_test.cpp — the host's mapping of an isolated output's
// channel is what a helper attaching its descriptor sees; a descriptor that
// is not such a channel is refused; the helper's message is kept whole up to
// its area's size.
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "isolation/shared_channel.hpp"

using namespace tokenspeed::metrics::isolation;

TEST_CASE("a helper attaching the host's descriptor sees the host's channel") {
  SharedChannel host = SharedChannel::create();
  REQUIRE(host.valid());
  host.control().write_pos.store(48);
  host.writable_ring()[0] = std::byte{0x5a};
  host.writable_definitions()[8] = std::byte{0x17};

  SharedChannel helper = SharedChannel::attach(::dup(host.fd()));
  REQUIRE(helper.valid());
  CHECK(helper.control().write_pos.load() == 48);
  CHECK(helper.ring()[0] == std::byte{0x5a});
  CHECK(helper.definitions()[8] == std::byte{0x17});
  // The control block is shared both ways: the helper's progress reaches the host.
  helper.control().read_pos.store(48);
  CHECK(host.control().read_pos.load() == 48);
}

TEST_CASE("a descriptor that is not a channel of this version is refused") {
  const int empty = ::memfd_create("not-a-channel", MFD_CLOEXEC);
  REQUIRE(empty >= 0);
  REQUIRE(::ftruncate(empty, static_cast<off_t>(kChannelBytes)) == 0);
  CHECK_FALSE(SharedChannel::attach(empty).valid());  // no magic number
  ::close(empty);

  SharedChannel host = SharedChannel::create();
  host.control().version = kChannelVersion + 1;
  const int newer = ::dup(host.fd());
  CHECK_FALSE(SharedChannel::attach(newer).valid());
  ::close(newer);
  CHECK_FALSE(SharedChannel::attach(-1).valid());
}

TEST_CASE("the helper's message is kept whole up to its area's size") {
  SharedChannel channel = SharedChannel::create();
  CHECK(message_of(channel.control()).empty());
  set_message(channel.control(), "create_sink failed: no such host");
  CHECK(message_of(channel.control()) == "create_sink failed: no such host");
  set_message(channel.control(), std::string(kMessageBytes + 100, 'm'));
  CHECK(message_of(channel.control()) == std::string(kMessageBytes, 'm'));
}

TEST_CASE("records are padded to 8 bytes") {
  CHECK(round_up8(0) == 0);
  CHECK(round_up8(1) == 8);
  CHECK(round_up8(8) == 8);
  CHECK(round_up8(41) == 48);
}
