// file_mode_test.cpp — unit tests of host/core/file_mode: which files others
// can read, and the mode's text.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "core/file_mode.hpp"

using namespace tokenspeed::metrics;

namespace {

std::string temporary_file() {
  char path[] = "/tmp/tsm-file-mode-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::close(fd);
  return path;
}

}  // namespace

TEST_CASE("a file the group or others may read is reported with its mode") {
  const std::string path = temporary_file();
  REQUIRE(::chmod(path.c_str(), 0644) == 0);
  CHECK(readable_by_others(path) == 0644u);
  REQUIRE(::chmod(path.c_str(), 0640) == 0);
  CHECK(readable_by_others(path) == 0640u);
  REQUIRE(::chmod(path.c_str(), 0604) == 0);
  CHECK(readable_by_others(path) == 0604u);
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  CHECK_FALSE(readable_by_others(path).has_value());
  ::unlink(path.c_str());
}

TEST_CASE("what is not a regular file is never reported") {
  CHECK_FALSE(readable_by_others("/tmp").has_value());
  CHECK_FALSE(readable_by_others("/dev/null").has_value());
  CHECK_FALSE(readable_by_others("/nonexistent/file").has_value());
}

TEST_CASE("the mode is written as chmod takes it") {
  CHECK(mode_text(0644) == "0644");
  CHECK(mode_text(0600) == "0600");
  CHECK(mode_text(04755) == "4755");
}
