// The load feed's msgpack encoder: each integer in its smallest encoding,
// nil, fixstr and str8, float64 big-endian, array and map headers; a write
// beyond the buffer is refused, never truncated silently.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "msgpack_writer.hpp"

using namespace tokenspeed::metrics::zmq_load;

namespace {
std::vector<unsigned char> bytes(const MsgpackWriter& w) {
  return std::vector<unsigned char>(w.data(), w.data() + w.size());
}
}  // namespace

TEST_CASE("unsigned integers take their smallest encoding", "[zmq_load]") {
  MsgpackWriter w;
  w.uint(0);
  w.uint(127);
  w.uint(128);
  w.uint(256);
  w.uint(65536);
  w.uint(4294967296ULL);
  CHECK(bytes(w) == std::vector<unsigned char>{0x00, 0x7f, 0xcc, 0x80, 0xcd, 0x01, 0x00,
                                               0xce, 0x00, 0x01, 0x00, 0x00, 0xcf, 0x00,
                                               0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00});
}

TEST_CASE("nil, strings, float64 and container headers", "[zmq_load]") {
  MsgpackWriter w;
  w.array(2);
  w.nil();
  w.str("ab");
  w.map(16);
  w.float64(1.5);
  w.str(std::string(40, 'x'));
  const std::vector<unsigned char> out = bytes(w);
  REQUIRE(out.size() == 1 + 1 + 3 + 3 + 9 + 2 + 40);
  CHECK(std::vector<unsigned char>(out.begin(), out.begin() + 17) ==
        std::vector<unsigned char>{0x92, 0xc0, 0xa2, 'a', 'b', 0xde, 0x00, 0x10, 0xcb, 0x3f, 0xf8,
                                   0, 0, 0, 0, 0, 0});
  CHECK(out[17] == 0xd9);
  CHECK(out[18] == 40);
  CHECK(w.ok());
}

TEST_CASE("a message larger than the buffer is refused", "[zmq_load]") {
  MsgpackWriter w;
  w.str(std::string(MsgpackWriter::kCapacity, 'x'));
  CHECK_FALSE(w.ok());
  CHECK(w.size() == MsgpackWriter::kCapacity);
}
