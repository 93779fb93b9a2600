// producer_file_mappings.cpp — the run directory's files kept mapped between
// scrapes; a file is mapped again only when it was replaced or changed size.
#include "prometheus/store/producer_file_mappings.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <unordered_set>

namespace tokenspeed::metrics {

FileMapping::FileMapping(int fd, std::size_t size) noexcept {
  if (size == 0) return;
  void* base = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return;
  data_ = static_cast<const std::byte*>(base);
  size_ = size;
}

FileMapping::~FileMapping() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

std::shared_ptr<const FileMapping> ProducerFileMappings::map(const std::filesystem::path& path) {
  // The file as it is now, by name: no descriptor is opened for a file
  // that is already mapped and unchanged. A file of another size is mapped
  // again: a store grows its file, and shrinks it to its records once closed
  // or once its writer is gone (the records read never pass the new end).
  struct stat now {};
  if (::lstat(path.c_str(), &now) != 0 || !S_ISREG(now.st_mode)) return nullptr;
  const auto size = static_cast<std::size_t>(now.st_size);
  {
    MutexLock lock(mutex_);
    const auto found = files_.find(path.string());
    if (found != files_.end() && found->second.device == now.st_dev &&
        found->second.inode == now.st_ino && found->second.mapping->size() == size) {
      return found->second.mapping;
    }
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return nullptr;
  struct stat opened {};
  std::shared_ptr<const FileMapping> mapping;
  if (::fstat(fd, &opened) == 0 && S_ISREG(opened.st_mode)) {
    mapping = std::make_shared<const FileMapping>(fd, static_cast<std::size_t>(opened.st_size));
  }
  ::close(fd);
  if (!mapping || mapping->data() == nullptr) return nullptr;
  MutexLock lock(mutex_);
  ++made_;
  files_[path.string()] = Entry{opened.st_dev, opened.st_ino, mapping};
  return mapping;
}

void ProducerFileMappings::keep_only(const std::vector<std::filesystem::path>& present) {
  std::unordered_set<std::string> names;
  for (const std::filesystem::path& path : present) names.insert(path.string());
  std::vector<std::shared_ptr<const FileMapping>> released;  // unmapped outside the lock
  MutexLock lock(mutex_);
  for (auto it = files_.begin(); it != files_.end();) {
    if (names.contains(it->first)) {
      ++it;
    } else {
      released.push_back(std::move(it->second.mapping));
      it = files_.erase(it);
    }
  }
}

std::size_t ProducerFileMappings::mappings_made() const {
  MutexLock lock(mutex_);
  return made_;
}

}  // namespace tokenspeed::metrics
