// multiprocess_metric_store.hpp — a MetricStore whose slots live in a
// memory-mapped file of this producer process inside the run directory, and
// the reader the launcher uses to enumerate such files at scrape time.
// Slots never move and the hot path never touches the file (only the slots).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/fault_log.hpp"
#include "core/metric_store.hpp"
#include "core/thread_safety.hpp"
#include "prometheus/store/multiprocess_run_dir.hpp"

namespace tokenspeed::metrics {

// File layout (native byte order; the file never leaves the machine):
//   region 0 starts with a 64-byte header: magic "TSMPROM2", version 2, header
//   size, region size, writer pid and start time, the used size (published
//   with release ordering after a record is complete), a closed flag.
//   Records follow, 8-byte aligned, never straddling a region boundary:
//     u32 record_size, u32 slot_count, u32 name_size, u32 label_count,
//     name bytes, per label value (u32 size, bytes), zero padding to 8,
//     slot_count doubles.
//   A record with slot_count 0 is a family's definition: name, one "label
//   value" holding the definition as JSON (metric_definition_record.hpp).
//   It precedes the family's first series.
//   A record_size of 0 means "the rest of this region is unused".
//   The file grows by whole regions; each region is mapped on its own, so
//   slots handed out earlier stay where they are.
// The steps of adding a record, in the order the writer takes them: a
// reader of a writer that died after any of them (or within one) must find
// the file whole (test/unit/prometheus/store/store_crash_points_test.cpp).
enum class StoreWriteStep {
  region_mapped,
  header_written,
  labels_written,
  slots_zeroed,
  published
};

struct MultiprocessStoreOptions {
  std::filesystem::path directory;       // the run directory (must exist)
  std::string file_prefix = "producer";  // file name: <prefix>_<pid>.db
  std::size_t region_bytes = 1u << 20;   // multiple of the page size, at most 4 GiB
  SeriesBound bound = {};                // series per family (metric_store.hpp)
  // Tests only: called after each step of adding a record, under the
  // writer's lock, to look at the file as a writer dying there leaves it.
  std::function<void(StoreWriteStep)> after_write_step;
  // A file that cannot be created (a full file system): false throws
  // StartupError naming the file and --metrics-multiproc-dir (the launcher
  // at start-up); true records on with every series in memory (a producer:
  // recording never raises for it), counted and logged.
  bool keep_in_memory_without_file = false;
};

// What a store could not keep in its file, for reports.
struct UnstoredFigures {
  std::uint64_t series = 0;  // series whose slots live in this process's memory only
  std::uint64_t events = 0;  // events recorded into them: not on /metrics
};

// The self-metric of the events recorded into series a store kept in memory.
const MetricDefinition& unstored_events_definition();

// Threading: allocate_series may be called from any thread (it locks, may
// grow the file, and throws std::length_error for a series larger than a
// region); the slots it returns are updated through std::atomic_ref by
// collector threads without any lock. When the file cannot grow (a full file
// system) or is closed, a new series gets slots in this process's memory:
// recording goes on and reaches the external outputs, the series is missing
// from /metrics, and every event recorded into it is counted
// (unstored_events_slot, tokenspeed_metrics_prometheus_unstored_events_total,
// a rate-limited line). Readers in other processes never
// block a writer. The store belongs to the process that created it: a forked
// child must create its own.
class MultiprocessMetricStore final : public MetricStore {
 public:
  explicit MultiprocessMetricStore(MultiprocessStoreOptions options);
  ~MultiprocessMetricStore() override;
  MultiprocessMetricStore(const MultiprocessMetricStore&) = delete;
  MultiprocessMetricStore& operator=(const MultiprocessMetricStore&) = delete;

  // The same (metric, label values) returns the same slots.
  double* allocate_series(const MetricDefinition& metric,
                          std::span<const std::string> label_values) override;

  double* unstored_events_slot(const double* slots) const noexcept override;

  const std::filesystem::path& file_path() const noexcept { return path_; }
  // False when the file could not be created (keep_in_memory_without_file).
  bool has_file() const noexcept { return fd_ >= 0; }

  UnstoredFigures unstored() const;

  // Marks the file closed (its live gauges disappear from the merge even if
  // this process lives on) and gives back the space it reserved past what
  // it uses: the file shrinks to its records, which stay on /metrics. Series
  // made afterwards stay in memory. Called by the destructor; idempotent.
  void close() noexcept;

 private:
  struct Region {
    std::byte* base;
    std::size_t offset;  // file offset of the region
  };
  // Under mutex_, or from the constructor.
  std::byte* map_new_region() TSM_REQUIRES(mutex_);
  void without_file(const std::string& why) TSM_REQUIRES(mutex_);
  // The record's slots in the file, or null when it does not fit there and
  // the file cannot grow (why says why).
  double* append_record_locked(const std::string& name, std::span<const std::string> label_values,
                               std::size_t slot_count, std::string& why) TSM_REQUIRES(mutex_);
  double* memory_slots_locked(std::size_t slot_count) TSM_REQUIRES(mutex_);
  void count_unstored_locked(const MetricDefinition& metric, const std::string& why)
      TSM_REQUIRES(mutex_);

  MultiprocessStoreOptions options_;
  std::filesystem::path path_;
  int fd_ = -1;
  bool closed_ = false;
  mutable Mutex mutex_;
  std::vector<Region> regions_ TSM_GUARDED_BY(mutex_);
  // The writer's copy of the published used size.
  std::uint64_t used_ TSM_GUARDED_BY(mutex_) = 0;
  std::unordered_map<std::string, double*> interned_ TSM_GUARDED_BY(mutex_);
  // Families whose definition is written.
  std::unordered_set<std::string> defined_ TSM_GUARDED_BY(mutex_);
  // Bytes kept free at the end of each region for the unstored-events
  // series, so it reaches the file when the file can grow no more.
  std::size_t reserve_bytes_ TSM_GUARDED_BY(mutex_) = 0;
  // Null until a series is kept in memory.
  double* unstored_events_ TSM_GUARDED_BY(mutex_) = nullptr;
  std::uint64_t unstored_series_ TSM_GUARDED_BY(mutex_) = 0;
  // Slots of series not in the file, and their addresses.
  std::vector<std::unique_ptr<double[]>> memory_ TSM_GUARDED_BY(mutex_);
  std::unordered_set<const double*> memory_slots_ TSM_GUARDED_BY(mutex_);
  std::unique_ptr<FaultLog> fault_log_;
  std::string memory_reason_ = "the metric file is closed";  // why series go to memory then
};

// One series as read from a producer file. The views live only during the
// visit; slots are read with relaxed atomic loads (a copy).
struct MultiprocessSeriesView {
  std::string_view metric_name;
  std::span<const std::string_view> label_values;
  std::span<const double> slots;
};

struct MultiprocessFileInfo {
  std::filesystem::path path;
  ProcessInstance writer;
  bool live = false;       // writer alive and file not closed
  bool closed = false;     // the writer closed it (and gave back its reserved space)
  std::uint64_t used = 0;  // bytes of header and records
};

// Gives back the space a writer that ended without closing its file (killed)
// had reserved: truncates the file to the pages its records use, which stay
// readable. Only when the writer is gone: it is not alive (pid and start
// time) and no process holds the lock every writer keeps on its file. Never
// touches another file; true when it truncated. Launcher, scrape time.
bool reclaim_exited_writer_file(const std::filesystem::path& path) noexcept;

// The producer files (*.db) of dir whose writer is gone and started before
// started_before (a ProcessInstance start time): when a directory is reused
// across runs, an earlier run's. Reads each file's header only; sorted.
std::vector<std::filesystem::path> files_of_earlier_gone_writers(const std::filesystem::path& dir,
                                                                 std::uint64_t started_before);

// Reads one producer file; returns false (visiting nothing) when the file is
// not a valid store file. Each family's definition reaches on_definition
// (when given) before its first series reaches visit. Never writes to the
// file and never blocks its writer.
bool read_multiprocess_file(const std::filesystem::path& path,
                            const std::function<void(const MultiprocessFileInfo&)>& on_file,
                            const std::function<void(const MultiprocessSeriesView&)>& visit,
                            const std::function<void(const MetricDefinition&)>& on_definition = {});
// The same from a mapping of the file's first bytes (ProducerFileMappings):
// records past its end are left for a later, larger mapping.
bool read_multiprocess_mapping(const std::filesystem::path& path, std::span<const std::byte> mapped,
                               const std::function<void(const MultiprocessFileInfo&)>& on_file,
                               const std::function<void(const MultiprocessSeriesView&)>& visit,
                               const std::function<void(const MetricDefinition&)>& on_definition);

}  // namespace tokenspeed::metrics
