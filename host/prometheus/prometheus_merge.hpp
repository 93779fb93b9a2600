// prometheus_merge.hpp — turns the series of every producer file of the run
// directory (and of this process's own stores) into one aggregate per series,
// as prometheus_client's multiprocess collector does: counters and histograms
// summed, gauges by their GaugeMode. Scrape time only; never writes a slot.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pipeline/metric_catalog.hpp"
#include "prometheus/multiprocess_run_dir.hpp"

namespace tokenspeed::metrics {

class InProcessMetricStore;

struct MergedSeries {
  // Label names and values in the family's order; gauges in the all and
  // liveall modes end with ("pid", "<pid>").
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<double> slots;  // the layout of metric_store.hpp
};

struct MergedFamily {
  const MetricDefinition* metric = nullptr;
  std::vector<MergedSeries> series;  // ordered by label values
  // Keeps metric alive when it was learned from a producer file.
  std::shared_ptr<const MetricDefinition> learned;
};

struct MergeStats {
  std::size_t files = 0;              // producer files read
  std::size_t live_files = 0;         // of which the writer is alive
  std::size_t unknown_series = 0;     // records whose family nobody defined
  std::size_t mismatched_series = 0;  // wrong slot or label count, or a conflicting definition
  std::size_t conflicting_definitions = 0;  // a name defined differently by two processes
};

// Threading: one merge per scrape, used by one thread; the catalog outlives it.
class PrometheusMerge {
 public:
  explicit PrometheusMerge(const std::vector<const MetricDefinition*>& catalog);

  // A family that a process defined: exposed after the catalog's, in the
  // order first seen. A definition that differs from the one already known
  // under that name is counted and returns false (the first one stands).
  bool learn(const MetricDefinition& metric);

  // One process's series (its family learned when new). Gauges in live
  // modes are ignored when !live.
  void add_series(const MetricDefinition& metric, std::span<const std::string_view> label_values,
                  std::span<const double> slots, const ProcessIdentity& process, bool live);
  // Every "*.db" producer file directly under dir, with the definitions it
  // carries. Unreadable or foreign files are skipped.
  void add_directory(const std::filesystem::path& dir);
  // A store of this process (alive by definition).
  void add_store(const InProcessMetricStore& store);

  // Families in catalog order, then the learned ones by name; families
  // without any series are left out. Ends the merge.
  std::vector<MergedFamily> take_families();
  const MergeStats& stats() const noexcept { return stats_; }

 private:
  struct Accumulated {
    std::vector<std::string> label_values;  // pid appended for all/liveall
    std::vector<double> slots;
  };
  struct Family {
    const MetricDefinition* metric;
    std::shared_ptr<const MetricDefinition> learned;  // null for catalog families
    std::unordered_map<std::string, std::size_t> index;  // joined label values -> series
    std::vector<Accumulated> series;
  };
  void add_to_family(Family& family, std::span<const std::string_view> label_values,
                     std::span<const double> slots, const ProcessIdentity& process, bool live);

  std::vector<Family> families_;
  std::unordered_map<std::string_view, std::size_t> by_name_;
  MergeStats stats_;
  std::string key_;  // scratch
};

// Everything one scrape merges. Any source may be absent.
struct ScrapeSources {
  std::vector<const MetricDefinition*> catalog;       // families to expose first, in order
  std::filesystem::path run_dir;                      // producer files; empty: none
  const InProcessMetricStore* local_store = nullptr;  // this process's own series
  // Adds further series (for example the reporter self-metrics) to the merge.
  std::function<void(PrometheusMerge&)> extra;
};

std::vector<MergedFamily> merge_scrape(const ScrapeSources& sources, MergeStats* stats = nullptr);

// Pointers to every definition of a catalog, for ScrapeSources::catalog.
std::vector<const MetricDefinition*> catalog_pointers(const std::vector<MetricDefinition>& catalog);

}  // namespace tokenspeed::metrics
