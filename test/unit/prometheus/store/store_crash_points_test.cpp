// store_crash_points_test.cpp — the rule behind "a killed process loses at
// most what was in flight" for the producer file's own protocol: adding a
// series writes its record (and, for a family's first series, the
// definition before it) past the published used size, growing the file by a
// region when needed, and then publishes the new size. A writer can die
// after any byte of that: for every series added by a random run over every
// metric kind (counter, each gauge mode, classic histogram, summary,
// exponential histogram; first series of a family, further series, a new
// region), the file as the writer left it after each step of its protocol
// (the store's after_write_step hook), and every byte prefix of what the
// append wrote with each used size a writer publishes on its way, is read as
// the launcher reads a dead writer's file. The file always reads; every series completed before
// holds every value observed into it; the new series is there, zeroed, once
// its record is published, and absent before. (The observations themselves
// are single slot stores; the exponential histogram's many stores are
// enumerated in core/exponential_slot_reader_test.cpp.)
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/exponential_slots.hpp"
#include "core/metric_store.hpp"
#include "prometheus/store/multiprocess_metric_store.hpp"
#include "temp_dir.hpp"

using namespace tokenspeed::metrics;

namespace {

using tokenspeed::metrics::test::TempDir;
using Series = std::map<std::string, std::vector<double>>;

std::vector<MetricDefinition> every_kind() {
  std::vector<MetricDefinition> kinds;
  kinds.push_back(
      {"crash:requests", MetricKind::counter, "", "", {"model"}, {}, GaugeMode::livemax});
  for (const GaugeMode mode : {GaugeMode::livemax, GaugeMode::livesum, GaugeMode::max,
                               GaugeMode::mostrecent, GaugeMode::livemostrecent, GaugeMode::all}) {
    kinds.push_back({"crash:gauge_" + std::to_string(static_cast<int>(mode)),
                     MetricKind::gauge,
                     "",
                     "",
                     {"model"},
                     {},
                     mode});
  }
  kinds.push_back({"crash:latency_seconds",
                   MetricKind::histogram,
                   "",
                   "",
                   {"model"},
                   {0.01, 0.1, 1, 10},
                   GaugeMode::livemax});
  kinds.push_back({"crash:tokens", MetricKind::summary, "", "", {"model"}, {}, GaugeMode::livemax});
  MetricDefinition native{"crash:native_seconds", MetricKind::histogram, "", "", {"model"}, {},
                          GaugeMode::livemax};
  native.exponential = ExponentialHistogramOptions{8, 20, 0};
  kinds.push_back(native);
  return kinds;
}

std::vector<std::byte> file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

// The series an image of the file holds, as the launcher reads it; false in
// ok when it does not read.
Series read_image(const std::filesystem::path& path, std::span<const std::byte> image,
                  std::uint64_t* used = nullptr, bool* ok = nullptr) {
  Series out;
  const bool read = read_multiprocess_mapping(
      path, image,
      [&](const MultiprocessFileInfo& info) {
        if (used != nullptr) *used = info.used;
      },
      [&](const MultiprocessSeriesView& view) {
        std::string key(view.metric_name);
        for (const std::string_view value : view.label_values) key += "|" + std::string(value);
        out[key] = {view.slots.begin(), view.slots.end()};
      },
      {});
  if (ok != nullptr) *ok = read;
  return out;
}

std::uint64_t word_at(const std::vector<std::byte>& bytes, std::size_t offset) {
  std::uint64_t word = 0;
  if (offset + sizeof word <= bytes.size()) std::memcpy(&word, bytes.data() + offset, sizeof word);
  return word;
}

// The offset of the header's used size: the aligned word that holds it in
// both images.
std::size_t used_field(const std::vector<std::byte>& before, std::uint64_t used_before,
                       const std::vector<std::byte>& after, std::uint64_t used_after) {
  for (std::size_t offset = 0; offset < 64; offset += 8)
    if (word_at(before, offset) == used_before && word_at(after, offset) == used_after)
      return offset;
  FAIL("no used size in the file header");
  return 0;
}

// The ends of the records written between from and to (skipping a region's
// zero tail): the used sizes a writer publishes on its way.
std::vector<std::uint64_t> record_ends(const std::vector<std::byte>& after, std::uint64_t from,
                                       std::uint64_t to, std::size_t region_bytes) {
  std::vector<std::uint64_t> ends{from};
  std::uint64_t at = from;
  while (at < to) {
    const auto size = static_cast<std::uint32_t>(word_at(after, at) & 0xFFFFFFFFu);
    if (size == 0) {
      at = (at / region_bytes + 1) * region_bytes;  // the rest of the region is unused
      continue;
    }
    at += size;
    ends.push_back(at);
  }
  REQUIRE(at == to);
  return ends;
}

struct Checked {
  std::size_t steps = 0;  // the writer's own states, from its hook
  std::size_t images = 0;
  std::size_t appends = 0;
  std::size_t first_of_family = 0;
  std::size_t new_regions = 0;
};

// Every image a writer dying during the append from before to after can
// leave, read and compared with what it must show.
void check_every_crash_point(const std::filesystem::path& path,
                             const std::vector<std::byte>& before,
                             const std::vector<std::byte>& after,
                             const std::vector<std::vector<std::byte>>& steps,
                             std::size_t region_bytes, Checked& checked) {
  std::uint64_t used_before = 0;
  std::uint64_t used_after = 0;
  const Series series_before = read_image(path, before, &used_before);
  const Series series_after = read_image(path, after, &used_after);
  REQUIRE(series_after.size() == series_before.size() + 1);
  const std::size_t used_at = used_field(before, used_before, after, used_after);
  const std::vector<std::uint64_t> ends = record_ends(after, used_before, used_after, region_bytes);
  checked.first_of_family += ends.size() > 2 ? 1 : 0;  // a definition, then the series
  // The writer's own states: each reads, at a used size it may publish.
  for (std::size_t step = 0; step < steps.size(); ++step) {
    INFO("after the writer's step " << step + 1 << " of " << steps.size());
    std::uint64_t used = 0;
    bool ok = false;
    const Series seen = read_image(path, steps[step], &used, &ok);
    REQUIRE(ok);
    REQUIRE(std::find(ends.begin(), ends.end(), used) != ends.end());
    REQUIRE(seen == (used == used_after ? series_after : series_before));
    ++checked.steps;
  }
  checked.new_regions += after.size() > before.size() ? 1 : 0;
  ++checked.appends;
  // The file as the writer leaves it after writing the bytes up to
  // `written` (the file grown first: a new region is zero when mapped).
  std::vector<std::byte> image = before;
  image.resize(after.size(), std::byte{0});
  for (std::uint64_t written = used_before; written <= used_after; ++written) {
    if (written > used_before) image[written - 1] = after[written - 1];
    for (std::size_t i = 0; i < ends.size(); ++i) {
      // Published: a record's end once all of it is written.
      if (ends[i] > written) break;
      std::memcpy(image.data() + used_at, &ends[i], sizeof ends[i]);
      INFO("written up to " << written << " of " << used_before << ".." << used_after
                            << ", published " << ends[i]);
      bool ok = false;
      const Series seen = read_image(path, image, nullptr, &ok);
      REQUIRE(ok);
      REQUIRE(seen == (ends[i] == used_after ? series_after : series_before));
      ++checked.images;
    }
  }
}

// One observation of value into a series' slots, as the recorder stores it.
void observe(const MetricDefinition& metric, double* slots, double value) {
  if (metric.exponential) {
    observe_exponential(slots, *metric.exponential, value, 1, value);
    return;
  }
  switch (metric.kind) {
    case MetricKind::counter:
      std::atomic_ref<double>(slots[0]).fetch_add(value);
      return;
    case MetricKind::gauge:
      std::atomic_ref<double>(slots[0]).store(value);
      if (stamps_gauge_sets(metric)) std::atomic_ref<double>(slots[1]).store(1e18 + value);
      return;
    case MetricKind::summary:
      std::atomic_ref<double>(slots[0]).fetch_add(1);
      std::atomic_ref<double>(slots[1]).fetch_add(value);
      return;
    case MetricKind::histogram: {
      std::size_t bucket = 0;
      while (bucket < metric.buckets.size() && value > metric.buckets[bucket]) ++bucket;
      std::atomic_ref<double>(slots[bucket]).fetch_add(1);
      std::atomic_ref<double>(slots[metric.buckets.size() + 1]).fetch_add(value);
      return;
    }
  }
}

}  // namespace

TEST_CASE("a writer dying at any byte of adding a series leaves a file that reads whole") {
  const TempDir dir;
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  MultiprocessStoreOptions options{dir.path()};
  options.region_bytes = page;  // a new region every few series
  std::filesystem::path file;
  std::vector<std::vector<std::byte>> steps;
  options.after_write_step = [&](StoreWriteStep) { steps.push_back(file_bytes(file)); };
  MultiprocessMetricStore store(options);
  file = store.file_path();
  const std::vector<MetricDefinition> kinds = every_kind();
  std::mt19937_64 random(20261206);
  std::uniform_real_distribution<double> values(-5, 50);
  std::set<std::string> made;
  Checked checked;
  for (int step = 0; step < 400; ++step) {
    const MetricDefinition& metric = kinds[random() % kinds.size()];
    const std::string model = "model-" + std::to_string(random() % 16);
    const std::vector<std::string> labels{model};
    const bool added = made.insert(metric.name + "|" + model).second;
    const std::vector<std::byte> before = file_bytes(file);
    steps.clear();
    double* slots = store.allocate_series(metric, labels);
    if (added) {
      INFO(metric.name << "{model=" << model << "}");
      check_every_crash_point(file, before, file_bytes(file), steps, page, checked);
    } else {
      CHECK(steps.empty());  // a series made before writes nothing
    }
    for (int i = 0; i < 3; ++i) observe(metric, slots, values(random));
  }
  INFO(checked.appends << " series added, " << checked.steps << " writer steps and "
                       << checked.images << " images read");
  CHECK(checked.steps >= 4 * checked.appends);
  CHECK(checked.appends == made.size());
  CHECK(checked.first_of_family == kinds.size());
  CHECK(checked.new_regions >= 3);
  CHECK(checked.images > 10000);
}
