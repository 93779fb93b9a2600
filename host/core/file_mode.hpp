// file_mode.hpp — whether a file that holds a secret can be read by users
// other than its owner, for the start-up warnings about configuration files
// and private keys. Startup only.
#pragma once

#include <optional>
#include <string>

namespace tokenspeed::metrics {

// The permission bits of path when it is a regular file that users other
// than its owner may read (the group or the other read bit); nothing for
// anything else (a pipe, a terminal, a file that is gone).
std::optional<unsigned> readable_by_others(const std::string& path);

// The permission bits as chmod writes them: "0644".
std::string mode_text(unsigned mode);

}  // namespace tokenspeed::metrics
