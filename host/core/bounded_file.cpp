// bounded_file.cpp — the one place where startup files are opened and read:
// non-blocking open, fstat check, reads bounded by a limit.
#include "core/bounded_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tokenspeed::metrics {

FileHandle::~FileHandle() {
  if (fd_ >= 0) ::close(fd_);
}

std::string describe_file_type(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return "a regular file";
    case S_IFDIR:
      return "a directory";
    case S_IFIFO:
      return "a FIFO";
    case S_IFSOCK:
      return "a socket";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFLNK:
      return "a symbolic link";
    default:
      return "a file of unknown type";
  }
}

std::string describe_size(std::size_t bytes) {
  constexpr std::size_t kKiB = 1024;
  if (bytes >= kKiB * kKiB && bytes % (kKiB * kKiB) == 0)
    return std::to_string(bytes / (kKiB * kKiB)) + " MiB";
  if (bytes >= kKiB && bytes % kKiB == 0) return std::to_string(bytes / kKiB) + " KiB";
  return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
}

FileHandle open_regular_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  FileHandle file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (file.get() < 0) throw FileReadError(std::string("cannot be opened: ") + std::strerror(errno));
  struct stat info {};
  if (::fstat(file.get(), &info) != 0) {
    throw FileReadError(std::string("cannot be examined: ") + std::strerror(errno));
  }
  if (S_ISDIR(info.st_mode)) throw FileReadError("is a directory");
  if (!S_ISREG(info.st_mode)) {
    throw FileReadError("is not a regular file (" + describe_file_type(info.st_mode) + ")");
  }
  // Regular files ignore O_NONBLOCK, but clear it so no later reader is surprised.
  const int flags = ::fcntl(file.get(), F_GETFL);
  if (flags >= 0) ::fcntl(file.get(), F_SETFL, flags & ~O_NONBLOCK);
  return file;
}

std::string read_bounded(const FileHandle& file, std::size_t limit) {
  std::string contents;
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::read(file.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw FileReadError(std::string("cannot be read: ") + std::strerror(errno));
    if (n == 0) break;
    // The size can change after an fstat (a file still being written, or one
    // whose reported size is 0): the bound holds for what is read.
    if (contents.size() + static_cast<std::size_t>(n) > limit) {
      throw FileReadError("is larger than the limit of " + describe_size(limit));
    }
    contents.append(chunk, static_cast<std::size_t>(n));
  }
  return contents;
}

std::string read_bounded_file(const std::string& path, std::size_t limit) {
  const FileHandle file = open_regular_file(path);
  struct stat info {};
  if (::fstat(file.get(), &info) == 0 && static_cast<std::size_t>(info.st_size) > limit) {
    throw FileReadError("is larger than the limit of " + describe_size(limit) + " (" +
                        std::to_string(info.st_size) + " bytes)");
  }
  return read_bounded(file, limit);
}

}  // namespace tokenspeed::metrics
