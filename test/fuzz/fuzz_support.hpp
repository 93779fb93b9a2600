// fuzz_support.hpp — what the fuzz targets share: FUZZ_CHECK (a broken
// property aborts with its condition, so libFuzzer and the corpus driver both
// report it), a private scratch directory and input splitting. Test code
// only; never linked into the host.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#define FUZZ_CHECK(condition)                                                               \
  do {                                                                                      \
    if (!(condition)) {                                                                     \
      std::fprintf(stderr, "%s:%d: property broken: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                         \
    }                                                                                       \
  } while (0)

namespace tokenspeed::metrics::fuzz {

// A directory of this process for the files a target writes (on /dev/shm
// when there is one: inputs are written once per run), removed at exit.
// libFuzzer ends a timed run with _Exit, which skips that removal: a runner
// names a base directory of its own in TSM_FUZZ_SCRATCH and removes it.
inline const std::filesystem::path& scratch_dir() {
  // Never destroyed: the removal at exit runs after static destructors
  // registered later, and must still find the path.
  static const std::filesystem::path* const dir = [] {
    const char* runner_base = std::getenv("TSM_FUZZ_SCRATCH");
    std::string base = runner_base != nullptr && *runner_base != '\0' ? runner_base
                       : std::filesystem::is_directory("/dev/shm")    ? "/dev/shm"
                                                                      : "/tmp";
    std::string pattern = base + "/tsm-fuzz-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    return new std::filesystem::path(pattern);
  }();
  static const bool removed_at_exit = [] {
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(*dir, ignored);
    });
    return true;
  }();
  (void)removed_at_exit;
  return *dir;
}

inline void write_file(const std::filesystem::path& path, std::string_view contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  FUZZ_CHECK(out.good());
}

// The parts of text between separators (an empty text gives one empty part).
inline std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (;;) {
    const std::size_t at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

}  // namespace tokenspeed::metrics::fuzz
