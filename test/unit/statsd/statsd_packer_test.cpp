// The statsd output's datagram packing: whole lines up to the bound, a long
// multi-value line split between its values, a line that fits nowhere
// counted with its bytes, never truncated.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "statsd_packer.hpp"

using namespace tokenspeed::metrics::statsd;

TEST_CASE("lines are packed into datagrams no larger than the bound", "[statsd]") {
  DatagramPacker packer(20);
  std::vector<std::string> out;
  packer.add_lines("a:1|c\nb:2|c\ncc:3|c\ndddd:4|c\n", out);
  packer.finish(out);
  REQUIRE(out.size() == 2);
  CHECK(out[0] == "a:1|c\nb:2|c\ncc:3|c");
  CHECK(out[1] == "dddd:4|c");
}

TEST_CASE("a long multi-value line is split between values with the name repeated", "[statsd]") {
  DatagramPacker packer(16);
  std::vector<std::string> out;
  packer.add_line("t:1|ms:2|ms:3|ms:4|ms", out);
  packer.finish(out);
  REQUIRE(out.size() == 2);
  CHECK(out[0] == "t:1|ms:2|ms:3|ms");
  CHECK(out[1] == "t:4|ms");
  CHECK(packer.oversized_lines() == 0);
}

TEST_CASE("a line that cannot fit any datagram is counted, never truncated", "[statsd]") {
  DatagramPacker packer(10);
  std::vector<std::string> out;
  packer.add_line("long.name:1|d|#tag:value", out);
  packer.finish(out);
  CHECK(out.empty());
  CHECK(packer.oversized_lines() == 1);
}

TEST_CASE("the packer says how many bytes it left out since it was last asked", "[statsd]") {
  DatagramPacker packer(10);
  std::vector<std::string> out;
  packer.add_line("long.name:1|d|#tag:value", out);  // 24 bytes, no datagram holds it
  packer.add_line("a:1|c", out);
  packer.add_line("t:1|ms:22222222|ms", out);  // split: "t:22222222|ms" (13) left out
  packer.finish(out);
  CHECK(out == std::vector<std::string>{"a:1|c", "t:1|ms"});
  CHECK(packer.take_oversized_bytes() == 24 + 13);
  CHECK(packer.take_oversized_bytes() == 0);
  CHECK(packer.oversized_lines() == 2);
}
