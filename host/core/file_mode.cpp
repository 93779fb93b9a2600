// file_mode.cpp — stat(2) of a file's permission bits.
#include "core/file_mode.hpp"

#include <sys/stat.h>

#include <cstdio>

namespace tokenspeed::metrics {

std::optional<unsigned> readable_by_others(const std::string& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0 || !S_ISREG(status.st_mode)) return std::nullopt;
  if ((status.st_mode & (S_IRGRP | S_IROTH)) == 0) return std::nullopt;
  return static_cast<unsigned>(status.st_mode & 07777);
}

std::string mode_text(unsigned mode) {
  char octal[16];
  std::snprintf(octal, sizeof octal, "%04o", mode & 07777);
  return octal;
}

}  // namespace tokenspeed::metrics
