// unit_plugin_files.hpp — test support for the config unit tests: temporary
// plugin directories and copies of the tiny plugins built next to the test
// executable. Test code only.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace tokenspeed::metrics::test {

// Where the tiny test plugins were built: $TSM_UNIT_PLUGIN_DIR, or plugins/
// next to the running test executable.
inline std::filesystem::path unit_plugin_build_dir() {
  if (const char* dir = std::getenv("TSM_UNIT_PLUGIN_DIR")) return dir;
  return std::filesystem::read_symlink("/proc/self/exe").parent_path() / "plugins";
}

// A fresh directory (mode 0700, owned by us) removed at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tsm-unit-XXXXXX").string();
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

  // Copies the built plugin file `built` (e.g. "unit_two_names.so") into this
  // directory as `as` (default: the same name). Each copy is a new file, so
  // its tsm_register runs again in this process.
  std::string add_plugin(const std::string& built, const std::string& as = {}) const {
    const std::filesystem::path source = unit_plugin_build_dir() / built;
    if (!std::filesystem::exists(source)) {
      throw std::runtime_error("test plugin not built: " + source.string() +
                               " (build the test/unit/plugins targets)");
    }
    const std::filesystem::path target = path_ / (as.empty() ? built : as);
    std::filesystem::copy_file(source, target);
    std::filesystem::permissions(target, std::filesystem::perms::owner_all |
                                             std::filesystem::perms::group_read |
                                             std::filesystem::perms::group_exec |
                                             std::filesystem::perms::others_read |
                                             std::filesystem::perms::others_exec);
    return target.string();
  }

  // Writes a file with the given contents; returns its path.
  std::string write(const std::string& name, const std::string& contents) const;

 private:
  std::filesystem::path path_;
};

}  // namespace tokenspeed::metrics::test

#include <fstream>

inline std::string tokenspeed::metrics::test::TempDir::write(const std::string& name,
                                                             const std::string& contents) const {
  const std::filesystem::path target = path_ / name;
  std::ofstream out(target, std::ios::binary);
  out << contents;
  return target.string();
}
