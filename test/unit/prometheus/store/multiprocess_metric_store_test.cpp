// multiprocess_metric_store_test.cpp — the producer file: records, growth by
// regions, publication to a concurrent reader, pid and closed flag, a full
// file system (a real tmpfs, root only) and the space given back at close.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tokenspeed/metrics/startup_error.hpp>

#include "prometheus/store/multiprocess_metric_store.hpp"
#include "temp_dir.hpp"

using namespace tokenspeed::metrics;

namespace {

using tokenspeed::metrics::test::TempDir;

const MetricDefinition kCounter{"test:requests",   MetricKind::counter, "", "", {"model"}, {},
                                GaugeMode::livemax};
const MetricDefinition kHistogram{
    "test:latency_seconds", MetricKind::histogram, "", "", {"model"}, {0.1, 1}, GaugeMode::livemax};

std::map<std::string, std::vector<double>> read_all(const std::filesystem::path& file,
                                                    MultiprocessFileInfo* info = nullptr) {
  std::map<std::string, std::vector<double>> out;
  const bool ok = read_multiprocess_file(
      file,
      [&](const MultiprocessFileInfo& f) {
        if (info) *info = f;
      },
      [&](const MultiprocessSeriesView& view) {
        std::string key(view.metric_name);
        for (auto value : view.label_values) key += "|" + std::string(value);
        out[key] = {view.slots.begin(), view.slots.end()};
      });
  REQUIRE(ok);
  return out;
}

}  // namespace

TEST_CASE("records are keyed by metric and label values: the same series gets the same slots") {
  TempDir dir;
  MultiprocessMetricStore store({dir.path()});
  const std::vector<std::string> a{"llama"}, b{"mistral"};
  double* first = store.allocate_series(kCounter, a);
  CHECK(store.allocate_series(kCounter, a) == first);
  double* other = store.allocate_series(kCounter, b);
  CHECK(other != first);
  double* hist = store.allocate_series(kHistogram, a);
  std::atomic_ref<double>(first[0]).fetch_add(2.5);
  std::atomic_ref<double>(hist[1]).fetch_add(3);
  std::atomic_ref<double>(hist[3]).fetch_add(0.9);
  const auto records = read_all(store.file_path());
  REQUIRE(records.size() == 3);
  CHECK(records.at("test:requests|llama") == std::vector<double>{2.5});
  CHECK(records.at("test:requests|mistral") == std::vector<double>{0});
  CHECK(records.at("test:latency_seconds|llama") == std::vector<double>{0, 3, 0, 0.9});
}

TEST_CASE("the file carries the writer's pid; a closed file is not live") {
  TempDir dir;
  MultiprocessMetricStore store({dir.path(), "frontend"});
  CHECK(store.file_path().filename() == "frontend_" + std::to_string(::getpid()) + ".db");
  store.allocate_series(kCounter, std::vector<std::string>{"x"});
  MultiprocessFileInfo info;
  read_all(store.file_path(), &info);
  CHECK(info.writer.pid == ::getpid());
  CHECK(info.live);
  store.close();
  read_all(store.file_path(), &info);
  CHECK_FALSE(info.live);
}

TEST_CASE("the store grows by mapping new regions: slots handed out earlier never move") {
  TempDir dir;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  MultiprocessMetricStore store({dir.path(), "producer", page});
  std::vector<double*> slots;
  for (int i = 0; i < 2000; ++i) {
    double* s =
        store.allocate_series(kCounter, std::vector<std::string>{"model-" + std::to_string(i)});
    slots.push_back(s);
    std::atomic_ref<double>(s[0]).store(i);
  }
  // Every earlier slot is still ours and still holds its value.
  for (int i = 0; i < 2000; ++i) CHECK(*slots[static_cast<std::size_t>(i)] == i);
  CHECK(std::filesystem::file_size(store.file_path()) > 10 * page);
  const auto records = read_all(store.file_path());
  REQUIRE(records.size() == 2000);
  for (int i = 0; i < 2000; ++i)
    CHECK(records.at("test:requests|model-" + std::to_string(i))[0] == i);
}

TEST_CASE("a series too large for one region is refused at interning time") {
  TempDir dir;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  MultiprocessMetricStore store({dir.path(), "producer", page});
  CHECK_THROWS_AS(store.allocate_series(kCounter, std::vector<std::string>{std::string(page, 'x')}),
                  std::length_error);
}

TEST_CASE("a file that is not a store file is skipped") {
  TempDir dir;
  std::ofstream(dir.path() / "garbage.db") << std::string(200, 'z');
  CHECK_FALSE(read_multiprocess_file(dir.path() / "garbage.db", nullptr, [](const auto&) {}));
  CHECK_FALSE(read_multiprocess_file(dir.path() / "missing.db", nullptr, [](const auto&) {}));
}

TEST_CASE("a record shorter than its own header ends the file's records, read no further") {
  // Found by the merge fuzzer: a record_size of 8 made the reader compute
  // its slots before the mapping and crash the launcher's scrape.
  TempDir dir;
  std::filesystem::path file;
  {
    MultiprocessMetricStore store({dir.path(), "producer", 1u << 20});
    *store.allocate_series(kCounter, std::vector<std::string>{"a"}) = 1;
    *store.allocate_series(kCounter, std::vector<std::string>{"b"}) = 2;
    file = store.file_path();
    std::fstream bytes(file, std::ios::in | std::ios::out | std::ios::binary);
    std::uint32_t definition_size = 0;  // the family's definition record comes first
    bytes.seekg(64);
    bytes.read(reinterpret_cast<char*>(&definition_size), sizeof definition_size);
    std::uint32_t series_size = 0;
    bytes.seekg(64 + definition_size);
    bytes.read(reinterpret_cast<char*>(&series_size), sizeof series_size);
    // The second series' header: record_size 8, a slot count far past the file.
    const std::uint32_t corrupt[] = {8, 0x10000000};
    bytes.seekp(64 + definition_size + series_size);
    bytes.write(reinterpret_cast<const char*>(corrupt), sizeof corrupt);
    REQUIRE(bytes.good());
    bytes.close();
    const auto series = read_all(file);
    CHECK(series == std::map<std::string, std::vector<double>>{{"test:requests|a", {1}}});
  }
}

TEST_CASE("a file header with an impossible region size is not a store file") {
  // Found by the merge fuzzer: a region size of 2^64 - 1 wrapped the
  // reader's offset around to before the mapping.
  TempDir dir;
  std::filesystem::path file;
  MultiprocessMetricStore store({dir.path(), "producer", 1u << 20});
  *store.allocate_series(kCounter, std::vector<std::string>{"a"}) = 1;
  file = store.file_path();
  for (const std::uint64_t region : {std::uint64_t{0}, std::uint64_t{64}, std::uint64_t{4100},
                                     (std::uint64_t{1} << 32) + 4096, ~std::uint64_t{0}}) {
    INFO(region);
    std::fstream bytes(file, std::ios::in | std::ios::out | std::ios::binary);
    bytes.seekp(16);  // region_bytes follows magic, version and header size
    bytes.write(reinterpret_cast<const char*>(&region), sizeof region);
    bytes.close();
    CHECK_FALSE(read_multiprocess_file(file, nullptr, [](const auto&) {}));
  }
  const std::uint64_t region = 1u << 20;
  std::fstream bytes(file, std::ios::in | std::ios::out | std::ios::binary);
  bytes.seekp(16);
  bytes.write(reinterpret_cast<const char*>(&region), sizeof region);
  bytes.close();
  CHECK(read_all(file) == std::map<std::string, std::vector<double>>{{"test:requests|a", {1}}});
}

TEST_CASE("a concurrent reader sees only complete records and values that never go backwards") {
  TempDir dir;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  MultiprocessMetricStore store({dir.path(), "producer", page});
  constexpr int kSeries = 3000;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    std::vector<double*> slots;
    for (int i = 0; i < kSeries; ++i) {
      slots.push_back(
          store.allocate_series(kCounter, std::vector<std::string>{"m" + std::to_string(i)}));
      for (double* s : slots) {
        if (slots.size() % 64 == 0 || s == slots.back()) {
          std::atomic_ref<double>(s[0]).fetch_add(1.0, std::memory_order_relaxed);
        }
      }
    }
    done.store(true);
  });
  std::map<std::string, double> last;
  std::size_t last_count = 0;
  int reads = 0;
  bool ok = true;
  while (!done.load() || reads < 3) {
    std::map<std::string, double> now;
    bool complete =
        read_multiprocess_file(store.file_path(), nullptr, [&](const MultiprocessSeriesView& view) {
          if (view.metric_name != "test:requests" || view.label_values.size() != 1 ||
              view.label_values[0].empty() || view.label_values[0][0] != 'm' ||
              view.slots.size() != 1) {
            ok = false;
          }
          now[std::string(view.label_values.empty() ? "" : view.label_values[0])] =
              view.slots.empty() ? 0 : view.slots[0];
        });
    ok = ok && complete && now.size() >= last_count;
    for (const auto& [name, value] : last) ok = ok && now.count(name) == 1 && now[name] >= value;
    last = std::move(now);
    last_count = last.size();
    ++reads;
  }
  writer.join();
  CHECK(ok);
  CHECK(reads >= 3);
  const auto records = read_all(store.file_path());
  CHECK(records.size() == kSeries);
}

namespace {

// A small real tmpfs on a fresh directory (root only), unmounted at the end.
class SmallTmpfs {
 public:
  explicit SmallTmpfs(std::size_t bytes) {
    const std::string options = "size=" + std::to_string(bytes) + ",mode=0700";
    mounted_ = ::mount("tmpfs", dir_.path().c_str(), "tmpfs", 0, options.c_str()) == 0;
  }
  ~SmallTmpfs() {
    if (mounted_) ::umount2(dir_.path().c_str(), MNT_DETACH);
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;
  bool mounted() const noexcept { return mounted_; }
  const std::filesystem::path& path() const noexcept { return dir_.path(); }

  // Writes a file until the file system is full.
  void fill() const {
    const int fd = ::open((dir_.path() / "filler").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    const std::string page(4096, '\0');
    while (::write(fd, page.data(), page.size()) > 0) {
    }
    ::close(fd);
  }

 private:
  TempDir dir_;
  bool mounted_ = false;
};

double unstored_events_in(const std::filesystem::path& file) {
  const auto records = read_all(file);
  const auto found = records.find("tokenspeed_metrics_prometheus_unstored_events");
  return found == records.end() ? -1.0 : found->second.at(0);
}

}  // namespace

TEST_CASE("a store whose file cannot grow keeps new series in memory and counts their events") {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  SmallTmpfs tmpfs(16 * page);
  if (!tmpfs.mounted()) {
    WARN("skipped: mounting a tmpfs needs root");
    return;
  }
  MultiprocessMetricStore store({tmpfs.path(), "producer", page});
  tmpfs.fill();
  std::vector<double*> in_file;
  std::vector<double*> in_memory;
  for (int i = 0; i < 200; ++i) {
    double* slots = nullptr;
    REQUIRE_NOTHROW(slots = store.allocate_series(
                        kCounter, std::vector<std::string>{"model-" + std::to_string(i)}));
    (store.unstored_events_slot(slots) == nullptr ? in_file : in_memory).push_back(slots);
  }
  REQUIRE_FALSE(in_file.empty());
  REQUIRE(in_memory.size() > 100);
  CHECK(store.unstored().series == in_memory.size());
  // What the collector does per event of such a series.
  double* counter = store.unstored_events_slot(in_memory.front());
  REQUIRE(counter != nullptr);
  for (double* slots : in_memory) {
    CHECK(store.unstored_events_slot(slots) == counter);
    std::atomic_ref<double>(slots[0]).fetch_add(1);
    std::atomic_ref<double>(*counter).fetch_add(1);
  }
  CHECK(store.unstored().events == in_memory.size());
  // The counter is in the file (the space each region keeps for it).
  CHECK(unstored_events_in(store.file_path()) == static_cast<double>(in_memory.size()));
}

TEST_CASE("a store without room for its file: a startup error naming it, or memory when asked") {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  SmallTmpfs tmpfs(16 * page);
  if (!tmpfs.mounted()) {
    WARN("skipped: mounting a tmpfs needs root");
    return;
  }
  tmpfs.fill();
  try {
    MultiprocessMetricStore store({tmpfs.path(), "launcher", 1u << 20});
    FAIL("a store without room for its file was created");
  } catch (const StartupError& error) {
    CHECK(error.reporter() == "prometheus");
    CHECK(error.key() == "--metrics-multiproc-dir");
    CHECK(error.file().rfind((tmpfs.path() / "launcher_").string(), 0) == 0);
    CHECK_THAT(error.message(), Catch::Contains("No space left on device"));
  }
  MultiprocessStoreOptions options{tmpfs.path(), "producer", 1u << 20};
  options.keep_in_memory_without_file = true;
  MultiprocessMetricStore store(options);
  CHECK_FALSE(store.has_file());
  double* slots = store.allocate_series(kCounter, std::vector<std::string>{"a"});
  REQUIRE(store.unstored_events_slot(slots) != nullptr);
  CHECK(store.unstored().series == 1);
  CHECK(std::distance(std::filesystem::directory_iterator(tmpfs.path()),
                      std::filesystem::directory_iterator()) == 1);  // the filler only
}

TEST_CASE("closing a store gives back its reserved space and keeps its records readable") {
  TempDir dir;
  MultiprocessMetricStore store({dir.path(), "producer", 1u << 20});
  *store.allocate_series(kCounter, std::vector<std::string>{"a"}) = 3;
  *store.allocate_series(kHistogram, std::vector<std::string>{"a"}) = 1;
  struct stat before {};
  REQUIRE(::stat(store.file_path().c_str(), &before) == 0);
  store.close();
  struct stat after {};
  REQUIRE(::stat(store.file_path().c_str(), &after) == 0);
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  CHECK(static_cast<std::size_t>(after.st_size) == page);
  CHECK(after.st_blocks * 512 <= static_cast<long>(page));
  CHECK(before.st_size == (1 << 20));
  MultiprocessFileInfo info;
  const auto records = read_all(store.file_path(), &info);
  CHECK(records.at("test:requests|a") == std::vector<double>{3});
  CHECK_FALSE(info.live);
  // A series made after close stays in memory: nothing is written past the end.
  double* late = store.allocate_series(kCounter, std::vector<std::string>{"late"});
  CHECK(store.unstored_events_slot(late) != nullptr);
  *late = 1;
  CHECK(store.unstored().series == 1);
  CHECK(unstored_events_in(store.file_path()) == -1.0);  // its counter too stays out
  struct stat last {};
  REQUIRE(::stat(store.file_path().c_str(), &last) == 0);
  CHECK(last.st_size == after.st_size);
}

TEST_CASE("a killed writer's file shrinks to its records; a live writer's file is left alone") {
  TempDir dir;
  MultiprocessMetricStore store({dir.path(), "producer", 1u << 20});
  *store.allocate_series(kCounter, std::vector<std::string>{"a"}) = 5;
  // The same file as a writer that is gone left it: its pid is a child
  // that exited (reaped), and nobody holds its lock.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  REQUIRE(child > 0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  const auto orphan = dir.path() / "producer_orphan.db";
  std::filesystem::copy_file(store.file_path(), orphan);
  {
    std::fstream bytes(orphan, std::ios::in | std::ios::out | std::ios::binary);
    const std::int64_t pid = child;
    bytes.seekp(24);  // FileHeader::pid
    bytes.write(reinterpret_cast<const char*>(&pid), sizeof pid);
  }
  CHECK_FALSE(reclaim_exited_writer_file(store.file_path()));  // alive, and it holds the lock
  CHECK(std::filesystem::file_size(store.file_path()) == (1u << 20));
  {
    // Someone holds the orphan's lock (a child the writer forked): kept.
    const int holder = ::open(orphan.c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(::flock(holder, LOCK_SH) == 0);
    CHECK_FALSE(reclaim_exited_writer_file(orphan));
    ::close(holder);
  }
  CHECK(reclaim_exited_writer_file(orphan));
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  CHECK(std::filesystem::file_size(orphan) == page);
  CHECK(read_all(orphan).at("test:requests|a") == std::vector<double>{5});
  CHECK_FALSE(reclaim_exited_writer_file(orphan));  // once
}
