// isolated_output_test.cpp — an output isolated in a sink helper process,
// driven as its delivery thread drives it: a segfaulting and a deadlocking
// plugin cost only their own events (this process survives, the helper is
// restarted, the loss is counted and the accounting identity stays exact),
// an isolated jsonl output writes exactly what the in-process one writes,
// and the host's isolation keys are checked and taken out of the settings.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>

#include "core/abi_buffer.hpp"
#include "config/isolation_settings.hpp"
#include "plugin/plugin_loader.hpp"
#include "plugin/reporter_registry.hpp"
#include "core/startup_error.hpp"
#include "isolation/isolated_output.hpp"
#include "temp_dir.hpp"
#include "test_sinks.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace tokenspeed::metrics;
using namespace tokenspeed::metrics::isolation;

// Three metric families as the catalog describes them.
struct Families {
  const char* request_labels[2] = {"model_name", "finished_reason"};
  const double bounds[3] = {0.1, 1.0, 10.0};
  tsm_metric_info counter{sizeof(tsm_metric_info),
                          TSM_KIND_COUNTER,
                          "requests_total",
                          "Finished requests.",
                          "",
                          2,
                          request_labels,
                          0,
                          nullptr};
  tsm_metric_info gauge{sizeof(tsm_metric_info),
                        TSM_KIND_GAUGE,
                        "running",
                        "Running requests.",
                        "",
                        0,
                        nullptr,
                        0,
                        nullptr};
  tsm_metric_info histogram{sizeof(tsm_metric_info),
                            TSM_KIND_HISTOGRAM,
                            "latency_seconds",
                            "Latency.",
                            "seconds",
                            2,
                            request_labels,
                            3,
                            bounds};
};

// The i-th event of a fixed workload; "poison" as a label value marks the
// event a fault plugin (with "on": "poison") fails on.
tsm_metric_event event_of(const Families& f, int i, const char* const* values) {
  tsm_metric_event e{};
  e.struct_size = sizeof e;
  e.timestamp_ns = 1'700'000'000'000'000'000 + i * 1'000'000LL;
  switch (i % 3) {
    case 0:
      e.operation = TSM_OP_INC;
      e.info = &f.counter;
      e.value = 1;
      e.weight = 1;
      break;
    case 1:
      e.operation = TSM_OP_SET;
      e.info = &f.gauge;
      e.value = i;
      e.weight = 1;
      break;
    default:
      e.operation = TSM_OP_OBSERVE;
      e.info = &f.histogram;
      e.value = 0.001 * i;
      e.weight = 1 + i % 4;
      break;
  }
  e.metric = e.info->name;
  e.label_count = e.info->label_count;
  e.label_names = e.info->label_names;
  e.label_values = e.label_count != 0 ? values : nullptr;
  return e;
}

std::string build_root() { return TSM_BUILD_ROOT; }
std::string test_plugin(const std::string& name) {
  return build_root() + "/test/plugins/" + name + "/" + name + ".so";
}

using test::eventually;
using Lines = test::LogLines;

IsolatedOutputOptions fault_options(const std::string& plugin, Lines& lines,
                                    std::chrono::milliseconds deadlock = 10s) {
  IsolatedOutputOptions options;
  options.output = plugin;
  options.plugin_path = test_plugin(plugin);
  options.reporter = plugin;
  options.producer_config = R"({"on": "poison"})";
  options.settings.process = true;
  options.settings.deadlock_timeout = deadlock;
  options.log = lines.writer();
  options.initial_backoff = 10ms;
  return options;
}

// Emits through the sink's vtable, as the delivery thread does.
struct Driver {
  tsm_sink sink{sizeof(tsm_sink), nullptr, nullptr, nullptr, nullptr, nullptr};
  AbiBuffer error;
  int emit(const tsm_metric_event& e) { return sink.vtable->emit(sink.self, &e, error.get()); }
  int close(std::chrono::nanoseconds timeout) {
    return sink.vtable->close(sink.self, timeout.count(), error.get());
  }
};

// The fault scenario: 100 events, the poison one, 100 more; close.
void run_fault_scenario(IsolatedOutput& output, Driver& driver) {
  Families families;
  const char* normal[2] = {"llama", "stop"};
  const char* poison[2] = {"llama", "poison"};
  std::string error;
  REQUIRE(output.create_sink(driver.sink, error) == TSM_OK);
  for (int i = 0; i < 100; ++i) REQUIRE(driver.emit(event_of(families, i * 3, normal)) == TSM_OK);
  REQUIRE(driver.emit(event_of(families, 300, poison)) == TSM_OK);
  // The helper dies (or is killed) on the poison event and a new one starts.
  REQUIRE(eventually([&] {
    return output.figures().helper_restarts >= 1 && output.figures().lost_in_helper == 1;
  }));
  for (int i = 101; i < 201; ++i) REQUIRE(driver.emit(event_of(families, i * 3, normal)) == TSM_OK);
  REQUIRE(driver.close(10s) == TSM_OK);
}

void check_identity_after_adjust(const IsolatedOutput& output, std::uint64_t emitted) {
  const IsolatedFigures f = output.figures();
  // The delivery thread's view: every emit returned success.
  SinkFigures stats;
  stats.accepted = emitted;
  stats.delivered = emitted;
  output.adjust(stats);
  CHECK(stats.isolated);
  CHECK(stats.queue_depth == 0);
  CHECK(stats.lost_in_helper == f.lost_in_helper);
  CHECK(stats.accepted == stats.delivered + stats.dropped_ring_full + stats.dropped_sink_disabled +
                              stats.dropped_after_close + stats.discarded_at_deadline +
                              stats.lost_in_helper + stats.queue_depth);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("a helper that segfaults in emit is restarted; only the event in its emit is lost") {
  Lines lines;
  IsolatedOutput output(fault_options("segfaults_in_emit", lines));
  Driver driver;
  run_fault_scenario(output, driver);

  const IsolatedFigures f = output.figures();
  CHECK(f.written == 201);
  CHECK(f.lost_in_helper == 1);  // the poison event, inside the crashed emit
  CHECK(f.delivered == 200);     // those queued behind it went to the next helper
  CHECK(f.discarded_at_deadline == 0);
  CHECK(f.helper_restarts >= 1);
  check_identity_after_adjust(output, 201);
  const std::string log = lines.all();
  CHECK_THAT(log, Catch::Contains("output 'segfaults_in_emit' (plugin file '" +
                                  test_plugin("segfaults_in_emit") + "'): sink helper (pid "));
  CHECK_THAT(log, Catch::Contains("killed by SIGSEGV (segmentation fault); 1 event lost in the "
                                  "helper; restarting in "));
}

TEST_CASE("a helper that deadlocks in emit is killed after the deadlock timeout and restarted") {
  Lines lines;
  // Long enough that loading the plugin on a busy machine is not taken for a
  // deadlock; the helper's process start has an allowance of its own.
  IsolatedOutput output(fault_options("blocks_in_emit", lines, 1s));
  Driver driver;
  run_fault_scenario(output, driver);

  const IsolatedFigures f = output.figures();
  CHECK(f.written == 201);
  CHECK(f.lost_in_helper == 1);
  CHECK(f.delivered == 200);
  CHECK(f.helper_restarts >= 1);
  check_identity_after_adjust(output, 201);
  CHECK_THAT(lines.all(),
             Catch::Contains("made no progress while events waited for 1.0 s "
                             "(deadlock timeout); killed; 1 event lost in the helper"));
}

TEST_CASE("a helper stuck in emit at close is killed at the deadline; its events are discarded") {
  Lines lines;
  IsolatedOutput output(fault_options("blocks_in_emit", lines));  // never killed before close
  Driver driver;
  Families families;
  const char* poison[2] = {"llama", "poison"};
  const char* normal[2] = {"llama", "stop"};
  std::string error;
  REQUIRE(output.create_sink(driver.sink, error) == TSM_OK);
  REQUIRE(driver.emit(event_of(families, 0, poison)) == TSM_OK);
  for (int i = 1; i < 11; ++i) REQUIRE(driver.emit(event_of(families, i, normal)) == TSM_OK);
  REQUIRE(eventually([&] { return output.figures().written == 11; }));
  CHECK(driver.close(100ms) == TSM_ERROR);
  CHECK_THAT(driver.error.str(), Catch::Contains("did not finish close within its timeout"));
  const IsolatedFigures f = output.figures();
  CHECK(f.discarded_at_deadline == 11);  // the one in emit and the ten behind it
  CHECK(f.lost_in_helper == 0);
  check_identity_after_adjust(output, 11);
}

TEST_CASE("a helper slow to start is not taken for a deadlock") {
  // A helper that needs longer to exec than the deadlock timeout allows (a
  // busy machine): the wrapper delays the real helper's start by 2 s.
  const char* real = std::getenv("TOKENSPEED_METRICS_SINK_HELPER");
  REQUIRE(real != nullptr);
  const test::TempDir dir("tsm-slow-helper");
  const fs::path wrapper = dir.path() / "slow-helper";
  {
    std::ofstream script(wrapper);
    script << "#!/bin/sh\nsleep 2\nexec '" << real << "' \"$@\"\n";
  }
  fs::permissions(wrapper, fs::perms::owner_all);
  const std::string saved = real;
  ::setenv("TOKENSPEED_METRICS_SINK_HELPER", wrapper.c_str(), 1);

  Lines lines;
  IsolatedOutput output(fault_options("blocks_in_emit", lines, 500ms));
  Driver driver;
  Families families;
  const char* normal[2] = {"llama", "stop"};
  std::string error;
  const int created = output.create_sink(driver.sink, error);
  ::setenv("TOKENSPEED_METRICS_SINK_HELPER", saved.c_str(), 1);
  CHECK(error.empty());
  REQUIRE(created == TSM_OK);
  REQUIRE(driver.emit(event_of(families, 0, normal)) == TSM_OK);
  REQUIRE(eventually([&] { return output.figures().delivered == 1; }));
  CHECK(driver.close(10s) == TSM_OK);
  CHECK(output.figures().helper_restarts == 0);
}

TEST_CASE("a create_sink failure in the helper fails the isolated sink's create_sink") {
  // The supervisor looks often, so that it also looks in the moment between
  // the helper's "create failed" and its exit: that is no success either.
  for (int attempt = 0; attempt < 20; ++attempt) {
    Lines lines;
    IsolatedOutputOptions options = fault_options("segfaults_in_emit", lines);
    options.reporter = "no_such_reporter";
    options.supervise_interval = 1ms;
    IsolatedOutput output(options);
    Driver driver;
    std::string error;
    REQUIRE(output.create_sink(driver.sink, error) == TSM_ERROR);
    REQUIRE_THAT(error, Catch::Contains("does not register reporter 'no_such_reporter'"));
  }
}

TEST_CASE("an isolated jsonl output writes exactly what the in-process one writes") {
  const test::TempDir temp("tsm-isolation");
  const fs::path& dir = temp.path();
  ReporterRegistry registry;
  PluginLoader loader(registry, [](const std::string&) {});
  PluginSearchOptions search;
  search.plugin_dirs = {build_root() + "/plugins/jsonl"};
  search.allow_insecure = true;
  loader.load(search);
  const Reporter* jsonl = registry.find("jsonl");
  REQUIRE(jsonl != nullptr);

  Families families;
  const char* values[2] = {"llama", "stop"};
  auto workload = [&](Driver& driver) {
    for (int i = 0; i < 3000; ++i) REQUIRE(driver.emit(event_of(families, i, values)) == TSM_OK);
    REQUIRE(driver.close(10s) == TSM_OK);
  };

  const boost::json::object in_process_config =
      jsonl->validate(boost::json::object{{"path", (dir / "in_process.jsonl").string()}});
  CreateSinkResult created = jsonl->create_sink(in_process_config);
  REQUIRE(created.ok);
  Driver in_process;
  in_process.sink = created.sink;
  workload(in_process);

  const boost::json::object isolated_config =
      jsonl->validate(boost::json::object{{"path", (dir / "isolated.jsonl").string()}});
  Lines lines;
  IsolatedOutputOptions options;
  options.output = "jsonl";
  options.plugin_path = jsonl->plugin_path();
  options.reporter = "jsonl";
  options.producer_config = boost::json::serialize(isolated_config);
  options.settings.process = true;
  options.log = lines.writer();
  IsolatedOutput output(options);
  Driver isolated;
  std::string error;
  REQUIRE(output.create_sink(isolated.sink, error) == TSM_OK);
  workload(isolated);

  const std::string expected = read_file(dir / "in_process.jsonl");
  CHECK(std::count(expected.begin(), expected.end(), '\n') == 3000);
  CHECK(read_file(dir / "isolated.jsonl") == expected);
  CHECK(output.figures().delivered == 3000);
  CHECK(output.figures().helper_restarts == 0);
  CHECK(lines.all().empty());
}

TEST_CASE("the host's isolation keys are taken out of the settings and checked") {
  boost::json::object config{
      {"path", "/tmp/x"}, {"isolation", "process"}, {"isolation_deadlock_timeout_ms", 250}};
  const IsolationSettings settings = take_isolation_settings(config, "jsonl", "/etc/m.json");
  CHECK(settings.process);
  CHECK(settings.deadlock_timeout == 250ms);
  CHECK(config == boost::json::object{{"path", "/tmp/x"}});

  boost::json::object none{{"isolation", "none"}};
  CHECK_FALSE(take_isolation_settings(none, "jsonl", "").process);
  CHECK(none.empty());

  auto message = [](boost::json::object config) -> std::string {
    try {
      take_isolation_settings(config, "jsonl", "/etc/m.json");
    } catch (const StartupError& error) {
      return error.what();
    }
    return "accepted";
  };
  CHECK(message({{"isolation", "thread"}}) ==
        "reporter 'jsonl': file '/etc/m.json': key 'jsonl.isolation': unknown isolation 'thread' "
        "(expected \"process\" or \"none\")");
  CHECK_THAT(message({{"isolation", true}}),
             Catch::StartsWith("reporter 'jsonl': file '/etc/m.json': key 'jsonl.isolation': "
                               "must be a string"));
  CHECK_THAT(message({{"isolation_deadlock_timeout_ms", 500}}),
             Catch::EndsWith("key 'jsonl.isolation_deadlock_timeout_ms': applies only with "
                             "\"isolation\": \"process\""));
  CHECK_THAT(message({{"isolation", "process"}, {"isolation_deadlock_timeout_ms", 5}}),
             Catch::Contains("must be an integer number of milliseconds from 100 to 3600000"));
  CHECK_THAT(message({{"isolation", "process"}, {"isolation_deadlock_timeout_ms", "1s"}}),
             Catch::Contains("must be an integer number of milliseconds"));

  const IsolationSettings round_trip = IsolationSettings::from_json(settings.to_json());
  CHECK(round_trip.process);
  CHECK(round_trip.deadlock_timeout == 250ms);
}
