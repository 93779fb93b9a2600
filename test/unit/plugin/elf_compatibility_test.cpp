// elf_compatibility_test.cpp — unit tests of host/plugin/elf_compatibility:
// a library of this process's architecture passes, another architecture,
// class or a file that is not ELF is named.
#include <catch2/catch.hpp>

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

#include "core/bounded_file.hpp"
#include "plugin/elf_compatibility.hpp"
#include "plugin_fixtures/unit_plugin_files.hpp"

using namespace tokenspeed::metrics;
using tokenspeed::metrics::test::TempDir;

namespace {

std::string contents_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A copy of this test executable (an ELF file of this process's kind) with
// the header bytes at offset changed.
std::string patched_copy(const TempDir& dir, std::size_t offset, std::string bytes) {
  std::string image = contents_of("/proc/self/exe");
  REQUIRE(image.size() > offset + bytes.size());
  image.replace(offset, bytes.size(), bytes);
  return dir.write("patched.so", image);
}

std::string problem_of(const std::string& path) {
  const FileHandle file = open_regular_file(path);
  return elf_compatibility_problem(file.get());
}

}  // namespace

TEST_CASE("an ELF file of this process's architecture has no problem", "[elf]") {
  CHECK(problem_of("/proc/self/exe").empty());
}

TEST_CASE("an ELF file of another machine is named with both machines", "[elf]") {
  TempDir dir;
  const std::string path = patched_copy(dir, 18, std::string("\xb7\x00", 2));  // 183, AArch64
  const std::string problem = problem_of(path);
  INFO(problem);
  CHECK(
      problem.starts_with("built for another architecture (ELF machine 183, AArch64, 64-bit; "
                          "this process: machine "));
}

TEST_CASE("an ELF file of the other class is named as such", "[elf]") {
  TempDir dir;
  const std::string path = patched_copy(dir, EI_CLASS, std::string(1, ELFCLASS32));
  const std::string problem = problem_of(path);
  INFO(problem);
  CHECK(problem.find("32-bit; this process: ") != std::string::npos);
}

TEST_CASE("a file that is not ELF is named as such", "[elf]") {
  TempDir dir;
  CHECK(problem_of(dir.write("text.so", "INPUT(libc.so.6)\n")) ==
        "is not an ELF file (not a shared library)");
  CHECK(problem_of(dir.write("empty.so", "")) == "is not an ELF file (not a shared library)");
}

TEST_CASE("common machines have their usual names", "[elf]") {
  CHECK(elf_machine_name(EM_X86_64) == "x86-64");
  CHECK(elf_machine_name(EM_AARCH64) == "AArch64");
  CHECK(elf_machine_name(0xfffe).empty());
}
