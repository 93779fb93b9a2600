// plugin_paths_test.cpp — a plugin directory or file that cannot be used is
// described in the words a message shows: what it is instead, a broken
// symlink with its target, a symlink loop, a missing path.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>

#include "plugin/plugin_paths.hpp"
#include "temp_dir.hpp"

using namespace tokenspeed::metrics;
using tokenspeed::metrics::test::TempDir;

TEST_CASE("a plugin directory that is a directory, or a symlink to one, has no problem") {
  TempDir dir("tsm-plugin-paths");
  std::filesystem::create_directory(dir.path() / "plugins");
  std::filesystem::create_directory_symlink(dir.path() / "plugins", dir.path() / "link");
  CHECK(plugin_directory_problem((dir.path() / "plugins").string()).empty());
  CHECK(plugin_directory_problem((dir.path() / "link").string()).empty());
}

TEST_CASE("a plugin directory that is not a directory says what it is") {
  TempDir dir("tsm-plugin-paths");
  const std::string file = dir.write("file", "x");
  const std::string fifo = (dir.path() / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(plugin_directory_problem(file) == "is a file, not a directory");
  CHECK(plugin_directory_problem(fifo) == "is a FIFO, not a directory");
  CHECK(plugin_directory_problem((dir.path() / "absent").string()) == "not found");
}

TEST_CASE("a broken symlink names its target and a symlink loop is called one") {
  TempDir dir("tsm-plugin-paths");
  std::filesystem::create_symlink("x.so", dir.path() / "broken");
  std::filesystem::create_symlink(dir.path() / "b", dir.path() / "a");
  std::filesystem::create_symlink(dir.path() / "a", dir.path() / "b");
  CHECK(plugin_directory_problem((dir.path() / "broken").string()) ==
        "is a broken symlink to 'x.so'");
  CHECK(plugin_file_problem((dir.path() / "broken").string()) == "is a broken symlink to 'x.so'");
  CHECK(plugin_directory_problem((dir.path() / "a").string()) == "is a symlink loop");
  CHECK(plugin_file_problem((dir.path() / "a").string()) == "is a symlink loop");
}

TEST_CASE("a plugin file that is a regular file, or a symlink to one, has no problem") {
  TempDir dir("tsm-plugin-paths");
  const std::string file = dir.write("a.so", "x");
  std::filesystem::create_symlink(file, dir.path() / "link.so");
  CHECK(plugin_file_problem(file).empty());
  CHECK(plugin_file_problem((dir.path() / "link.so").string()).empty());
}

TEST_CASE("a plugin file that is not a regular file says what it is") {
  TempDir dir("tsm-plugin-paths");
  std::filesystem::create_directory(dir.path() / "d.so");
  const std::string fifo = (dir.path() / "f.so").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(plugin_file_problem((dir.path() / "d.so").string()) == "is a directory");
  CHECK(plugin_file_problem(fifo) == "is not a regular file (a FIFO)");
  CHECK(plugin_file_problem((dir.path() / "gone.so").string()) == "no longer exists");
}
