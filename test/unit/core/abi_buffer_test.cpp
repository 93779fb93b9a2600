// abi_buffer_test.cpp — what a plugin writes through the C ABI's tsm_buffer
// lands in the host's string, replacing what was there; a null pointer
// writes the empty string.
#include <catch2/catch.hpp>

#include <string>

#include "core/abi_buffer.hpp"

using namespace tokenspeed::metrics;

TEST_CASE("a plugin's write through tsm_buffer is the buffer's contents") {
  AbiBuffer buffer;
  CHECK(buffer.empty());
  tsm_buffer* view = buffer.get();
  REQUIRE(view->struct_size == sizeof(tsm_buffer));
  view->assign(view, "bad key", 7);
  CHECK(buffer.str() == "bad key");
  CHECK_FALSE(buffer.empty());
}

TEST_CASE("a second write replaces the first, and bytes after a NUL are kept") {
  AbiBuffer buffer;
  tsm_buffer* view = buffer.get();
  view->assign(view, "first message", 13);
  view->assign(view, "a\0b", 3);
  CHECK(buffer.str() == std::string("a\0b", 3));
}

TEST_CASE("a null pointer writes the empty string, and clear empties the buffer") {
  AbiBuffer buffer;
  tsm_buffer* view = buffer.get();
  view->assign(view, "x", 1);
  view->assign(view, nullptr, 5);
  CHECK(buffer.empty());
  view->assign(view, "y", 1);
  buffer.clear();
  CHECK(buffer.empty());
}

TEST_CASE("a tsm_buffer without its host's data is ignored") {
  AbiBuffer buffer;
  tsm_buffer stray = *buffer.get();
  stray.host_data = nullptr;
  stray.assign(&stray, "lost", 4);
  CHECK(buffer.empty());
  buffer.get()->assign(nullptr, "lost", 4);
  CHECK(buffer.empty());
}
