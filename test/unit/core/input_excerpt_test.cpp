// input_excerpt_test.cpp — an error message quotes what it was given whole
// when short, and otherwise its start and its size, never splitting a
// UTF-8 character.
#include <catch2/catch.hpp>

#include <string>

#include "core/input_excerpt.hpp"

using namespace tokenspeed::metrics;

TEST_CASE("long input is cut in messages with its size; short input is kept whole") {
  CHECK(input_excerpt("jsonl") == "jsonl");
  CHECK(input_excerpt(std::string(120, 'a')) == std::string(120, 'a'));
  const std::string long_name(2'000'000, 'n');
  CHECK(input_excerpt(long_name) == std::string(120, 'n') + "... (2000000 bytes)");
  // Never cut inside a UTF-8 character: "é" is two bytes.
  const std::string accents = std::string(119, 'a') + "\xc3\xa9" + std::string(10, 'b');
  CHECK(input_excerpt(accents) == std::string(119, 'a') + "... (131 bytes)");
}

TEST_CASE("a caller's limit replaces the default one") {
  CHECK(input_excerpt("abcdef", 3) == "abc... (6 bytes)");
  CHECK(input_excerpt("abc", 3) == "abc");
}
