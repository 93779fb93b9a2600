// write_merge_seeds.cpp — writes the merge fuzzer's seed corpus with the
// host's own MultiprocessMetricStore: complete producer files (catalog
// families, a family the catalog does not know, a closed file) and the same
// files cut short mid-record, as a producer killed while writing leaves them.
// Usage: fuzz-write-merge-seeds OUTPUT_DIR. A tool, not a test.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <tokenspeed/metrics/tokenspeed_catalog.hpp>

#include "core/metric_catalog.hpp"
#include "prometheus/store/multiprocess_metric_store.hpp"

namespace tsm = tokenspeed::metrics;

namespace {

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void set(double* slot, double value) { std::atomic_ref<double>(*slot).store(value); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path out(argv[1]);
  const std::filesystem::path work = std::filesystem::temp_directory_path() / "tsm-merge-seeds";
  std::filesystem::remove_all(work);
  std::filesystem::create_directories(work);
  std::filesystem::create_directories(out);

  tsm::MetricDefinition own;
  own.name = "engine_cache_bytes";
  own.kind = tsm::MetricKind::gauge;
  own.help = "Bytes \"cached\"\\n.";
  own.label_names = {"tier"};
  own.gauge_mode = tsm::GaugeMode::all;
  own = tsm::checked_definition(own);

  tsm::MultiprocessStoreOptions options;
  options.directory = work;
  options.region_bytes = 4096;  // small files; the layout is that of 1 MiB regions
  {
    tsm::MultiprocessMetricStore store(options);
    const std::vector<std::string> labels = {"llama-3-8b", "default", "0"};
    const std::vector<std::string> frontend = {"llama-3-8b", "default"};
    set(store.allocate_series(tsm::tokenspeed_metric("tokenspeed:num_requests_running"), labels),
        3);
    set(store.allocate_series(tsm::tokenspeed_metric("tokenspeed:prompt_tokens"), frontend), 1234);
    double* ttft = store.allocate_series(
        tsm::tokenspeed_metric("tokenspeed:time_to_first_token_seconds"), frontend);
    set(ttft + 0, 2);
    set(ttft + 3, 1);
    set(ttft + 18, 0.42);
    const std::vector<std::string> tier = {"gpu \xe2\x80\x94 \"hbm\""};
    set(store.allocate_series(own, tier), 8e9);
    const std::string live = read_all(store.file_path());
    write(out / "live-producer", live);
    // The header's published used size (offset 40), where the records end.
    std::uint64_t used = 0;
    std::memcpy(&used, live.data() + 40, sizeof used);
    // Cut inside the last record, inside the first record's header, and
    // inside the file header.
    write(out / "killed-mid-record", live.substr(0, used - 12));
    write(out / "killed-mid-header", live.substr(0, 64 + 8));
    write(out / "killed-in-file-header", live.substr(0, 40));
  }
  for (const auto& entry : std::filesystem::directory_iterator(work)) {
    write(out / "closed-producer", read_all(entry.path()));
  }
  {
    // More than one region: the second one starts with a record of its own.
    tsm::MultiprocessMetricStore store(options);
    for (int i = 0; i < 80; ++i) {
      const std::vector<std::string> labels = {"model-" + std::to_string(i), "app",
                                               std::to_string(i % 4)};
      set(store.allocate_series(tsm::tokenspeed_metric("tokenspeed:num_requests_waiting"), labels),
          i);
    }
    write(out / "two-regions", read_all(store.file_path()));
  }
  std::filesystem::remove_all(work);
  return 0;
}
