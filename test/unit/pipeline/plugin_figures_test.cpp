// plugin_figures_test.cpp — the delivery figures a plugin reports through
// tsm_sink.report_figures: kept per sink, counters never going back, a
// smaller (older) struct filling fewer fields, and carried into SinkFigures by
// the output's delivery thread together with the sink's process.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/in_process_metric_store.hpp"
#include "pipeline/collector.hpp"
#include "pipeline/event_router.hpp"
#include "pipeline/plugin_figures.hpp"
#include "test_sinks.hpp"

using namespace tokenspeed::metrics;
using namespace std::chrono_literals;

namespace {

tsm_delivery_figures figures(std::uint64_t sent, std::uint64_t refused, std::uint64_t lost,
                             std::uint64_t retries, std::uint64_t pending) {
  tsm_delivery_figures f{};
  f.struct_size = sizeof f;
  f.sent = sent;
  f.refused = refused;
  f.lost = lost;
  f.retries = retries;
  f.pending = pending;
  return f;
}

}  // namespace

TEST_CASE("a cell says nothing until the plugin reports, then its latest figures") {
  PluginFiguresCell cell;
  CHECK_FALSE(cell.load().reported);
  const tsm_delivery_figures f = figures(10, 2, 1, 3, 4);
  PluginFiguresCell::report(&cell, &f);
  const PluginFigures read = cell.load();
  CHECK(read.reported);
  CHECK(read.sent == 10);
  CHECK(read.refused == 2);
  CHECK(read.lost == 1);
  CHECK(read.retries == 3);
  CHECK(read.pending == 4);
  CHECK(read.accounted() == 17);
}

TEST_CASE("a late report of older totals never takes a counter back; pending is the latest") {
  PluginFiguresCell cell;
  const tsm_delivery_figures newer = figures(100, 5, 2, 7, 9);
  const tsm_delivery_figures older = figures(90, 4, 1, 6, 3);
  PluginFiguresCell::report(&cell, &newer);
  PluginFiguresCell::report(&cell, &older);
  const PluginFigures read = cell.load();
  CHECK(read.sent == 100);
  CHECK(read.refused == 5);
  CHECK(read.lost == 2);
  CHECK(read.retries == 7);
  CHECK(read.pending == 3);
}

TEST_CASE("a struct smaller than today's fills only the fields it holds") {
  PluginFiguresCell cell;
  tsm_delivery_figures f = figures(8, 1, 1, 1, 1);
  f.struct_size = offsetof(tsm_delivery_figures, refused);  // up to sent
  PluginFiguresCell::report(&cell, &f);
  const PluginFigures read = cell.load();
  CHECK(read.reported);
  CHECK(read.sent == 8);
  CHECK(read.refused == 0);
  CHECK(read.pending == 0);
  f.struct_size = 2;  // not even its own size field: ignored
  PluginFiguresCell fresh;
  PluginFiguresCell::report(&fresh, &f);
  CHECK_FALSE(fresh.load().reported);
  PluginFiguresCell::report(&fresh, nullptr);
  PluginFiguresCell::report(nullptr, &f);
  CHECK_FALSE(fresh.load().reported);
}

TEST_CASE("a restarted helper's figures add onto the earlier ones") {
  PluginFigures earlier{true, 10, 1, 2, 3, 4};
  earlier.add(PluginFigures{true, 5, 0, 1, 0, 7});
  CHECK(earlier.sent == 15);
  CHECK(earlier.refused == 1);
  CHECK(earlier.lost == 3);
  CHECK(earlier.retries == 3);
  CHECK(earlier.pending == 7);
}

namespace {

// A sink that reports one figure per event it took, and remembers the
// process it was told it serves.
struct ReportingSink {
  tsm_sink host_fields{};
  std::string process_name;
  std::string node;
  std::int32_t rank = -2;
  std::uint64_t events = 0;
};

int reporting_emit(void* self, const tsm_metric_event*, tsm_buffer*) {
  auto* sink = static_cast<ReportingSink*>(self);
  ++sink->events;
  tsm_delivery_figures f{};
  f.struct_size = sizeof f;
  f.sent = sink->events - sink->events / 4;
  f.refused = sink->events / 4;
  sink->host_fields.report_figures(sink->host_fields.host_sink_data, &f);
  return TSM_OK;
}

int reporting_close(void*, std::int64_t, tsm_buffer*) { return TSM_OK; }

const tsm_sink_vtable kReportingVtable{sizeof(tsm_sink_vtable), reporting_emit, reporting_close};

const MetricDefinition kCounter{
    "tokenspeed:requests", MetricKind::counter, "Requests", "", {}, {}, {}};

}  // namespace

TEST_CASE(
    "the delivery thread hands a sink its process and shows what the sink reports in its stats") {
  ReportingSink sink;
  OutputDefinition output{"reporting",
                          [&sink](tsm_sink& out, std::string&) {
                            REQUIRE(out.struct_size >= TSM_SINK_SIZE_V2);
                            REQUIRE(out.process != nullptr);
                            sink.host_fields = out;
                            sink.process_name = out.process->name;
                            sink.node = out.process->node;
                            sink.rank = out.process->rank;
                            out.vtable = &kReportingVtable;
                            out.self = &sink;
                            return static_cast<int>(TSM_OK);
                          },
                          ""};
  RouterOptions options;
  options.process = make_process_identity("scheduler-1", 1234, "node-b");
  test::LogLines log;
  options.log = log.writer();
  InProcessMetricStore store;
  EventRouter router({output}, options);
  Collector collector(store, &router);
  Counter counter = collector.counter(kCounter).labels();
  for (int i = 0; i < 8; ++i) counter.inc();
  REQUIRE(router.close(10s));
  const SinkFigures stats = router.figures().at(0);
  CHECK(sink.process_name == "scheduler-1");
  CHECK(sink.node == "node-b");
  CHECK(sink.rank == 1);
  CHECK(stats.delivered == 8);
  CHECK(stats.plugin.reported);
  CHECK(stats.plugin.sent == 6);
  CHECK(stats.plugin.refused == 2);
  CHECK(stats.plugin.accounted() == stats.delivered);
}

TEST_CASE("a sink that never reports shows no figures") {
  test::TestSink sink;
  test::LogLines log;
  RouterOptions options;
  options.log = log.writer();
  InProcessMetricStore store;
  EventRouter router({test::test_output("quiet", &sink)}, options);
  Collector collector(store, &router);
  collector.counter(kCounter).labels().inc();
  REQUIRE(router.close(10s));
  CHECK_FALSE(router.figures().at(0).plugin.reported);
}
