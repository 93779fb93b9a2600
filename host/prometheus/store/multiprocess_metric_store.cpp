// multiprocess_metric_store.cpp — writing records into a producer's mapped
// file (or, when the file cannot grow, slots in memory, counted) and reading
// them back at scrape time. Only allocate_series and the reader live here;
// slot updates never call into this file.
#include "prometheus/store/multiprocess_metric_store.hpp"

#include "config/metrics_flag_table.hpp"
#include "prometheus/store/metric_definition_record.hpp"

#include "core/exponential_slot_reader.hpp"

#include <tokenspeed/metrics/startup_error.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <fcntl.h>
#include <stdexcept>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace tokenspeed::metrics {
namespace {

constexpr char kMagic[8] = {'T', 'S', 'M', 'P', 'R', 'O', 'M', '2'};
constexpr std::uint32_t kVersion = 2;
// The largest region a writer makes and a reader accepts (a record's size is
// a u32, so a larger region could never be filled).
constexpr std::uint64_t kMaxRegionBytes = std::uint64_t{1} << 32;

struct FileHeader {
  char magic[8];
  std::uint32_t version;
  std::uint32_t header_size;
  std::uint64_t region_bytes;
  std::int64_t pid;
  std::uint64_t start_time;
  std::uint64_t used;    // std::atomic_ref: release on publish, acquire on read
  std::uint32_t closed;  // std::atomic_ref
  std::uint32_t reserved0;
  std::uint64_t reserved1;
};
static_assert(sizeof(FileHeader) == 64);

struct RecordHeader {
  std::uint32_t record_size;
  std::uint32_t slot_count;
  std::uint32_t name_size;
  std::uint32_t label_count;
};
static_assert(sizeof(RecordHeader) == 16);

static_assert(std::atomic_ref<double>::is_always_lock_free);
static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free);

constexpr std::size_t round8(std::size_t n) noexcept { return (n + 7) & ~std::size_t{7}; }

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

// How often the line about series kept in memory may be written.
constexpr std::chrono::seconds kUnstoredLogInterval{10};

// The bytes of one record (header, name, labels, padding, slots).
std::size_t record_size(std::string_view name, std::span<const std::string> label_values,
                        std::size_t slot_count) noexcept {
  std::size_t header_bytes = sizeof(RecordHeader) + name.size();
  for (const std::string& value : label_values)
    header_bytes += sizeof(std::uint32_t) + value.size();
  return round8(header_bytes) + slot_count * sizeof(double);
}

std::string series_key(std::string_view name, std::span<const std::string> labels) {
  std::string key(name);
  key.push_back('\0');
  for (const std::string& value : labels) {
    key += std::to_string(value.size());
    key.push_back(':');
    key += value;
  }
  return key;
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) noexcept : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const noexcept { return fd_; }

 private:
  int fd_;
};

class Mapping {
 public:
  Mapping(int fd, std::size_t size) noexcept
      : size_(size), base_(::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0)) {}
  ~Mapping() {
    if (base_ != MAP_FAILED) ::munmap(base_, size_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  const std::byte* data() const noexcept {
    return base_ == MAP_FAILED ? nullptr : static_cast<const std::byte*>(base_);
  }

 private:
  std::size_t size_;
  void* base_;
};

template <typename T>
T load_relaxed(const T* where) noexcept {
  return std::atomic_ref<T>(*const_cast<T*>(where)).load(std::memory_order_relaxed);
}

}  // namespace

MultiprocessMetricStore::MultiprocessMetricStore(MultiprocessStoreOptions options)
    : MetricStore(options.bound), options_(std::move(options)) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  if (options_.region_bytes < page || options_.region_bytes % page != 0 ||
      options_.region_bytes > kMaxRegionBytes) {
    throw std::invalid_argument(
        "multiprocess store: region size must be a multiple of the page size, at most 4 GiB");
  }
  fault_log_ = std::make_unique<FaultLog>(
      "prometheus", kUnstoredLogInterval,
      options_.bound.log ? options_.bound.log : LogWriter(write_log_line_to_stderr));
  {
    const std::string payload[] = {encode_definition(unstored_events_definition())};
    reserve_bytes_ = record_size(unstored_events_definition().name, payload, 0) +
                     record_size(unstored_events_definition().name, {}, 1);
  }
  const ProcessInstance self = current_process_instance();
  for (int attempt = 0; fd_ < 0; ++attempt) {
    std::string name = options_.file_prefix + "_" + std::to_string(self.pid);
    if (attempt > 0) name += "_" + std::to_string(attempt);
    path_ = options_.directory / (name + ".db");
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd_ < 0 && (errno != EEXIST || attempt > 1000)) {
      const std::string why = std::strerror(errno);
      if (!options_.keep_in_memory_without_file) {
        throw StartupError(
            {"prometheus", path_.string(), flag_spelling(metrics_flag(&Options::multiproc_dir))},
            "cannot create the metric file: " + why);
      }
      without_file(why);
      return;
    }
  }
  // Held while this process (or a child it forked) has the file open:
  // tells reclaim_exited_writer_file the writer still lives.
  static_cast<void>(::flock(fd_, LOCK_SH | LOCK_NB));
  try {
    std::byte* first = map_new_region();
    FileHeader header{};
    std::memcpy(header.magic, kMagic, sizeof kMagic);
    header.version = kVersion;
    header.header_size = sizeof(FileHeader);
    header.region_bytes = options_.region_bytes;
    header.pid = self.pid;
    header.start_time = self.start_time;
    header.used = sizeof(FileHeader);
    std::memcpy(first, &header, sizeof header);
    used_ = sizeof(FileHeader);
    // The header is complete before a reader can trust the magic of a
    // published used size; a reader that sees a zero magic skips the file.
    std::atomic_thread_fence(std::memory_order_release);
  } catch (...) {
    for (const Region& region : regions_) ::munmap(region.base, options_.region_bytes);
    regions_.clear();
    ::close(fd_);
    fd_ = -1;
    ::unlink(path_.c_str());
    int code = 0;
    try {
      throw;
    } catch (const std::system_error& error) {
      code = error.code().value();
    }
    const std::string why = std::strerror(code);
    if (!options_.keep_in_memory_without_file) {
      throw StartupError(
          {"prometheus", path_.string(), flag_spelling(metrics_flag(&Options::multiproc_dir))},
          "cannot create the metric file: " + why);
    }
    without_file(why);
  }
}

void MultiprocessMetricStore::without_file(const std::string& why) {
  fd_ = -1;
  closed_ = true;  // nothing to grow: every series goes to memory
  memory_reason_ = "no metric file: " + why;
  unstored_events_ = memory_slots_locked(1);
  fault_log_->message("cannot create the metric file " + path_.string() + ": " + why +
                          "; this process's series are kept in memory and are not on /metrics "
                          "(events recorded into them are counted in its close report)",
                      FaultLog::Clock::now());
}

const MetricDefinition& unstored_events_definition() {
  static const MetricDefinition definition{
      "tokenspeed_metrics_prometheus_unstored_events",
      MetricKind::counter,
      "Events recorded into series that a process kept in memory because its metric file "
      "could not grow (a full file system under --metrics-multiproc-dir): they reached the "
      "external outputs but are missing from the other series of /metrics.",
      "events",
      {},
      {},
      GaugeMode::livemax};
  return definition;
}

double* MultiprocessMetricStore::unstored_events_slot(const double* slots) const noexcept {
  MutexLock lock(mutex_);
  return memory_slots_.contains(slots) ? unstored_events_ : nullptr;
}

UnstoredFigures MultiprocessMetricStore::unstored() const {
  MutexLock lock(mutex_);
  UnstoredFigures figures;
  figures.series = unstored_series_;
  if (unstored_events_ != nullptr) {
    figures.events = static_cast<std::uint64_t>(load_relaxed(unstored_events_));
  }
  return figures;
}

double* MultiprocessMetricStore::memory_slots_locked(std::size_t slot_count) {
  memory_.push_back(std::make_unique<double[]>(std::max<std::size_t>(slot_count, 1)));
  double* slots = memory_.back().get();
  memory_slots_.insert(slots);
  return slots;
}

void MultiprocessMetricStore::count_unstored_locked(const MetricDefinition& metric,
                                                    const std::string& why) {
  ++unstored_series_;
  if (unstored_events_ == nullptr) {
    // The first series kept in memory: the counter of their events goes
    // into the space every region keeps free for it (never into a closed
    // file: it may end right after its records).
    reserve_bytes_ = 0;
    std::string ignored;
    const std::string payload[] = {encode_definition(unstored_events_definition())};
    if (!closed_ &&
        append_record_locked(unstored_events_definition().name, payload, 0, ignored) != nullptr) {
      unstored_events_ = append_record_locked(unstored_events_definition().name, {}, 1, ignored);
    }
    if (unstored_events_ == nullptr) unstored_events_ = memory_slots_locked(1);
  }
  static_cast<void>(metric);
  fault_log_->report(
      "series kept in memory, not on /metrics (" + why +
          "; events recorded into them are counted in " +
          (fd_ >= 0 ? unstored_events_definition().name + "_total" : "the close report") + ")",
      1, FaultLog::Clock::now());
}

MultiprocessMetricStore::~MultiprocessMetricStore() {
  close();
  for (const Region& region : regions_) ::munmap(region.base, options_.region_bytes);
  if (fd_ >= 0) ::close(fd_);
}

void MultiprocessMetricStore::close() noexcept {
  MutexLock lock(mutex_);
  try {
    if (fault_log_) fault_log_->flush(FaultLog::Clock::now());  // counts not yet written
  } catch (...) {
    // A line that cannot be written changes nothing recorded.
  }
  if (closed_ || regions_.empty()) return;
  auto* header = reinterpret_cast<FileHeader*>(regions_.front().base);
  std::atomic_ref<std::uint32_t>(header->closed).store(1, std::memory_order_release);
  closed_ = true;
  // The records stay (a dead process's counters stay on /metrics); the
  // space reserved past them goes back. Nothing is written past used_ from
  // now on (closed_ sends new series to memory), and readers never read past
  // the published used size, so neither side touches a page beyond the end.
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t keep = (used_ + page - 1) / page * page;
  if (keep < regions_.size() * std::uint64_t{options_.region_bytes}) {
    static_cast<void>(::ftruncate(fd_, static_cast<off_t>(keep)));
  }
}

std::byte* MultiprocessMetricStore::map_new_region() {
  const std::size_t offset = regions_.size() * options_.region_bytes;
  const int rc =
      ::posix_fallocate(fd_, static_cast<off_t>(offset), static_cast<off_t>(options_.region_bytes));
  if (rc != 0) {
    // Some file systems cannot reserve space; extend the file instead.
    if (rc != EOPNOTSUPP && rc != EINVAL) {
      errno = rc;
      throw_errno("cannot grow " + path_.string());
    }
    if (::ftruncate(fd_, static_cast<off_t>(offset + options_.region_bytes)) != 0) {
      throw_errno("cannot grow " + path_.string());
    }
  }
  void* base = ::mmap(nullptr, options_.region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_,
                      static_cast<off_t>(offset));
  if (base == MAP_FAILED) throw_errno("cannot map " + path_.string());
  regions_.push_back(Region{static_cast<std::byte*>(base), offset});
  return regions_.back().base;
}

double* MultiprocessMetricStore::allocate_series(const MetricDefinition& metric,
                                                 std::span<const std::string> label_values) {
  std::string key = series_key(metric.name, label_values);
  MutexLock lock(mutex_);
  if (auto found = interned_.find(key); found != interned_.end()) return found->second;
  // A family's definition precedes its first series in the file, so a reader
  // renders the engine's own metrics without knowing them in advance.
  std::string why = closed_ ? memory_reason_ : "";
  double* slots = nullptr;
  if (!closed_ && !defined_.contains(metric.name)) {
    const std::string payload[] = {encode_definition(metric)};
    if (append_record_locked(metric.name, payload, 0, why) != nullptr) defined_.insert(metric.name);
  }
  if (!closed_ && defined_.contains(metric.name)) {
    slots = append_record_locked(metric.name, label_values, series_slot_count(metric), why);
  }
  if (slots == nullptr) {
    slots = memory_slots_locked(series_slot_count(metric));
    count_unstored_locked(metric, why);
  }
  interned_.emplace(std::move(key), slots);
  return slots;
}

double* MultiprocessMetricStore::append_record_locked(const std::string& name,
                                                      std::span<const std::string> label_values,
                                                      std::size_t slot_count, std::string& why) {
  const std::size_t record_bytes = record_size(name, label_values, slot_count);
  const std::size_t header_bytes = record_bytes - slot_count * sizeof(double);
  if (record_bytes > options_.region_bytes - sizeof(FileHeader) || name.size() > UINT32_MAX) {
    throw std::length_error("multiprocess store: series '" + name + "' does not fit in a region");
  }

  // Each region keeps reserve_bytes_ free at its end until the
  // unstored-events series is written (count_unstored_locked), unless the
  // record is too large to leave it.
  const std::size_t reserve =
      record_bytes + reserve_bytes_ <= options_.region_bytes - sizeof(FileHeader) ? reserve_bytes_
                                                                                  : 0;
  std::uint64_t used = used_;
  std::size_t within = used % options_.region_bytes;
  if (within + record_bytes + reserve > options_.region_bytes) {
    used += options_.region_bytes - within;  // the tail stays zero: "skip"
    within = 0;
  }
  const std::size_t index = used / options_.region_bytes;
  try {
    while (regions_.size() <= index) {
      map_new_region();
      if (options_.after_write_step) options_.after_write_step(StoreWriteStep::region_mapped);
    }
  } catch (const std::system_error& error) {
    // Blocks a failed posix_fallocate may have taken past the end go back.
    static_cast<void>(
        ::ftruncate(fd_, static_cast<off_t>(regions_.size() * options_.region_bytes)));
    why = "cannot grow " + path_.string() + ": " + std::strerror(error.code().value());
    return nullptr;
  }
  used_ = used;
  std::byte* record = regions_[index].base + within;

  RecordHeader header{
      static_cast<std::uint32_t>(record_bytes), static_cast<std::uint32_t>(slot_count),
      static_cast<std::uint32_t>(name.size()), static_cast<std::uint32_t>(label_values.size())};
  std::byte* out = record;
  std::memcpy(out, &header, sizeof header);
  out += sizeof header;
  if (options_.after_write_step) options_.after_write_step(StoreWriteStep::header_written);
  std::memcpy(out, name.data(), name.size());
  out += name.size();
  for (const std::string& value : label_values) {
    const auto size = static_cast<std::uint32_t>(value.size());
    std::memcpy(out, &size, sizeof size);
    out += sizeof size;
    std::memcpy(out, value.data(), value.size());
    out += value.size();
  }
  if (options_.after_write_step) options_.after_write_step(StoreWriteStep::labels_written);
  auto* slots = reinterpret_cast<double*>(record + header_bytes);
  for (std::size_t i = 0; i < slot_count; ++i) {
    std::atomic_ref<double>(slots[i]).store(0.0, std::memory_order_relaxed);
  }
  if (options_.after_write_step) options_.after_write_step(StoreWriteStep::slots_zeroed);

  used_ += record_bytes;
  auto* file_header = reinterpret_cast<FileHeader*>(regions_.front().base);
  std::atomic_ref<std::uint64_t>(file_header->used).store(used_, std::memory_order_release);
  if (options_.after_write_step) options_.after_write_step(StoreWriteStep::published);
  return slots;
}

namespace {

// The checked header of an open producer file and its published used size.
struct FileHead {
  FileHeader header{};
  std::uint64_t used = 0;
};

// The header of a file mapped at mapped (at least a header's size).
std::optional<FileHead> file_head(const std::byte* mapped_bytes) {
  FileHead head;
  const auto* mapped = reinterpret_cast<const FileHeader*>(mapped_bytes);
  head.used = std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(mapped->used))
                  .load(std::memory_order_acquire);
  std::memcpy(&head.header, mapped, sizeof head.header);
  head.header.closed = std::atomic_ref<std::uint32_t>(const_cast<std::uint32_t&>(mapped->closed))
                           .load(std::memory_order_acquire);
  const FileHeader& header = head.header;
  // A region holds the header and whole 8-byte records; the bound keeps the
  // offset arithmetic of the records far from overflow.
  if (std::memcmp(header.magic, kMagic, sizeof kMagic) != 0 || header.version != kVersion ||
      header.header_size != sizeof(FileHeader) || header.region_bytes <= sizeof(FileHeader) ||
      header.region_bytes % 8 != 0 || header.region_bytes > kMaxRegionBytes) {
    return std::nullopt;
  }
  return head;
}

// One record of a file as decoded in place.
struct RecordView {
  std::size_t size = 0;  // bytes; 0: the rest of the region is unused
  std::string_view name;
  const double* slots = nullptr;  // in the mapping; slot_count 0: a family's definition
  std::uint32_t slot_count = 0;
};

// Decodes the record at offset (its labels into labels); false when it is
// corrupt, which ends the reading of the file.
bool decode_record(const std::byte* base, std::size_t offset, std::size_t region_end,
                   std::size_t limit, std::vector<std::string_view>& labels, RecordView& out) {
  RecordHeader record{};
  if (region_end - offset >= sizeof(RecordHeader)) {
    std::memcpy(&record, base + offset, sizeof record);
  }
  out = RecordView{};
  if (record.record_size == 0) return true;
  if (record.record_size % 8 != 0 || record.record_size < sizeof record ||
      record.record_size > region_end - offset || offset + record.record_size > limit) {
    return false;
  }
  const std::byte* end = base + offset + record.record_size;
  const std::byte* p = base + offset + sizeof record;
  const std::size_t slot_bytes = std::size_t{record.slot_count} * sizeof(double);
  if (slot_bytes > record.record_size - sizeof record ||
      record.name_size > static_cast<std::size_t>(end - p) - slot_bytes) {
    return false;
  }
  const std::byte* slot_begin = end - slot_bytes;
  out.name = std::string_view(reinterpret_cast<const char*>(p), record.name_size);
  p += record.name_size;
  labels.clear();
  for (std::uint32_t i = 0; i < record.label_count; ++i) {
    std::uint32_t size = 0;
    if (static_cast<std::size_t>(slot_begin - p) < sizeof size) return false;
    std::memcpy(&size, p, sizeof size);
    p += sizeof size;
    if (static_cast<std::size_t>(slot_begin - p) < size) return false;
    labels.emplace_back(reinterpret_cast<const char*>(p), size);
    p += size;
  }
  out.size = record.record_size;
  out.slots = reinterpret_cast<const double*>(slot_begin);
  out.slot_count = record.slot_count;
  return true;
}

std::optional<FileHead> read_file_head(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) ||
      static_cast<std::size_t>(info.st_size) < sizeof(FileHeader)) {
    return std::nullopt;
  }
  Mapping mapping(fd, sizeof(FileHeader));
  if (mapping.data() == nullptr) return std::nullopt;
  return file_head(mapping.data());
}

// The records of a file whose first limit bytes are mapped at base.
bool read_records(const std::filesystem::path& path, const FileHead& head, const std::byte* base,
                  std::size_t limit,
                  const std::function<void(const MultiprocessFileInfo&)>& on_file,
                  const std::function<void(const MultiprocessSeriesView&)>& visit,
                  const std::function<void(const MetricDefinition&)>& on_definition);

}  // namespace

bool read_multiprocess_file(const std::filesystem::path& path,
                            const std::function<void(const MultiprocessFileInfo&)>& on_file,
                            const std::function<void(const MultiprocessSeriesView&)>& visit,
                            const std::function<void(const MetricDefinition&)>& on_definition) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (fd.get() < 0) return false;
  const std::optional<FileHead> head = read_file_head(fd.get());
  if (!head) return false;
  // The file grows before a larger used size is published, so a fresh stat
  // covers everything up to `used`.
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return false;
  const std::size_t limit =
      std::min<std::size_t>(head->used, static_cast<std::size_t>(info.st_size));
  Mapping body(fd.get(), limit);
  if (body.data() == nullptr) return false;
  return read_records(path, *head, body.data(), limit, on_file, visit, on_definition);
}

bool read_multiprocess_mapping(const std::filesystem::path& path, std::span<const std::byte> mapped,
                               const std::function<void(const MultiprocessFileInfo&)>& on_file,
                               const std::function<void(const MultiprocessSeriesView&)>& visit,
                               const std::function<void(const MetricDefinition&)>& on_definition) {
  if (mapped.size() < sizeof(FileHeader)) return false;
  const std::optional<FileHead> head = file_head(mapped.data());
  if (!head) return false;
  // Records published after the file outgrew the mapping wait for the next
  // mapping; a record never straddles a region, and the mapping ends at one.
  const std::size_t limit = std::min<std::size_t>(head->used, mapped.size());
  return read_records(path, *head, mapped.data(), limit, on_file, visit, on_definition);
}

namespace {

bool read_records(const std::filesystem::path& path, const FileHead& head, const std::byte* base,
                  std::size_t limit,
                  const std::function<void(const MultiprocessFileInfo&)>& on_file,
                  const std::function<void(const MultiprocessSeriesView&)>& visit,
                  const std::function<void(const MetricDefinition&)>& on_definition) {
  MultiprocessFileInfo file;
  file.path = path;
  file.writer = ProcessInstance{static_cast<pid_t>(head.header.pid), head.header.start_time};
  file.live = head.header.closed == 0 && process_alive(file.writer);
  file.closed = head.header.closed != 0;
  file.used = head.used;
  if (on_file) on_file(file);

  const std::size_t region = head.header.region_bytes;
  std::vector<std::string_view> labels;
  std::vector<double> slots;
  std::unordered_set<std::string_view> exponential;  // families of exponential series
  std::size_t offset = sizeof(FileHeader);
  while (offset < limit && limit - offset >= sizeof(RecordHeader)) {
    const std::size_t region_end = (offset / region + 1) * region;
    RecordView record;
    if (!decode_record(base, offset, region_end, limit, labels, record)) break;  // corrupt
    if (record.size == 0) {  // rest of the region unused
      offset = region_end;
      continue;
    }
    if (record.slot_count == 0) {  // a family's definition
      if (labels.size() == 1) {
        if (const auto definition = decode_definition(record.name, labels.front())) {
          if (definition->exponential) exponential.emplace(record.name);
          if (on_definition) on_definition(*definition);
        }
      }
    } else {
      slots.resize(record.slot_count);
      if (exponential.contains(record.name)) {
        // Changed under a lock word: a copy of one published state (one
        // brought back from a writer stopped inside an observe), or marked
        // as none (an odd sequence) for the merge to count and leave out.
        if (copy_exponential_slots(record.slots, slots, !file.live) == ExponentialCopy::unsettled)
          slots[ExponentialSlot::sequence] = 1;
      } else {
        for (std::size_t i = 0; i < slots.size(); ++i) slots[i] = load_relaxed(record.slots + i);
      }
      visit(MultiprocessSeriesView{record.name, labels, slots});
    }
    offset += record.size;
  }
  return true;
}

}  // namespace

std::vector<std::filesystem::path> files_of_earlier_gone_writers(const std::filesystem::path& dir,
                                                                 std::uint64_t started_before) {
  std::vector<std::filesystem::path> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".db") continue;
    FileDescriptor fd(::open(entry.path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (fd.get() < 0) continue;
    const std::optional<FileHead> head = read_file_head(fd.get());
    if (!head) continue;
    const ProcessInstance writer{static_cast<pid_t>(head->header.pid), head->header.start_time};
    if (writer.start_time != 0 && writer.start_time < started_before && !process_alive(writer))
      found.push_back(entry.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

bool reclaim_exited_writer_file(const std::filesystem::path& path) noexcept {
  FileDescriptor fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (fd.get() < 0) return false;
  // A live writer holds a shared lock; an exclusive one means it is gone.
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return false;
  const std::optional<FileHead> head = read_file_head(fd.get());
  if (!head || head->header.closed != 0 ||
      process_alive(
          ProcessInstance{static_cast<pid_t>(head->header.pid), head->header.start_time})) {
    return false;
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return false;
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t keep = (head->used + page - 1) / page * page;
  if (keep >= static_cast<std::uint64_t>(info.st_size)) return false;
  return ::ftruncate(fd.get(), static_cast<off_t>(keep)) == 0;
}

}  // namespace tokenspeed::metrics
