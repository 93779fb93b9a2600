// unit_plugin_files.hpp — test support for the config unit tests: temporary
// plugin directories and copies of the tiny plugins built next to the test
// executable. Test code only.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "temp_dir.hpp"

namespace tokenspeed::metrics::test {

// Where the tiny test plugins were built: $TSM_UNIT_PLUGIN_DIR, or plugin_fixtures/
// next to the running test executable.
inline std::filesystem::path unit_plugin_build_dir() {
  if (const char* dir = std::getenv("TSM_UNIT_PLUGIN_DIR")) return dir;
  return std::filesystem::read_symlink("/proc/self/exe").parent_path() / "plugin_fixtures";
}

// A temporary plugin directory: a TempDir that takes copies of the tiny
// test plugins.
class PluginDir : public TempDir {
 public:
  PluginDir() : TempDir("tsm-plugins") {}

  // Copies the built plugin file `built` (e.g. "unit_two_names.so") into this
  // directory as `as` (default: the same name). Each copy is a new file, so
  // its tsm_register runs again in this process.
  std::string add_plugin(const std::string& built, const std::string& as = {}) const {
    const std::filesystem::path source = unit_plugin_build_dir() / built;
    if (!std::filesystem::exists(source)) {
      throw std::runtime_error("test plugin not built: " + source.string() +
                               " (build the test/unit/plugin_fixtures targets)");
    }
    const std::filesystem::path target = path() / (as.empty() ? built : as);
    std::filesystem::copy_file(source, target);
    std::filesystem::permissions(
        target, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                    std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                    std::filesystem::perms::others_exec);
    return target.string();
  }
};

}  // namespace tokenspeed::metrics::test
