// plugin_paths.cpp — stat and lstat of plugin directories and files, turned
// into the reasons that `plugins`, `check` and the warnings show.
#include "plugin/plugin_paths.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/bounded_file.hpp"
#include "core/input_excerpt.hpp"

namespace tokenspeed::metrics {
namespace {

// Why stat(path) failed with error: a dangling symlink and a loop are named
// as such (glibc's text for both is about the target, not the link).
std::string stat_failure(const std::string& path, int error, const char* missing) {
  if (error == ELOOP) return "is a symlink loop";
  struct stat link {};
  if (error == ENOENT && ::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
    char target[4096];
    const ssize_t n = ::readlink(path.c_str(), target, sizeof target);
    const std::string to = n > 0 ? std::string(target, static_cast<std::size_t>(n)) : "?";
    return "is a broken symlink to '" + input_excerpt(to) + "'";
  }
  if (error == ENOENT) return missing;
  return std::string("cannot be examined: ") + std::strerror(error);
}

}  // namespace

std::string plugin_directory_problem(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return stat_failure(path, errno, "not found");
  if (S_ISDIR(info.st_mode)) return {};
  if (S_ISREG(info.st_mode)) return "is a file, not a directory";
  return "is " + describe_file_type(info.st_mode) + ", not a directory";
}

std::string plugin_file_problem(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return stat_failure(path, errno, "no longer exists");
  if (S_ISREG(info.st_mode)) return {};
  if (S_ISDIR(info.st_mode)) return "is a directory";
  return "is not a regular file (" + describe_file_type(info.st_mode) + ")";
}

}  // namespace tokenspeed::metrics
