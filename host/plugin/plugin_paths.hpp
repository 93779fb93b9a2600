// plugin_paths.hpp — why a plugin directory or a plugin file found in one
// cannot be used, in the words of a message ("is a FIFO, not a directory",
// "is a broken symlink to 'x.so'"). Looks at the file system only; never
// opens a plugin.
#pragma once

#include <string>

namespace tokenspeed::metrics {

// "" when path is a directory (symlinks followed); otherwise "not found",
// "is a file, not a directory", "is a FIFO, not a directory", "is a symlink
// loop", "is a broken symlink to '<target>'" or "cannot be examined: <error>".
std::string plugin_directory_problem(const std::string& path);

// "" when path is a regular file (symlinks followed); otherwise "is a
// directory", "is not a regular file (a FIFO)", "is a symlink loop", "is a
// broken symlink to '<target>'" or "cannot be examined: <error>".
std::string plugin_file_problem(const std::string& path);

}  // namespace tokenspeed::metrics
