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

#include <tokenspeed/kit/exponential_histogram.hpp>

#include "core/metric_catalog.hpp"
#include "prometheus/scrape/merge_conflicts.hpp"
#include "prometheus/store/multiprocess_run_dir.hpp"

namespace tokenspeed::metrics {

class InProcessMetricStore;
class ProducerFileMappings;

struct MergedSeries {
  // Label names and values in the family's order; gauges in the all and
  // liveall modes end with ("pid", "<pid>").
  std::vector<std::pair<std::string, std::string>> labels;
  // The layout of metric_store.hpp; of an exponential histogram, [0] the
  // observations refused (NaN, +/-Inf), its buckets being in exponential.
  std::vector<double> slots;
  // An exponential histogram's buckets: every process's merged, at the
  // lowest scale any of them had (lower still when the union needs it).
  std::shared_ptr<kit::ExponentialHistogram> exponential = nullptr;
};

struct MergedFamily {
  const MetricDefinition* metric = nullptr;
  std::vector<MergedSeries> series;  // ordered by label values
  // Keeps metric alive when it was learned from a producer file.
  std::shared_ptr<const MetricDefinition> learned;
};

struct MergeFigures {
  std::size_t files = 0;                    // producer files read
  std::size_t live_files = 0;               // of which the writer is alive
  std::size_t unknown_series = 0;           // records of a family neither file nor catalog defines
  std::size_t mismatched_series = 0;        // wrong slot or label count for their definition,
                                            // or an exponential series in no state a
                                            // writer published (it died inside an observe)
  std::size_t conflicting_definitions = 0;  // definitions left out (see below)
  std::size_t conflicting_series = 0;       // merged series of those definitions
};

// Which definition of a name /metrics shows (decided at take_families, the
// same for any order of the files):
//  1. a definition the catalog gives (the scraping launcher's own set);
//  2. then one the scraping process itself records (its own producer file,
//     its stores, the series it adds);
//  3. then the one the most processes hold;
//  4. then the first in a fixed order of (kind, help, unit, label names,
//     buckets, gauge mode).
// Families of different names whose sample names collide (counter c and
// gauge c_total, histogram h and gauge h_bucket; see sample_name_claims.hpp)
// are ranked the same way, with the shorter name (the family the other is
// named after) before rule 4: the lower one is left out. Whatever is
// left out is counted per family (MergeFigures, conflicts(), the merge's own
// gauges of merge_conflicts.hpp), never mixed into another family.
//
// Threading: one merge per scrape, used by one thread; the catalog outlives it.
class PrometheusMerge {
 public:
  explicit PrometheusMerge(const std::vector<const MetricDefinition*>& catalog);

  // Producers record the same series in the same order, so the series after
  // the one a file's last record of a family matched is tried first (its
  // label values compared) before the family's index is looked up: the same
  // result, without a hash lookup per record. On by default; off, every
  // record is looked up (the path before, kept so that growth_scrape_bench
  // measures both on the same files).
  void set_match_in_order(bool on) noexcept { match_in_order_ = on; }

  // One process's series under its definition. Gauges in live modes are
  // ignored when !live.
  void add_series(const MetricDefinition& metric, std::span<const std::string_view> label_values,
                  std::span<const double> slots, const ProcessInstance& process, bool live);
  // Every "*.db" producer file directly under dir, with the definitions it
  // carries. Unreadable or foreign files are skipped. With mappings, each
  // file is read through the mapping kept from the previous scrape (and the
  // mappings of files gone from dir are let go); without, it is opened and
  // mapped for this scrape alone.
  void add_directory(const std::filesystem::path& dir, ProducerFileMappings* mappings = nullptr);
  // A store of this process (alive by definition).
  void add_store(const InProcessMetricStore& store);

  // Families in catalog order, then the others by name, then the merge's own
  // conflict gauges when there is a conflict; families without any series
  // are left out. Ends the merge.
  std::vector<MergedFamily> take_families();
  // After take_families: what it left out, by family name.
  const std::vector<MergeConflict>& conflicts() const noexcept { return conflicts_; }
  const MergeFigures& figures() const noexcept { return figures_; }

 private:
  struct Accumulated {
    std::vector<std::string> label_values;  // pid appended for all/liveall
    std::vector<double> slots;
    std::shared_ptr<kit::ExponentialHistogram> exponential;
  };
  // One definition of a name and the series of the processes that hold it.
  struct Candidate {
    const MetricDefinition* metric;
    std::shared_ptr<const MetricDefinition> learned;     // null for catalog definitions
    std::size_t catalog_position;                        // SIZE_MAX: not in the catalog
    bool own = false;                                    // held by the scraping process
    std::vector<std::size_t> holders;                    // indices into holder_names_
    std::unordered_map<std::string, std::size_t> index;  // joined label values -> series
    std::vector<Accumulated> series;
    std::size_t next = 0;  // the series after the last one matched or added
  };
  std::size_t candidate_for(const MetricDefinition& metric);
  void note_holder(Candidate& candidate, std::size_t holder, bool own);
  std::size_t pid_holder(const ProcessInstance& process);
  void add_file(const std::filesystem::path& path, ProducerFileMappings* mappings);
  void add_to_candidate(Candidate& candidate, std::span<const std::string_view> label_values,
                        std::span<const double> slots, const ProcessInstance& process, bool live);
  // The index of the candidate's series of these label values (and pid: ""
  // but for a per-process gauge); added, from slots, when there is none.
  std::size_t series_of(Candidate& candidate, std::span<const std::string_view> label_values,
                        std::span<const double> slots, std::string_view pid, bool& added);
  // A series' first record: an exponential one starts empty (its point is
  // merged in), any other with slots.
  static Accumulated new_series(const MetricDefinition& metric,
                                std::span<const std::string_view> label_values,
                                std::span<const double> slots, std::string_view pid);
  bool ranks_before(const Candidate& a, const Candidate& b) const;
  HeldDefinition held(const Candidate& candidate) const;

  // Each name's candidates, best first; then the names by their best.
  // Empties by_name_.
  std::vector<std::vector<std::size_t>> ranked_names();
  // Each name's best definition claims its sample names unless a better
  // ranked family (or the merge's own gauges) claimed one of them first; the
  // definitions left out become conflicts_. Returns the candidates exposed.
  std::vector<std::size_t> claim_sample_names(const std::vector<std::vector<std::size_t>>& names);
  // Who claimed a sample name of metric first: owner, a candidate, or one of
  // the merge's own gauges (kMergeOwn).
  HeldDefinition claimant(std::size_t owner, const MetricDefinition& metric) const;
  // A conflict of ranked's family: its definitions from first_left_out on.
  void record_conflict(MergeConflict conflict, const std::vector<std::size_t>& ranked,
                       std::size_t first_left_out);
  void sort_in_exposition_order(std::vector<std::size_t>& exposed) const;
  // The family's series, sorted by labels and moved out of the candidate.
  MergedFamily take_family(Candidate& family);

  std::vector<Candidate> candidates_;
  // Family name -> its candidates; the keys view the candidates' names.
  std::unordered_map<std::string_view, std::vector<std::size_t>> by_name_;
  std::vector<std::string> holder_names_;  // producer file names, "pid N" for in-process series
  pid_t pid_holder_pid_ = 0;
  std::size_t pid_holder_ = 0;
  ProcessInstance self_;
  std::vector<MergeConflict> conflicts_;
  MergeFigures figures_;
  std::string key_;  // scratch of series_of: a series' joined label values
  bool match_in_order_ = true;
};

// Everything one scrape merges. Any source may be absent.
struct ScrapeSources {
  std::vector<const MetricDefinition*> catalog;       // families to expose first, in order
  std::filesystem::path run_dir;                      // producer files; empty: none
  const InProcessMetricStore* local_store = nullptr;  // this process's own series
  // Adds further series (for example the reporter self-metrics) to the merge.
  std::function<void(PrometheusMerge&)> extra;
  // Where conflicts are logged (once per family); null: the process's log.
  MergeConflictLog* conflict_log = nullptr;
  bool match_in_order = true;  // PrometheusMerge::set_match_in_order
  // The run directory's files kept mapped between scrapes (the launcher's);
  // null: each scrape maps them anew.
  ProducerFileMappings* file_mappings = nullptr;
};

std::vector<MergedFamily> merge_scrape(const ScrapeSources& sources,
                                       MergeFigures* figures = nullptr);

// Pointers to every definition of a catalog, for ScrapeSources::catalog.
std::vector<const MetricDefinition*> catalog_pointers(const std::vector<MetricDefinition>& catalog);

}  // namespace tokenspeed::metrics
