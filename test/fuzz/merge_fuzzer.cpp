// merge_fuzzer.cpp — fuzzes the launcher's scrape of producer metric files
// (read_multiprocess_file, PrometheusMerge, decode_definition, the
// exposition) with corrupted and truncated files, as a producer killed
// mid-write leaves them. Input: the bytes of one producer file. The scrape
// must neither crash nor hang, and what it renders must read back as valid
// exposition text (exposition_check.hpp).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include <tokenspeed/metrics/tokenspeed_catalog.hpp>

#include "exposition_check.hpp"
#include "fuzz_support.hpp"
#include "prometheus/scrape/prometheus_exposition.hpp"
#include "prometheus/scrape/prometheus_merge.hpp"

namespace {

namespace tsm = tokenspeed::metrics;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path run_dir = [] {
    const std::filesystem::path dir = tsm::fuzz::scratch_dir() / "run";
    std::filesystem::create_directories(dir);
    return dir;
  }();
  tsm::fuzz::write_file(run_dir / "producer_1.db",
                        std::string_view(reinterpret_cast<const char*>(data), size));

  tsm::ScrapeSources sources;
  sources.catalog = tsm::catalog_pointers(tsm::tokenspeed_catalog());
  sources.run_dir = run_dir;
  // A fresh log per input: every conflict is described, and nothing piles up.
  tsm::MergeConflictLog conflict_log([](std::string_view line) { FUZZ_CHECK(!line.empty()); });
  sources.conflict_log = &conflict_log;
  tsm::MergeFigures stats;
  const std::vector<tsm::MergedFamily> families = tsm::merge_scrape(sources, &stats);
  FUZZ_CHECK(stats.files <= 1);
  FUZZ_CHECK(stats.live_files <= stats.files);
  const std::string text = tsm::render_exposition(families);
  const tsm::fuzz::Exposition exposed = tsm::fuzz::parse_exposition(text);
  std::size_t series = 0;
  for (const tsm::MergedFamily& family : families) {
    FUZZ_CHECK(!family.series.empty());
    FUZZ_CHECK(exposed.type.count(family.metric->sample_name()) == 1);
    series += family.series.size();
  }
  FUZZ_CHECK(exposed.samples.size() >= series);
  return 0;
}
