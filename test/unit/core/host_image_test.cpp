// host_image_test.cpp — the host's code is found in the file that holds it:
// here the unit test executable, which links the host statically.
#include <catch2/catch.hpp>

#include <filesystem>

#include "core/host_image.hpp"

using namespace tokenspeed::metrics;

TEST_CASE("the host image directory is the directory of the executable holding the host") {
  const std::filesystem::path executable = std::filesystem::canonical("/proc/self/exe");
  CHECK(host_image_directory() == executable.parent_path());
}

TEST_CASE("the host image directory is canonical") {
  const std::filesystem::path directory = host_image_directory();
  REQUIRE(!directory.empty());
  CHECK(directory.is_absolute());
  CHECK(directory == std::filesystem::canonical(directory));
}
