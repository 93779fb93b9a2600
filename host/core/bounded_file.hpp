// bounded_file.hpp — how the host opens and reads a file it was told to read
// at startup (the reporter configuration, plugin files): only a regular file,
// opened without ever blocking on a FIFO, and read up to a size bound. Never
// used on the hot path.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace tokenspeed::metrics {

// The largest reporter configuration file the host reads. Real files are a
// few kilobytes; the bound keeps /dev/zero-like mistakes from exhausting memory.
inline constexpr std::size_t kConfigurationFileLimit = std::size_t{16} << 20;

// Why a file could not be opened or read, without the path: "is a directory",
// "is not a regular file (a FIFO)", "is larger than the limit of 16 MiB",
// "cannot be opened: No such file or directory". The caller names the file.
class FileReadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An open descriptor, closed on destruction.
class FileHandle {
 public:
  explicit FileHandle(int fd) noexcept : fd_(fd) {}
  ~FileHandle();
  FileHandle(FileHandle&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;
  FileHandle& operator=(FileHandle&&) = delete;
  int get() const noexcept { return fd_; }

 private:
  int fd_;
};

// Opens path read-only (O_NONBLOCK | O_CLOEXEC, so a FIFO never blocks the
// open) and checks with fstat that it is a regular file; symlinks are
// followed. Throws FileReadError otherwise.
FileHandle open_regular_file(const std::string& path);

// What is left to read of file (opened by open_regular_file), at most limit
// bytes. Throws FileReadError when there is more (the file grew past the
// limit while being read) or a read fails.
std::string read_bounded(const FileHandle& file, std::size_t limit);

// The whole content of the regular file at path, at most limit bytes.
// Throws FileReadError when it cannot be opened, is not a regular file, is
// larger than limit (also when it grows past it while being read) or a read
// fails.
std::string read_bounded_file(const std::string& path, std::size_t limit);

// "16 MiB", "64 KiB", "100 bytes": a size as the messages say it.
std::string describe_size(std::size_t bytes);

// "a directory", "a FIFO", "a socket", "a character device", "a block
// device", "a symbolic link", "a regular file": the kind of file of an
// st_mode, for messages.
std::string describe_file_type(unsigned mode);

}  // namespace tokenspeed::metrics
