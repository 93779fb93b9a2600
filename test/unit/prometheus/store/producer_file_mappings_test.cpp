// producer_file_mappings_test.cpp — the run directory's files kept mapped
// between scrapes: mapped again only when replaced or resized, let go when
// gone, and a scrape through them merges what a scrape that maps anew does.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "prometheus/store/multiprocess_metric_store.hpp"
#include "prometheus/store/producer_file_mappings.hpp"
#include "prometheus/scrape/prometheus_merge.hpp"
#include "temp_dir.hpp"

using namespace tokenspeed::metrics;
using tokenspeed::metrics::test::TempDir;

namespace {

const MetricDefinition kRequests{"requests", MetricKind::counter, "Requests.", "", {"series"},
                                 {},         GaugeMode::livemax};

MultiprocessStoreOptions small_regions(const std::filesystem::path& dir) {
  MultiprocessStoreOptions options;
  options.directory = dir;
  options.region_bytes = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return options;
}

// series label -> value, as /metrics would show them.
std::map<std::string, double> scrape(const std::filesystem::path& dir,
                                     ProducerFileMappings* mappings) {
  ScrapeSources sources;
  sources.run_dir = dir;
  sources.file_mappings = mappings;
  std::map<std::string, double> out;
  for (const MergedFamily& family : merge_scrape(sources)) {
    if (family.metric->name != kRequests.name) continue;
    for (const MergedSeries& series : family.series) out[series.labels[0].second] = series.slots[0];
  }
  return out;
}

}  // namespace

TEST_CASE("a producer file that did not change is not mapped again") {
  TempDir dir;
  MultiprocessMetricStore store(small_regions(dir.path()));
  store.allocate_series(kRequests, std::vector<std::string>{"a"})[0] = 1;
  ProducerFileMappings mappings;
  const auto first = mappings.map(store.file_path());
  REQUIRE(first != nullptr);
  CHECK(mappings.map(store.file_path()) == first);
  CHECK(mappings.mappings_made() == 1);
}

TEST_CASE("a producer file that grew or was replaced is mapped again") {
  TempDir dir;
  ProducerFileMappings mappings;
  std::filesystem::path path;
  std::shared_ptr<const FileMapping> first;
  {
    MultiprocessMetricStore store(small_regions(dir.path()));
    path = store.file_path();
    first = mappings.map(path);
    REQUIRE(first != nullptr);
    for (int i = 0; i < 200; ++i)  // past the first region
      store.allocate_series(kRequests, std::vector<std::string>{std::to_string(i)});
    const auto grown = mappings.map(path);
    REQUIRE(grown != nullptr);
    CHECK(grown != first);
    CHECK(grown->size() > first->size());
    CHECK(mappings.mappings_made() == 2);
    CHECK(first->data() != nullptr);  // still mapped while held
  }
  // Another file under the same name (a new inode).
  const std::filesystem::path moved = dir.path() / "moved.tmp";
  std::filesystem::copy_file(path, moved);
  std::filesystem::rename(moved, path);
  const auto replaced = mappings.map(path);
  REQUIRE(replaced != nullptr);
  CHECK(mappings.mappings_made() == 3);
  CHECK(mappings.map(dir.path() / "missing.db") == nullptr);
}

TEST_CASE("mappings of files gone from the directory are let go; a held one stays readable") {
  TempDir dir;
  MultiprocessMetricStore store(small_regions(dir.path()));
  ProducerFileMappings mappings;
  const auto held = mappings.map(store.file_path());
  REQUIRE(held != nullptr);
  mappings.keep_only({});
  CHECK(held->data() != nullptr);
  CHECK(held->size() >= 64);
  CHECK(mappings.map(store.file_path()) != held);  // mapped anew
  CHECK(mappings.mappings_made() == 2);
}

TEST_CASE("scrapes through kept mappings merge what scrapes that map anew merge") {
  TempDir dir;
  MultiprocessMetricStore first(small_regions(dir.path()));
  ProducerFileMappings mappings;
  double* a = first.allocate_series(kRequests, std::vector<std::string>{"a"});
  *a = 1;
  CHECK(scrape(dir.path(), &mappings) == scrape(dir.path(), nullptr));
  CHECK(scrape(dir.path(), &mappings).at("a") == 1);

  // A new value, a new series in the same region, then past it, then a
  // second file: each reaches the next scrape through the kept mappings.
  *a = 5;
  first.allocate_series(kRequests, std::vector<std::string>{"b"})[0] = 2;
  auto kept = scrape(dir.path(), &mappings);
  CHECK(kept.at("a") == 5);
  CHECK(kept.at("b") == 2);
  for (int i = 0; i < 200; ++i)
    first.allocate_series(kRequests, std::vector<std::string>{"n" + std::to_string(i)})[0] = i;
  MultiprocessMetricStore second(small_regions(dir.path()));
  second.allocate_series(kRequests, std::vector<std::string>{"a"})[0] = 10;
  kept = scrape(dir.path(), &mappings);
  CHECK(kept == scrape(dir.path(), nullptr));
  CHECK(kept.at("a") == 15);
  CHECK(kept.at("n199") == 199);
  CHECK(kept.size() == 202);
  const std::size_t made = mappings.mappings_made();
  scrape(dir.path(), &mappings);
  CHECK(mappings.mappings_made() == made);  // nothing changed: nothing mapped
}

TEST_CASE("a producer file that shrank is mapped again, never read past its end") {
  TempDir dir;
  MultiprocessMetricStore store(small_regions(dir.path()));
  for (int i = 0; i < 200; ++i)  // two regions or more
    store.allocate_series(kRequests, std::vector<std::string>{std::to_string(i)});
  ProducerFileMappings mappings;
  const auto large = mappings.map(store.file_path());
  REQUIRE(large != nullptr);
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::filesystem::resize_file(store.file_path(), page);
  const auto small = mappings.map(store.file_path());
  REQUIRE(small != nullptr);
  CHECK(small->size() == page);
  CHECK(mappings.mappings_made() == 2);
}

TEST_CASE("concurrent scrapes share the mappings while a producer file grows") {
  TempDir dir;
  MultiprocessMetricStore store(small_regions(dir.path()));
  store.allocate_series(kRequests, std::vector<std::string>{"a"})[0] = 1;
  ProducerFileMappings mappings;
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  const auto scraper = [&] {
    while (!done.load()) {
      const auto seen = scrape(dir.path(), &mappings);
      if (seen.count("a") != 1 || seen.at("a") != 1) failures.fetch_add(1);
    }
  };
  std::thread first(scraper), second(scraper);
  for (int i = 0; i < 300; ++i)  // several regions: mapped again as it grows
    store.allocate_series(kRequests, std::vector<std::string>{"n" + std::to_string(i)});
  done.store(true);
  first.join();
  second.join();
  CHECK(failures.load() == 0);
  CHECK(scrape(dir.path(), &mappings).size() == 301);
}
