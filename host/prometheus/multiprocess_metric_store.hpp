// multiprocess_metric_store.hpp — a MetricStore whose slots live in a
// memory-mapped file of this producer process inside the run directory, and
// the reader the launcher uses to enumerate such files at scrape time.
// Slots never move and the hot path never touches the file (only the slots).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/metric_store.hpp"
#include "prometheus/multiprocess_run_dir.hpp"

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
struct MultiprocessStoreOptions {
  std::filesystem::path directory;       // the run directory (must exist)
  std::string file_prefix = "producer";  // file name: <prefix>_<pid>.db
  std::size_t region_bytes = 1u << 20;   // multiple of the page size, at most 4 GiB
  SeriesBound bound;                     // series per family (metric_store.hpp)
};

// Threading: allocate_series may be called from any thread (it locks, may
// grow the file, and throws std::system_error / std::length_error on
// failure); the slots it returns are updated through std::atomic_ref by
// collector threads without any lock. Readers in other processes never
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

  const std::filesystem::path& file_path() const noexcept { return path_; }

  // Marks the file closed: its live gauges disappear from the merge even if
  // this process lives on. Called by the destructor; idempotent.
  void close() noexcept;

 private:
  struct Region {
    std::byte* base;
    std::size_t offset;  // file offset of the region
  };
  std::byte* map_new_region();
  double* append_record_locked(const std::string& name, std::span<const std::string> label_values,
                               std::size_t slot_count);

  MultiprocessStoreOptions options_;
  std::filesystem::path path_;
  int fd_ = -1;
  bool closed_ = false;
  std::mutex mutex_;
  std::vector<Region> regions_;
  std::uint64_t used_ = 0;  // writer's copy of the published used size
  std::unordered_map<std::string, double*> interned_;
  std::unordered_set<std::string> defined_;  // families whose definition is written
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
  ProcessIdentity writer;
  bool live = false;  // writer alive and file not closed
};

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
