// prometheus_merge_test.cpp — merging producer files as prometheus_client's
// multiprocess mode does: counters and histograms summed, gauges by mode,
// a dead process's live gauges gone while its counters and histograms remain.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/in_process_metric_store.hpp"
#include "prometheus/store/multiprocess_metric_store.hpp"
#include "prometheus/store/producer_file_mappings.hpp"
#include "prometheus/scrape/prometheus_exposition.hpp"
#include "prometheus/scrape/prometheus_merge.hpp"
#include "temp_dir.hpp"

using namespace tokenspeed::metrics;

namespace {

using tokenspeed::metrics::test::TempDir;

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
const MetricDefinition kLivemin = gauge("g_livemin", GaugeMode::livemin);
const MetricDefinition kMostrecent = gauge("g_mostrecent", GaugeMode::mostrecent);
const MetricDefinition kLivemostrecent = gauge("g_livemostrecent", GaugeMode::livemostrecent);
const MetricDefinition kSummary{"s", MetricKind::summary, "", "", {"rank"}, {}, GaugeMode::livemax};
const std::vector<const MetricDefinition*> kCatalog{
    &kCounter, &kHistogram, &kLivemax,    &kLivesum,        &kMax,    &kMin, &kSum, &kAll,
    &kLiveall, &kLivemin,   &kMostrecent, &kLivemostrecent, &kSummary};

// A mostrecent gauge's slots: the value and the wall clock of its set.
std::function<void(MultiprocessMetricStore&)> sets_at(double value, double set_time) {
  return [=](MultiprocessMetricStore& store) {
    const std::vector<std::string> labels{"0"};
    for (const MetricDefinition* g : {&kMostrecent, &kLivemostrecent}) {
      double* slots = store.allocate_series(*g, labels);
      slots[0] = value;
      slots[1] = set_time;
    }
    store.allocate_series(kLivemin, labels)[0] = value;
    double* s = store.allocate_series(kSummary, labels);
    s[0] += 2;  // count
    s[1] += value;
  };
}

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
      } else if (family.metric->kind == MetricKind::summary) {
        out[key + "#count"] = series.slots[0];
        out[key + "#sum"] = series.slots[1];
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
  Producer a(dir.path(), writes(3, 10));
  Producer b(dir.path(), writes(5, 20));
  const auto m = merged(dir.path());
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
  Producer a(dir.path(), writes(3, 10));
  Producer b(dir.path(), writes(5, 20));
  const std::string b_pid = std::to_string(b.pid());
  const std::string a_pid = std::to_string(a.pid());
  b.kill();  // crashes: its file stays, not closed, pid dead
  auto m = merged(dir.path());
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
  m = merged(dir.path());
  CHECK(m.at("c,rank=0") == 30);
  CHECK(m.count("g_livemax,rank=0") == 0);  // no live process: the series is gone
  CHECK(m.count("g_livesum,rank=0") == 0);
  CHECK(m.count("g_liveall,rank=0,pid=" + a_pid) == 0);
  CHECK(m.at("g_max,rank=0") == 5);
}

TEST_CASE("mostrecent takes the value set last in any process; livemin the least live one") {
  TempDir dir;
  Producer later(dir.path(), sets_at(4, 2e18));
  Producer earlier(dir.path(), sets_at(9, 1e18));
  auto m = merged(dir.path());
  CHECK(m.at("g_mostrecent,rank=0") == 4);
  CHECK(m.at("g_livemostrecent,rank=0") == 4);
  CHECK(m.at("g_livemin,rank=0") == 4);
  CHECK(m.at("s,rank=0#count") == 4);
  CHECK(m.at("s,rank=0#sum") == 13);

  later.kill();  // the latest set was in a process that is gone
  m = merged(dir.path());
  CHECK(m.at("g_mostrecent,rank=0") == 4);
  CHECK(m.at("g_livemostrecent,rank=0") == 9);
  CHECK(m.at("g_livemin,rank=0") == 9);
  CHECK(m.at("s,rank=0#count") == 4);  // a summary is summed, dead or alive
}

TEST_CASE("a file written with a dead pid contributes no live gauge") {
  TempDir dir;
  Producer gone(dir.path(), writes(7, 1), /*linger=*/false);
  const auto m = merged(dir.path());
  CHECK(m.at("c,rank=0") == 1);
  CHECK(m.count("g_livemax,rank=0") == 0);
  CHECK(m.at("g_max,rank=0") == 7);
}

TEST_CASE("the launcher's own in-process series merge with the producers' files") {
  TempDir dir;
  Producer a(dir.path(), writes(3, 10));
  InProcessMetricStore local;
  local.allocate_series(kCounter, std::vector<std::string>{"0"})[0] = 5;
  local.allocate_series(kCounter, std::vector<std::string>{"1"})[0] = 1;
  local.allocate_series(kLivemax, std::vector<std::string>{"0"})[0] = 9;
  ScrapeSources sources;
  sources.catalog = kCatalog;
  sources.run_dir = dir.path();
  sources.local_store = &local;
  MergeFigures stats;
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

TEST_CASE("a capped family's ordinary series show no overflow label; its overflow series does") {
  const MetricDefinition capped{"tokenspeed:lora_requests",
                                MetricKind::counter,
                                "Requests",
                                "",
                                {"lora", "otel_metric_overflow"},
                                {},
                                {}};
  InProcessMetricStore local;
  local.allocate_series(capped, std::vector<std::string>{"a", ""})[0] = 2;
  local.allocate_series(capped, std::vector<std::string>{"", "true"})[0] = 5;
  ScrapeSources sources;
  sources.catalog = {&capped};
  sources.local_store = &local;
  const auto families = merge_scrape(sources, nullptr);
  REQUIRE(families.size() == 1);
  REQUIRE(families.front().series.size() == 2);
  using Labels = std::vector<std::pair<std::string, std::string>>;
  CHECK(families.front().series[0].labels ==
        Labels{{"lora", ""}, {"otel_metric_overflow", "true"}});
  CHECK(families.front().series[1].labels == Labels{{"lora", "a"}});
  const std::string text = render_exposition(families);
  CHECK(text.find("tokenspeed:lora_requests_total{lora=\"a\"} 2") != std::string::npos);
  CHECK(text.find("otel_metric_overflow=\"\"") == std::string::npos);
}

TEST_CASE(
    "a producer's definitions travel with its metric file: families outside the catalog are "
    "rendered") {
  TempDir dir;
  const MetricDefinition engine_own{"myengine:batches", MetricKind::histogram, "Batch sizes.",
                                    "requests",         {"producer"},          {1, 8, 64},
                                    GaugeMode::livemax};
  {
    MultiprocessMetricStore store({dir.path()});
    double* slots = store.allocate_series(engine_own, std::vector<std::string>{"a"});
    slots[1] = 3;   // three observations in the (1, 8] bucket
    slots[4] = 12;  // their sum
  }
  MergeFigures stats;
  ScrapeSources sources;  // no catalog at all
  sources.run_dir = dir.path();
  const std::vector<MergedFamily> families = merge_scrape(sources, &stats);
  REQUIRE(families.size() == 1);
  CHECK(*families.front().metric == engine_own);
  REQUIRE(families.front().series.size() == 1);
  CHECK(families.front().series[0].slots == std::vector<double>{0, 3, 0, 0, 12});
  CHECK(stats.unknown_series == 0);
}

namespace {

// Writes one producer file called <prefix>_<pid>.db holding one series
// (value 1, no labels) of each definition.
void write_file(const std::filesystem::path& dir, const std::string& prefix,
                const std::vector<MetricDefinition>& definitions) {
  MultiprocessMetricStore store({dir, prefix});
  for (const MetricDefinition& definition : definitions) {
    store.allocate_series(definition, std::vector<std::string>{})[0] = 1;
  }
}

std::string scrape(const std::filesystem::path& dir, MergeFigures* stats = nullptr,
                   std::vector<const MetricDefinition*> catalog = {},
                   MergeConflictLog* log = nullptr) {
  static MergeConflictLog quiet([](std::string_view) {});
  ScrapeSources sources;
  sources.catalog = std::move(catalog);
  sources.run_dir = dir;
  sources.conflict_log = log != nullptr ? log : &quiet;
  return render_exposition(merge_scrape(sources, stats));
}

// Sample name -> the families (TYPE lines) under which it appears, and the
// TYPE names themselves: a valid exposition has one family per name.
std::map<std::string, std::set<std::string>> families_per_sample_name(const std::string& text) {
  std::map<std::string, std::set<std::string>> out;
  std::istringstream lines(text);
  std::string line;
  std::string family;
  while (std::getline(lines, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      family = line.substr(7, line.find(' ', 7) - 7);
      out[family].insert(family);
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    out[line.substr(0, line.find_first_of("{ "))].insert(family);
  }
  return out;
}

bool no_sample_name_in_two_families(const std::string& text) {
  for (const auto& [name, families] : families_per_sample_name(text)) {
    if (families.size() != 1) {
      UNSCOPED_INFO(name << " appears in " << families.size() << " families");
      return false;
    }
  }
  return true;
}

// Gauges in the max mode: the files of these tests are closed, and a closed
// file's gauges in a live mode are not merged.
MetricDefinition plain(const char* name, MetricKind kind, const char* help) {
  return MetricDefinition{name, kind, help, "", {}, {}, GaugeMode::max};
}

}  // namespace

TEST_CASE("the definition /metrics shows for a name does not depend on the order of the files") {
  const MetricDefinition first_help = plain("shared", MetricKind::counter, "Help A.");
  const MetricDefinition second_help = plain("shared", MetricKind::counter, "Help B.");
  const MetricDefinition as_gauge = plain("shared", MetricKind::gauge, "Help C.");
  // Files are read sorted by name: the same holders under swapped names.
  TempDir one, two;
  write_file(one.path(), "a", {first_help});
  write_file(one.path(), "b", {second_help});
  write_file(one.path(), "c", {second_help});
  write_file(one.path(), "d", {as_gauge});
  write_file(two.path(), "a", {as_gauge});
  write_file(two.path(), "b", {second_help});
  write_file(two.path(), "c", {first_help});
  write_file(two.path(), "d", {second_help});
  const std::string text = scrape(one.path());
  CHECK(text == scrape(two.path()));
  // The definition two processes hold wins; one series each is left out.
  CHECK(text.find("# HELP shared_total Help B.\n") != std::string::npos);
  CHECK(text.find("shared_total 2\n") != std::string::npos);

  SECTION("a tie is broken by a fixed order of the definitions, not by file order") {
    TempDir three, four;
    write_file(three.path(), "a", {first_help});
    write_file(three.path(), "b", {second_help});
    write_file(four.path(), "a", {second_help});
    write_file(four.path(), "b", {first_help});
    CHECK(scrape(three.path()) == scrape(four.path()));
  }
}

TEST_CASE("definitions left out are counted per family in the stats and on /metrics") {
  TempDir dir;
  const MetricDefinition as_counter{"shared_name",     MetricKind::counter, "", "", {"k"}, {},
                                    GaugeMode::livemax};
  const MetricDefinition as_gauge{"shared_name", MetricKind::gauge, "", "", {"k"}, {},
                                  GaugeMode::max};
  {
    MultiprocessMetricStore first({dir.path(), "a"});
    first.allocate_series(as_counter, std::vector<std::string>{"x"})[0] = 5;
    MultiprocessMetricStore second({dir.path(), "b"});
    second.allocate_series(as_gauge, std::vector<std::string>{"x"})[0] = 7;
    second.allocate_series(as_gauge, std::vector<std::string>{"y"})[0] = 8;
    MultiprocessMetricStore third({dir.path(), "c"});
    third.allocate_series(as_gauge, std::vector<std::string>{"x"})[0] = 9;
  }
  MergeFigures stats;
  const std::string text = scrape(dir.path(), &stats);
  CHECK(stats.conflicting_definitions == 1);
  CHECK(stats.conflicting_series == 1);
  CHECK(stats.mismatched_series == 0);
  CHECK(text.find("# TYPE shared_name gauge\n") != std::string::npos);
  CHECK(text.find("shared_name_total") == std::string::npos);
  CHECK(text.find("tokenspeed_metrics_merge_conflicting_definitions{family=\"shared_name\"} 1\n") !=
        std::string::npos);
  CHECK(text.find("tokenspeed_metrics_merge_series_left_out{family=\"shared_name\"} 1\n") !=
        std::string::npos);

  SECTION("the catalog's definition wins even when more processes hold another one") {
    MergeFigures with_catalog;
    const std::string shown = scrape(dir.path(), &with_catalog, {&as_counter});
    CHECK(shown.find("shared_name_total{k=\"x\"} 5\n") != std::string::npos);
    CHECK(shown.find("# TYPE shared_name gauge") == std::string::npos);
    CHECK(with_catalog.conflicting_definitions == 1);
    CHECK(with_catalog.conflicting_series == 2);
  }
  SECTION("without a conflict the merge's own gauges are absent") {
    TempDir clean;
    write_file(clean.path(), "a", {as_counter});
    CHECK(scrape(clean.path()).find("tokenspeed_metrics_merge_") == std::string::npos);
  }
}

TEST_CASE("the scraping launcher's own definition wins over one more processes hold") {
  const MetricDefinition launchers = plain("shared", MetricKind::counter, "The launcher's.");
  const MetricDefinition producers = plain("shared", MetricKind::counter, "The producers'.");
  TempDir dir;
  const auto record = [&producers](MultiprocessMetricStore& store) {
    store.allocate_series(producers, std::vector<std::string>{})[0] = 5;
  };
  Producer a(dir.path(), record);
  Producer b(dir.path(), record);
  write_file(dir.path(), "launcher", {launchers});  // written by this process
  MergeFigures stats;
  const std::string text = scrape(dir.path(), &stats);
  CHECK(text.find("# HELP shared_total The launcher's.\n") != std::string::npos);
  CHECK(text.find("shared_total 1\n") != std::string::npos);
  CHECK(stats.conflicting_definitions == 1);
  CHECK(stats.conflicting_series == 1);
}

TEST_CASE(
    "families of two processes whose sample names collide: one is exposed, the other counted") {
  const MetricDefinition counter = plain("h:c", MetricKind::counter, "A counter.");
  const MetricDefinition counter_named_total = plain("h:c_total", MetricKind::gauge, "A gauge.");
  const MetricDefinition histogram{"h:h",  MetricKind::histogram, "A histogram.", "", {},
                                   {1, 2}, GaugeMode::livemax};
  const MetricDefinition bucket_gauge = plain("h:h_bucket", MetricKind::gauge, "Buckets?");
  const MetricDefinition created_gauge = plain("h:h_created", MetricKind::gauge, "Created?");
  TempDir dir;
  write_file(dir.path(), "a", {counter, histogram});
  write_file(dir.path(), "b", {counter_named_total, bucket_gauge});
  write_file(dir.path(), "c", {counter_named_total, created_gauge});
  write_file(dir.path(), "d", {histogram});
  MergeFigures stats;
  const std::string text = scrape(dir.path(), &stats);
  CHECK(no_sample_name_in_two_families(text));
  // h:c_total and h:h are held by two processes each, the others by one.
  CHECK(text.find("# TYPE h:c_total gauge\n") != std::string::npos);
  CHECK(text.find("# TYPE h:c_total counter") == std::string::npos);
  CHECK(text.find("h:h_count 2\n") != std::string::npos);
  CHECK(text.find("# TYPE h:h_bucket") == std::string::npos);
  CHECK(text.find("# TYPE h:h_created") == std::string::npos);
  for (const char* family : {"h:c", "h:h_bucket", "h:h_created"}) {
    INFO(family);
    CHECK(text.find("tokenspeed_metrics_merge_conflicting_definitions{family=\"" +
                    std::string(family) + "\"} 1\n") != std::string::npos);
  }
  CHECK(stats.conflicting_definitions == 3);
  CHECK(stats.conflicting_series == 3);

  SECTION("between equally held families, the one the other is named after is exposed") {
    TempDir tie;
    write_file(tie.path(), "a", {counter_named_total, bucket_gauge});
    write_file(tie.path(), "b", {counter, histogram});
    const std::string shown = scrape(tie.path());
    CHECK(no_sample_name_in_two_families(shown));
    CHECK(shown.find("# TYPE h:c_total counter\n") != std::string::npos);
    CHECK(shown.find("# TYPE h:h histogram\n") != std::string::npos);
    CHECK(shown.find("# TYPE h:c_total gauge") == std::string::npos);
    CHECK(shown.find("# TYPE h:h_bucket gauge") == std::string::npos);
  }
  SECTION("the same files under other names give the same exposition") {
    TempDir other;
    write_file(other.path(), "z", {counter, histogram});
    write_file(other.path(), "m", {counter_named_total, bucket_gauge});
    write_file(other.path(), "a", {counter_named_total, created_gauge});
    write_file(other.path(), "b", {histogram});
    CHECK(scrape(other.path()) == text);
  }
}

TEST_CASE("a producer family that claims a name of the merge's own gauges is left out") {
  TempDir dir;
  const MetricDefinition impostor =
      plain("tokenspeed_metrics_merge_series_left_out", MetricKind::gauge, "Not ours.");
  const MetricDefinition counter = plain("x", MetricKind::counter, "X.");
  const MetricDefinition gauge = plain("x", MetricKind::gauge, "X.");
  write_file(dir.path(), "a", {impostor, counter});
  write_file(dir.path(), "b", {gauge});
  const std::string text = scrape(dir.path());
  CHECK(no_sample_name_in_two_families(text));
  CHECK(text.find("Not ours.") == std::string::npos);
  CHECK(text.find("tokenspeed_metrics_merge_conflicting_definitions{family=\"tokenspeed_metrics_"
                  "merge_series_left_out\"} 1\n") != std::string::npos);
}

TEST_CASE("a conflict is logged once per family with both definitions and their files") {
  TempDir dir;
  const MetricDefinition short_help{
      "lat", MetricKind::histogram, "Latency.", "seconds", {"model"}, {0.1, 1}, GaugeMode::livemax};
  const MetricDefinition long_help{
      "lat", MetricKind::histogram, std::string(500, 'h'), "seconds", {"model", "rank"},
      {0.5}, GaugeMode::livemax};
  {
    MultiprocessMetricStore a({dir.path(), "scheduler-0"});
    a.allocate_series(short_help, std::vector<std::string>{"m"})[0] = 1;
    MultiprocessMetricStore b({dir.path(), "frontend"});
    b.allocate_series(long_help, std::vector<std::string>{"m", "0"})[0] = 1;
  }
  std::vector<std::string> lines;
  MergeConflictLog log([&lines](std::string_view line) { lines.emplace_back(line); });
  scrape(dir.path(), nullptr, {}, &log);
  scrape(dir.path(), nullptr, {}, &log);
  REQUIRE(lines.size() == 1);
  const std::string& line = lines.front();
  INFO(line);
  CHECK(line.find("metric lat is defined differently") != std::string::npos);
  CHECK(line.find(
            "histogram lat (help \"Latency.\", unit seconds, labels [model], buckets [0.1, 1])") !=
        std::string::npos);
  CHECK(line.find("labels [model, rank], buckets [0.5]") != std::string::npos);
  CHECK(line.find("scheduler-0_") != std::string::npos);
  CHECK(line.find("frontend_") != std::string::npos);
  CHECK(line.find(std::string(81, 'h')) == std::string::npos);  // long help cut
  CHECK(line.find(std::string(80, 'h') + "...") != std::string::npos);
  CHECK(line.find("(1 series") != std::string::npos);
  CHECK(line.find('\n') == std::string::npos);
}

TEST_CASE("a learned definition's bucket bounds are the producer's, to the last bit") {
  TempDir dir;
  const MetricDefinition exponential{"exp_seconds",
                                     MetricKind::histogram,
                                     "",
                                     "seconds",
                                     {},
                                     exponential_buckets(0.05, 1.5, 18),
                                     GaugeMode::livemax};
  {
    MultiprocessMetricStore store({dir.path()});
    store.allocate_series(exponential, std::vector<std::string>{})[0] = 1;
  }
  ScrapeSources sources;
  sources.run_dir = dir.path();
  const std::vector<MergedFamily> families = merge_scrape(sources);
  REQUIRE(families.size() == 1);
  CHECK(families.front().metric->buckets == exponential.buckets);
}

TEST_CASE("label values that are not UTF-8 merge as they are exposed, with U+FFFD") {
  // Found by the exposition fuzzer: "\x82" and "\xC2" were two series that
  // the exposition wrote with the same labels.
  MetricDefinition counter = checked_definition({"events", MetricKind::counter, "", "", {"path"}});
  PrometheusMerge merge({&counter});
  const ProcessInstance process{::getpid(), 0};
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

TEST_CASE("series are merged the same whether processes record them in the same order or not") {
  // Process p adds counter, histogram and all-mode gauge series in an order
  // of its own: the same order, reversed, every other one, with series only
  // it has in between. In-order matching must give what a lookup per
  // record gives.
  const auto merge_all = [](bool in_order) {
    PrometheusMerge merge(kCatalog);
    merge.set_match_in_order(in_order);
    for (int p = 0; p < 4; ++p) {
      const ProcessInstance process{static_cast<pid_t>(100000 + p), 0};
      std::vector<int> order;
      for (int i = 0; i < 50; ++i) order.push_back(i);
      if (p == 1) std::reverse(order.begin(), order.end());
      if (p == 2) {
        std::vector<int> some;
        for (int i = 0; i < 50; i += 2) some.push_back(i);
        for (int i = 0; i < 5; ++i) some.insert(some.begin() + 3 * i, 1000 + i);
        order = some;
      }
      for (const int i : order) {
        const std::string rank = std::to_string(i);
        const std::string_view labels[] = {rank};
        const double one[] = {static_cast<double>(p + 1)};
        const double histogram[] = {1.0 * p, 2.0, 3.0, 0.5 * i};
        merge.add_series(kCounter, labels, one, process, true);
        merge.add_series(kHistogram, labels, histogram, process, true);
        merge.add_series(kAll, labels, one, process, true);
        merge.add_series(kMax, labels, one, process, true);
      }
    }
    std::map<std::string, std::vector<double>> out;
    for (const MergedFamily& family : merge.take_families()) {
      for (const MergedSeries& series : family.series) {
        std::string key = family.metric->name;
        for (const auto& [name, value] : series.labels) key += "," + name + "=" + value;
        out[key] = series.slots;
      }
    }
    return out;
  };
  const auto looked_up = merge_all(false);
  const auto in_order = merge_all(true);
  CHECK(in_order == looked_up);
  CHECK(in_order.at("c,rank=0") == std::vector<double>{1 + 2 + 3 + 4});
  CHECK(in_order.at("c,rank=1") == std::vector<double>{1 + 2 + 4});  // not in p=2's set
  CHECK(in_order.at("c,rank=1000") == std::vector<double>{3});
  CHECK(in_order.at("h,rank=4") == std::vector<double>{0 + 1 + 2 + 3, 8, 12, 8});
  CHECK(in_order.at("g_max,rank=7") == std::vector<double>{4});
  CHECK(in_order.at("g_all,rank=8,pid=100002") == std::vector<double>{3});
  CHECK(in_order.size() == 3 * 55 + 50 + 50 + 30 + 50);
}

namespace {

MetricDefinition exponential_histogram() {
  MetricDefinition metric{"x", MetricKind::histogram, "", "", {"rank"}, {}, GaugeMode::livemax};
  metric.exponential = ExponentialHistogramOptions{20, 8, 0};
  return checked_definition(metric);
}

std::function<void(MultiprocessMetricStore&)> observes(const MetricDefinition& metric,
                                                       std::vector<double> values,
                                                       bool die_inside = false) {
  return [&metric, values, die_inside](MultiprocessMetricStore& store) {
    double* slots = store.allocate_series(metric, std::vector<std::string>{"0"});
    for (const double value : values)
      observe_exponential(slots, *metric.exponential, value, 1, value);
    if (die_inside) slots[ExponentialSlot::sequence] += 1;  // as a writer killed mid-change
  };
}

}  // namespace

TEST_CASE("exponential series of several processes merge at the lowest scale, as one histogram") {
  const MetricDefinition metric = exponential_histogram();
  const std::vector<double> narrow{1.0, 1.1, 1.2, -0.5};
  const std::vector<double> wide{0.001, 1.05, 1000.0,  // needs a lower scale in 20 buckets
                                 std::numeric_limits<double>::infinity(),
                                 std::numeric_limits<double>::quiet_NaN()};
  TempDir dir;
  Producer a(dir.path(), observes(metric, narrow));
  Producer b(dir.path(), observes(metric, wide));
  Producer stuck(dir.path(), observes(metric, {5.0}, true));

  kit::ExponentialHistogram expected({20, 8, 0});
  expected.observe(5.0);
  for (const double value : narrow) expected.observe(value);
  for (const double value : wide) expected.observe(value);

  ScrapeSources sources;
  sources.run_dir = dir.path();
  MergeFigures figures;
  const std::vector<MergedFamily> families = merge_scrape(sources, &figures);
  const auto family = std::find_if(families.begin(), families.end(),
                                   [](const MergedFamily& f) { return f.metric->name == "x"; });
  REQUIRE(family != families.end());
  REQUIRE(family->series.size() == 1);
  const kit::ExponentialHistogram& got = *family->series.front().exponential;
  CHECK(got.scale() == expected.scale());
  CHECK(got.count() == expected.count());
  CHECK(got.sum() == Approx(expected.sum()));
  kit::ExponentialPoint got_point, expected_point;
  got.to_otlp(got_point);
  expected.to_otlp(expected_point);
  CHECK(got_point.positive.offset == expected_point.positive.offset);
  CHECK(got_point.positive.bucket_counts == expected_point.positive.bucket_counts);
  CHECK(got_point.negative.bucket_counts == expected_point.negative.bucket_counts);
  // The process left inside an observe (after its stores, before it
  // published): read back as it stands, and counted.
  CHECK(figures.mismatched_series == 0);

  const std::string text = render_exposition(families);
  CHECK(text.find("x_count{rank=\"0\"} 8\n") != std::string::npos);
  CHECK(text.find("x_bucket{rank=\"0\",le=\"+Inf\"} 8\n") != std::string::npos);
  CHECK(text.find("tokenspeed_metrics_observations_interrupted{family=\"x\"} 1\n") !=
        std::string::npos);
  // The infinity and the NaN: in no bucket, count or sum, and counted.
  CHECK(text.find("tokenspeed_metrics_observations_not_finite_total{family=\"x\"} 2\n") !=
        std::string::npos);
}

namespace {

// Forks a producer that records values into x{rank="0"}, then observes last
// and is killed by SIGKILL right after its store number stop (of the series'
// write protocol). True when it died there.
bool killed_inside_observe(const std::filesystem::path& dir, const MetricDefinition& metric,
                           const std::vector<double>& values, double last, long stop) {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    MultiprocessMetricStore store({dir});
    double* slots = store.allocate_series(metric, std::vector<std::string>{"0"});
    for (const double value : values)
      observe_exponential(slots, *metric.exponential, value, 1, value);
    long stores = 0;
    observe_exponential(slots, *metric.exponential, last, 1, last, [&] {
      if (stores++ == stop) ::raise(SIGKILL);
    });
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

long stores_of_observe(const MetricDefinition& metric, const std::vector<double>& values,
                       double last) {
  std::vector<double> slots(exponential_slot_count(*metric.exponential), 0.0);
  for (const double value : values)
    observe_exponential(slots.data(), *metric.exponential, value, 1, value);
  long stores = 0;
  observe_exponential(slots.data(), *metric.exponential, last, 1, last, [&] { ++stores; });
  return stores;
}

}  // namespace

TEST_CASE("a producer killed after any store of an observe keeps its series, less at most that",
          "[fork]") {
  const MetricDefinition metric = exponential_histogram();  // 20 buckets from scale 8
  const std::vector<double> values{1.0, 1.1, 1.2, 1.3, -2.0, 0.0};
  // The last observation: a count only, a run moving up, a downscale of both
  // runs and a move, a new negative bucket, NaN.
  const double last =
      GENERATE(1.05, 0.98, 0.001, 1e6, -0.5, std::numeric_limits<double>::quiet_NaN());
  const long stores = stores_of_observe(metric, values, last);
  for (long stop = 0; stop < stores; ++stop) {
    for (const bool mapped : {false, true}) {
      TempDir dir;
      REQUIRE(killed_inside_observe(dir.path(), metric, values, last, stop));
      ProducerFileMappings mappings;
      ScrapeSources sources;
      sources.run_dir = dir.path();
      if (mapped) sources.file_mappings = &mappings;  // the launcher's way
      static MergeConflictLog quiet([](std::string_view) {});
      sources.conflict_log = &quiet;
      MergeFigures figures;
      const std::string text = render_exposition(merge_scrape(sources, &figures));
      INFO("last " << last << ", killed after store " << stop << " of " << stores << "\n" << text);
      CHECK(figures.mismatched_series == 0);
      const bool before = text.find("x_count{rank=\"0\"} 6\n") != std::string::npos;
      const bool after =
          !std::isnan(last) && text.find("x_count{rank=\"0\"} 7\n") != std::string::npos;
      CHECK((before || after));
      // Stopped before it published: counted (the last store releases the lock word).
      if (stop < stores - 1) {
        CHECK(text.find("tokenspeed_metrics_observations_interrupted{family=\"x\"} 1\n") !=
              std::string::npos);
      }
    }
  }
}

TEST_CASE("a family exponential in one process and classic in another is a conflict, one kept") {
  const MetricDefinition exponential = exponential_histogram();
  const MetricDefinition classic =
      checked_definition({"x", MetricKind::histogram, "", "", {"rank"}, {1}, GaugeMode::livemax});
  TempDir dir;
  Producer a(dir.path(), observes(exponential, {1.0}));
  Producer b(dir.path(), [&classic](MultiprocessMetricStore& store) {
    store.allocate_series(classic, std::vector<std::string>{"0"})[0] += 1;
  });
  ScrapeSources sources;
  sources.run_dir = dir.path();
  std::vector<std::string> lines;
  MergeConflictLog log([&lines](std::string_view line) { lines.emplace_back(line); });
  sources.conflict_log = &log;
  MergeFigures figures;
  const std::vector<MergedFamily> families = merge_scrape(sources, &figures);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("exponential buckets (max_buckets 20") != std::string::npos);
  CHECK(figures.conflicting_definitions == 1);
  CHECK(figures.conflicting_series == 1);
  CHECK(std::count_if(families.begin(), families.end(),
                      [](const MergedFamily& f) { return f.metric->name == "x"; }) == 1);
}
