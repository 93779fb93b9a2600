// bounded_file_test.cpp — unit tests of host/core/bounded_file: only regular
// files are read, a FIFO never blocks, and the size bound holds.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/bounded_file.hpp"
#include "plugin_fixtures/unit_plugin_files.hpp"

using namespace tokenspeed::metrics;
using tokenspeed::metrics::test::TempDir;

namespace {

// The message of the FileReadError that reading path throws, or "" if none.
std::string read_error(const std::string& path, std::size_t limit = kConfigurationFileLimit) {
  try {
    (void)read_bounded_file(path, limit);
  } catch (const FileReadError& error) {
    return error.what();
  }
  return {};
}

}  // namespace

TEST_CASE("a regular file is read whole", "[bounded_file]") {
  TempDir dir;
  const std::string path = dir.write("config.json", "{\"a\": 1}\n");
  CHECK(read_bounded_file(path, kConfigurationFileLimit) == "{\"a\": 1}\n");
  CHECK(read_bounded_file(dir.write("empty.json", ""), 0).empty());
}

TEST_CASE("a file of exactly the limit is read; one byte more is refused naming the limit",
          "[bounded_file]") {
  TempDir dir;
  const std::string at_limit = dir.write("at.json", std::string(1024, 'x'));
  CHECK(read_bounded_file(at_limit, 1024).size() == 1024);
  const std::string over = dir.write("over.json", std::string(1025, 'x'));
  CHECK(read_error(over, 1024) == "is larger than the limit of 1 KiB (1025 bytes)");
}

TEST_CASE("a sparse file far over the limit is refused without reading it", "[bounded_file]") {
  TempDir dir;
  const std::string path = dir.write("huge.json", "");
  REQUIRE(::truncate(path.c_str(), off_t{1} << 40) == 0);  // 1 TiB, no blocks
  CHECK(read_error(path) == "is larger than the limit of 16 MiB (1099511627776 bytes)");
}

TEST_CASE("a FIFO is refused at once, without waiting for a writer", "[bounded_file]") {
  TempDir dir;
  const std::string path = (dir.path() / "fifo").string();
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  CHECK(read_error(path) == "is not a regular file (a FIFO)");
}

TEST_CASE("a character device such as /dev/zero is refused before any read", "[bounded_file]") {
  CHECK(read_error("/dev/zero") == "is not a regular file (a character device)");
}

TEST_CASE("a directory is refused as a directory", "[bounded_file]") {
  TempDir dir;
  CHECK(read_error(dir.str()) == "is a directory");
}

TEST_CASE("a missing file names the system's reason", "[bounded_file]") {
  TempDir dir;
  CHECK(read_error((dir.path() / "absent.json").string()) ==
        "cannot be opened: No such file or directory");
}

TEST_CASE("a symlink to a regular file is followed", "[bounded_file]") {
  TempDir dir;
  const std::string target = dir.write("real.json", "{}");
  const std::string link = (dir.path() / "link.json").string();
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
  CHECK(read_bounded_file(link, 16) == "{}");
}

TEST_CASE("open_regular_file hands out a blocking descriptor of a regular file", "[bounded_file]") {
  TempDir dir;
  const FileHandle file = open_regular_file(dir.write("plugin.so", "data"));
  REQUIRE(file.get() >= 0);
  CHECK((::fcntl(file.get(), F_GETFL) & O_NONBLOCK) == 0);
}

TEST_CASE("sizes are said in the largest whole unit", "[bounded_file]") {
  CHECK(describe_size(std::size_t{16} << 20) == "16 MiB");
  CHECK(describe_size(64 * 1024) == "64 KiB");
  CHECK(describe_size(1000) == "1000 bytes");
  CHECK(describe_size(1) == "1 byte");
}
