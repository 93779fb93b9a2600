// merge_conflicts.hpp — what a scrape's merge could not expose: a family name
// that processes define differently, or families whose sample names collide.
// Describes them in one log line per family (written once per process) and
// as the merge's own gauges on /metrics. Scrape time only.
#pragma once

#include <cstddef>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/metric_catalog.hpp"
#include "core/fault_log.hpp"
#include "core/thread_safety.hpp"

namespace tokenspeed::metrics {

struct MergedFamily;

// One definition as the merge met it, with the processes that hold it.
struct HeldDefinition {
  std::shared_ptr<const MetricDefinition> definition;
  std::vector<std::string> holders;  // producer file names ("scheduler-0_41.db"), sorted
  bool catalog = false;              // given to the merge by the scraping process
  std::size_t series = 0;            // merged series it carries
};

// A family name whose definitions were left out of one scrape.
struct MergeConflict {
  std::string family;                    // the name the left-out definitions carry
  HeldDefinition exposed;                // the definition /metrics shows instead
  std::string shared_name;               // the sample name both claim (a collision), or empty
  std::vector<HeldDefinition> left_out;  // ordered as the merge ranked them
  std::size_t left_out_series = 0;       // series of left_out, not on /metrics
};

// The families, exposed after every other one when there is a conflict:
//   tokenspeed_metrics_merge_conflicting_definitions{family}  gauge: the
//       definitions of the family left out at the last scrape
//   tokenspeed_metrics_merge_series_left_out{family}          gauge: their
//       series, absent from the last scrape
// and, when an exponential histogram refused an observation:
//   tokenspeed_metrics_observations_not_finite_total{family}  counter: NaN
//       and +/-Inf observed into its series, in no bucket, count or sum
// and, when a process stopped inside an observe of an exponential histogram:
//   tokenspeed_metrics_observations_interrupted{family}  gauge: its series
//       read back to the state before at this scrape
//       (exponential_slot_reader.hpp), each missing at most the one
//       observation in flight
const std::vector<MetricDefinition>& merge_self_metric_definitions();

// The merge's own families for these conflicts (none when there is none).
std::vector<MergedFamily> merge_conflict_families(const std::vector<MergeConflict>& conflicts);

// The family of the observations the exponential histograms among families
// refused (none when there is none).
std::vector<MergedFamily> not_finite_families(const std::vector<MergedFamily>& families);

// The family of the series read back from a process stopped inside an
// observe, per exponential family (none when there is none).
std::vector<MergedFamily> interrupted_families(const std::vector<MergedFamily>& families);

// The one line that describes a conflict: both definitions (kind, help, unit,
// labels, buckets, mode) and the files that hold each, long texts cut.
std::string describe_merge_conflict(const MergeConflict& conflict);

// Logs each family's conflict once: the same conflict at every later scrape
// writes nothing. Threading: report from any thread (one mutex).
class MergeConflictLog {
 public:
  explicit MergeConflictLog(LogWriter writer = write_log_line_to_stderr);
  void report(const std::vector<MergeConflict>& conflicts);

  // The log a scrape uses when it is given none: one per process.
  static MergeConflictLog& process_log();

 private:
  LogWriter writer_;
  Mutex mutex_;
  std::set<std::string, std::less<>> logged_ TSM_GUARDED_BY(mutex_);  // family names
};

}  // namespace tokenspeed::metrics
