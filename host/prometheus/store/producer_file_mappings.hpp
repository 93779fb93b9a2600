// producer_file_mappings.hpp — keeps each producer file of the run directory
// mapped (read-only) from one scrape to the next, so a scrape neither maps
// nor unmaps a file that did not change: an munmap in the multi-threaded
// launcher is a TLB shootdown on every core, and a fresh mapping faults its
// pages in again. Scrape time only; never writes to a file.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <sys/types.h>
#include <unordered_map>
#include <vector>

#include "core/thread_safety.hpp"

namespace tokenspeed::metrics {

// A read-only shared mapping of a whole file as it was when mapped.
class FileMapping {
 public:
  // Maps size bytes of the open file fd; data() is null when that fails.
  FileMapping(int fd, std::size_t size) noexcept;
  ~FileMapping();
  FileMapping(const FileMapping&) = delete;
  FileMapping& operator=(const FileMapping&) = delete;
  const std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

// Threading: any thread; concurrent scrapes share it (one mutex, held only
// to look a file up, never while a file is read). A mapping a scrape holds
// stays valid until that scrape lets it go, even when the file was replaced.
class ProducerFileMappings {
 public:
  // The mapping of the regular file at path, covering all of it: the one
  // kept from an earlier call when it is the same file (device and inode)
  // of the same size, otherwise a new one that replaces it. Null when the
  // file cannot be opened (never following a symbolic link) or mapped.
  std::shared_ptr<const FileMapping> map(const std::filesystem::path& path);
  // Lets go of the mappings of every file not in present (the producer
  // files a scrape found in the directory).
  void keep_only(const std::vector<std::filesystem::path>& present);
  // How many mappings were made so far (a file not mapped again counts once).
  std::size_t mappings_made() const;

 private:
  struct Entry {
    dev_t device = 0;
    ino_t inode = 0;
    std::shared_ptr<const FileMapping> mapping;
  };
  mutable Mutex mutex_;
  std::unordered_map<std::string, Entry> files_ TSM_GUARDED_BY(mutex_);
  std::size_t made_ TSM_GUARDED_BY(mutex_) = 0;
};

}  // namespace tokenspeed::metrics
