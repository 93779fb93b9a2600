// prometheus_merge_test.cpp — merging producer files as prometheus_client's
// multiprocess mode does: counters and histograms summed, gauges by mode,
// a dead process's live gauges gone while its counters and histograms remain.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prometheus/in_process_metric_store.hpp"
#include "prometheus/multiprocess_metric_store.hpp"
#include "prometheus/prometheus_merge.hpp"

using namespace tokenspeed::metrics;

namespace {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "tsm-merge-XXXXXX").string();
    REQUIRE(::mkdtemp(templ.data()) != nullptr);
    path = templ;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// A producer process: writes through its own store, then stays alive until
// finish() (or exits at once when linger is false).
class Producer {
 public:
  Producer(const std::filesystem::path& dir, std::function<void(MultiprocessMetricStore&)> work,
           bool linger = true) {
    int ready[2], release[2];
    REQUIRE(::pipe(ready) == 0);
    REQUIRE(::pipe(release) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::close(ready[0]);
      ::close(release[1]);
      {
        MultiprocessMetricStore store({dir});
        work(store);
        char byte = 'r';
        (void)!::write(ready[1], &byte, 1);
        if (linger) (void)!::read(release[0], &byte, 1);  // until the parent says so
        if (!linger) ::_exit(0);                          // no destructor: as if the process died
      }
      ::_exit(0);
    }
    ::close(ready[1]);
    ::close(release[0]);
    release_ = release[1];
    char byte = 0;
    REQUIRE(::read(ready[0], &byte, 1) == 1);
    ::close(ready[0]);
    if (!linger) finish();
  }
  ~Producer() { finish(); }
  void finish() {
    if (release_ >= 0) ::close(release_);
    release_ = -1;
    if (pid_ > 0) {
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    pid_ = -1;
  }
  // A crash: no destructor runs in the child.
  void kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    pid_ = -1;
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int release_ = -1;
};

MetricDefinition gauge(const char* name, GaugeMode mode) {
  return MetricDefinition{name, MetricKind::gauge, "", "", {"rank"}, {}, mode};
}

const MetricDefinition kCounter{"c", MetricKind::counter, "", "", {"rank"}, {}, GaugeMode::livemax};
const MetricDefinition kHistogram{"h",       MetricKind::histogram, "", "", {"rank"},
                                  {0.01, 1}, GaugeMode::livemax};
const MetricDefinition kLivemax = gauge("g_livemax", GaugeMode::livemax);
const MetricDefinition kLivesum = gauge("g_livesum", GaugeMode::livesum);
const MetricDefinition kMax = gauge("g_max", GaugeMode::max);
const MetricDefinition kMin = gauge("g_min", GaugeMode::min);
const MetricDefinition kSum = gauge("g_sum", GaugeMode::sum);
const MetricDefinition kAll = gauge("g_all", GaugeMode::all);
const MetricDefinition kLiveall = gauge("g_liveall", GaugeMode::liveall);
const std::vector<const MetricDefinition*> kCatalog{
    &kCounter, &kHistogram, &kLivemax, &kLivesum, &kMax, &kMin, &kSum, &kAll, &kLiveall};

std::function<void(MultiprocessMetricStore&)> writes(double gauge_value, double counter_delta) {
  return [=](MultiprocessMetricStore& store) {
    const std::vector<std::string> labels{"0"};
    store.allocate_series(kCounter, labels)[0] += counter_delta;
    double* h = store.allocate_series(kHistogram, labels);
    h[0] += 3;  // observe(0.01, weight 3)
    h[3] += 0.03;
    for (const MetricDefinition* g :
         {&kLivemax, &kLivesum, &kMax, &kMin, &kSum, &kAll, &kLiveall}) {
      store.allocate_series(*g, labels)[0] = gauge_value;
    }
  };
}

// name{labels} -> value, one entry per merged series (first slot, or the
// count and sum of a histogram).
std::map<std::string, double> merged(const std::filesystem::path& dir) {
  std::map<std::string, double> out;
  ScrapeSources sources;
  sources.catalog = kCatalog;
  sources.run_dir = dir;
  for (const MergedFamily& family : merge_scrape(sources)) {
    for (const MergedSeries& series : family.series) {
      std::string key = family.metric->name;
      for (const auto& [name, value] : series.labels) key += "," + name + "=" + value;
      if (family.metric->kind == MetricKind::histogram) {
        out[key + "#count"] = series.slots[0] + series.slots[1] + series.slots[2];
        out[key + "#sum"] = series.slots[3];
      } else {
        out[key] = series.slots[0];
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("counters and histograms are summed over processes; gauges merge by their mode") {
  TempDir dir;
  Producer a(dir.path, writes(3, 10));
  Producer b(dir.path, writes(5, 20));
  const auto m = merged(dir.path);
  CHECK(m.at("c,rank=0") == 30);
  CHECK(m.at("h,rank=0#count") == 6);
  CHECK(m.at("h,rank=0#sum") == Approx(0.06));
  CHECK(m.at("g_livemax,rank=0") == 5);
  CHECK(m.at("g_livesum,rank=0") == 8);
  CHECK(m.at("g_max,rank=0") == 5);
  CHECK(m.at("g_min,rank=0") == 3);
  CHECK(m.at("g_sum,rank=0") == 8);
  CHECK(m.at("g_all,rank=0,pid=" + std::to_string(a.pid())) == 3);
  CHECK(m.at("g_all,rank=0,pid=" + std::to_string(b.pid())) == 5);
  CHECK(m.at("g_liveall,rank=0,pid=" + std::to_string(a.pid())) == 3);
  CHECK(m.at("g_liveall,rank=0,pid=" + std::to_string(b.pid())) == 5);
}

TEST_CASE("a dead process's live gauges disappear; its counters and histograms remain") {
  TempDir dir;
  Producer a(dir.path, writes(3, 10));
  Producer b(dir.path, writes(5, 20));
  const std::string b_pid = std::to_string(b.pid());
  const std::string a_pid = std::to_string(a.pid());
  b.kill();  // crashes: its file stays, not closed, pid dead
  auto m = merged(dir.path);
  CHECK(m.at("c,rank=0") == 30);
  CHECK(m.at("h,rank=0#count") == 6);
  CHECK(m.at("g_livemax,rank=0") == 3);
  CHECK(m.at("g_livesum,rank=0") == 3);
  CHECK(m.at("g_max,rank=0") == 5);
  CHECK(m.at("g_min,rank=0") == 3);
  CHECK(m.at("g_sum,rank=0") == 8);
  CHECK(m.count("g_all,rank=0,pid=" + b_pid) == 1);
  CHECK(m.count("g_liveall,rank=0,pid=" + b_pid) == 0);
  CHECK(m.count("g_liveall,rank=0,pid=" + a_pid) == 1);

  a.finish();  // exits normally: its store is closed
  m = merged(dir.path);
  CHECK(m.at("c,rank=0") == 30);
  CHECK(m.count("g_livemax,rank=0") == 0);  // no live process: the series is gone
  CHECK(m.count("g_livesum,rank=0") == 0);
  CHECK(m.count("g_liveall,rank=0,pid=" + a_pid) == 0);
  CHECK(m.at("g_max,rank=0") == 5);
}

TEST_CASE("a file written with a dead pid contributes no live gauge") {
  TempDir dir;
  Producer gone(dir.path, writes(7, 1), /*linger=*/false);
  const auto m = merged(dir.path);
  CHECK(m.at("c,rank=0") == 1);
  CHECK(m.count("g_livemax,rank=0") == 0);
  CHECK(m.at("g_max,rank=0") == 7);
}

TEST_CASE("the launcher's own in-process series merge with the producers' files") {
  TempDir dir;
  Producer a(dir.path, writes(3, 10));
  InProcessMetricStore local;
  local.allocate_series(kCounter, std::vector<std::string>{"0"})[0] = 5;
  local.allocate_series(kCounter, std::vector<std::string>{"1"})[0] = 1;
  local.allocate_series(kLivemax, std::vector<std::string>{"0"})[0] = 9;
  ScrapeSources sources;
  sources.catalog = kCatalog;
  sources.run_dir = dir.path;
  sources.local_store = &local;
  MergeStats stats;
  const auto families = merge_scrape(sources, &stats);
  CHECK(stats.files == 1);
  CHECK(stats.live_files == 1);
  REQUIRE(families.front().metric == &kCounter);
  REQUIRE(families.front().series.size() == 2);
  CHECK(families.front().series[0].labels ==
        std::vector<std::pair<std::string, std::string>>{{"rank", "0"}});
  CHECK(families.front().series[0].slots[0] == 15);
  CHECK(families.front().series[1].slots[0] == 1);
}

TEST_CASE("a producer's definitions travel with its metric file: families outside the catalog are rendered") {
  TempDir dir;
  const MetricDefinition engine_own{"myengine:batches", MetricKind::histogram, "Batch sizes.",
                                    "requests", {"worker"}, {1, 8, 64}, GaugeMode::livemax};
  {
    MultiprocessMetricStore store({dir.path});
    double* slots = store.allocate_series(engine_own, std::vector<std::string>{"a"});
    slots[1] = 3;   // three observations in the (1, 8] bucket
    slots[4] = 12;  // their sum
  }
  MergeStats stats;
  ScrapeSources sources;  // no catalog at all
  sources.run_dir = dir.path;
  const std::vector<MergedFamily> families = merge_scrape(sources, &stats);
  REQUIRE(families.size() == 1);
  CHECK(*families.front().metric == engine_own);
  REQUIRE(families.front().series.size() == 1);
  CHECK(families.front().series[0].slots == std::vector<double>{0, 3, 0, 0, 12});
  CHECK(stats.unknown_series == 0);
}

TEST_CASE("a name two processes define differently keeps the first definition; the other's series are left out") {
  TempDir dir;
  const MetricDefinition as_counter{"shared_name", MetricKind::counter, "", "", {}, {},
                                    GaugeMode::livemax};
  const MetricDefinition as_gauge{"shared_name", MetricKind::gauge, "", "", {}, {},
                                  GaugeMode::livemax};
  {
    MultiprocessMetricStore first({dir.path, "a"});
    first.allocate_series(as_counter, std::vector<std::string>{})[0] = 5;
    MultiprocessMetricStore second({dir.path, "b"});
    second.allocate_series(as_gauge, std::vector<std::string>{})[0] = 7;
  }
  MergeStats stats;
  ScrapeSources sources;
  sources.run_dir = dir.path;
  const std::vector<MergedFamily> families = merge_scrape(sources, &stats);
  REQUIRE(families.size() == 1);
  CHECK(families.front().metric->kind == MetricKind::counter);
  CHECK(families.front().series.at(0).slots[0] == 5);
  CHECK(stats.conflicting_definitions == 1);
  CHECK(stats.mismatched_series == 1);
}

TEST_CASE("a learned definition's bucket bounds are the producer's, to the last bit") {
  TempDir dir;
  const MetricDefinition exponential{"exp_seconds", MetricKind::histogram, "", "seconds", {},
                                     exponential_buckets(0.05, 1.5, 18), GaugeMode::livemax};
  {
    MultiprocessMetricStore store({dir.path});
    store.allocate_series(exponential, std::vector<std::string>{})[0] = 1;
  }
  ScrapeSources sources;
  sources.run_dir = dir.path;
  const std::vector<MergedFamily> families = merge_scrape(sources);
  REQUIRE(families.size() == 1);
  CHECK(families.front().metric->buckets == exponential.buckets);
}

TEST_CASE("label values that are not UTF-8 merge as they are exposed, with U+FFFD") {
  // Found by the exposition fuzzer: "\x82" and "\xC2" were two series that
  // the exposition wrote with the same labels.
  MetricDefinition counter = checked_definition({"events", MetricKind::counter, "", "", {"path"}});
  PrometheusMerge merge({&counter});
  const ProcessIdentity process{::getpid(), 0};
  for (const std::string_view value : {"\x82", "\xC2", "\xEF\xBF\xBD"}) {
    const std::string_view values[] = {value};
    const double slots[] = {1};
    merge.add_series(counter, values, slots, process, true);
  }
  const std::vector<MergedFamily> families = merge.take_families();
  REQUIRE(families.size() == 1);
  REQUIRE(families[0].series.size() == 1);
  CHECK(families[0].series[0].labels[0].second == "\xEF\xBF\xBD");
  CHECK(families[0].series[0].slots[0] == 3);
}
