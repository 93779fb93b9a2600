// temp_dir.hpp — a fresh private directory under the system's temporary
// directory, removed with everything in it when the test leaves its scope
// (also when a REQUIRE ends the test early). Test code only.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace tokenspeed::metrics::test {

class TempDir {
 public:
  // prefix names the test in the directory's name: "<prefix>-XXXXXX".
  explicit TempDir(const std::string& prefix = "tsm-unit") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }
  std::string str() const { return path_.string(); }

  // Writes a file of this directory with the given contents; returns its path.
  std::string write(const std::string& name, const std::string& contents) const {
    const std::filesystem::path target = path_ / name;
    std::ofstream out(target, std::ios::binary);
    out << contents;
    return target.string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace tokenspeed::metrics::test
