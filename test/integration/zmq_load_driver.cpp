// zmq_load_driver.cpp — drives the zmq_load sink as the host would, from
// lines on stdin, so that the Python peers (python3-zmq, python3-msgpack)
// can check what goes out on the wire: golden vectors, framing, sequence,
// freshness, heartbeats, high-water-mark drops and engine-shaped call
// sequences. One command per line; "ok" (or the asked-for figures) answers
// each:
//   set FAMILY VALUE [LABEL=VALUE ...]    a gauge set
//   inc FAMILY VALUE [LABEL=VALUE ...]    a counter increment
//   ramp FAMILY COUNT PAUSE_US [LABEL=VALUE ...]
//                                         sets 1..COUNT, then prints one line
//                                         "set VALUE MONOTONIC_NS" per value
//   figures                               the sink's figures and its delivery figures, JSON
//   close                                 closes the sink, prints the figures, exits
// Options: --endpoint E --schema S --preset P --rank-label L --capacity N
//          --worker-id N --heartbeat-ms N --process-rank N --map FIELD=FAMILY
//          --require-full-fpm 1
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <tokenspeed/metric_reporter.hpp>

#include "zmq_load_sink.hpp"

namespace zl = tokenspeed::metrics::zmq_load;
namespace plugin = tokenspeed::metrics::plugin;

namespace {

int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

zl::Preset preset_of(const std::string& name) {
  if (name == "vllm") return zl::Preset::kVllm;
  if (name == "sglang") return zl::Preset::kSglang;
  return zl::Preset::kTokenspeed;
}

zl::ZmqLoadOptions options_from(int argc, char** argv) {
  zl::ZmqLoadOptions options;
  options.rank_label = "dp_rank";
  options.heartbeat = std::chrono::milliseconds(1000);
  options.max_ranks = 64;
  std::string preset = "tokenspeed";
  std::vector<std::pair<std::string, std::string>> map;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const std::string value = argv[i + 1];
    if (key == "--endpoint") options.endpoint = zl::parse_endpoint(value);
    if (key == "--schema")
      options.schema = value == "dynamo_fpm_v1" ? zl::Schema::kForwardPass : zl::Schema::kLoadStat;
    if (key == "--preset") preset = value;
    if (key == "--rank-label") options.rank_label = value;
    if (key == "--capacity") options.max_total_num_tokens = std::stoll(value);
    if (key == "--worker-id") options.worker_id = std::stoull(value);
    if (key == "--heartbeat-ms") options.heartbeat = std::chrono::milliseconds(std::stoll(value));
    if (key == "--process-rank") options.process_rank = std::stoi(value);
    if (key == "--require-full-fpm") options.require_full_fpm = value == "1";
    if (key == "--map")
      map.emplace_back(value.substr(0, value.find('=')), value.substr(value.find('=') + 1));
  }
  options.fields = zl::FieldMap::preset(preset_of(preset));
  options.fields.override_with(map);
  return options;
}

// One event of a command line's family, value and labels.
struct Event {
  std::string family;
  std::vector<std::string> names, values;
  std::vector<const char*> name_ptrs, value_ptrs;
  tsm_metric_info info{};
  tsm_metric_event event{};

  Event(std::string family_, uint32_t operation, std::istringstream& rest)
      : family(std::move(family_)) {
    for (std::string pair; rest >> pair;) {
      names.push_back(pair.substr(0, pair.find('=')));
      values.push_back(pair.substr(pair.find('=') + 1));
    }
    for (std::size_t i = 0; i < names.size(); ++i) {
      name_ptrs.push_back(names[i].c_str());
      value_ptrs.push_back(values[i].c_str());
    }
    info.struct_size = sizeof info;
    info.kind = operation == TSM_OP_INC ? TSM_KIND_COUNTER : TSM_KIND_GAUGE;
    info.name = family.c_str();
    event.struct_size = sizeof event;
    event.operation = operation;
    event.metric = family.c_str();
    event.weight = 1;
    event.label_count = static_cast<uint32_t>(names.size());
    event.label_names = name_ptrs.data();
    event.label_values = value_ptrs.data();
    event.info = &info;
  }

  const tsm_metric_event& at(double value) {
    event.value = value;
    event.timestamp_ns = clock_ns(CLOCK_REALTIME);
    return event;
  }
};

// The delivery figures the sink last reported, as the host keeps them.
std::atomic<uint64_t> g_sent{0}, g_refused{0}, g_lost{0}, g_retries{0};

void keep_figures(void*, const tsm_delivery_figures* figures) {
  g_sent.store(figures->sent);
  g_refused.store(figures->refused);
  g_lost.store(figures->lost);
  g_retries.store(figures->retries);
}

void log_line(void*, uint32_t, const char* message) { std::fprintf(stderr, "%s\n", message); }

void print_figures(const zl::ZmqLoadSink& sink) {
  const zl::ZmqLoadFigures f = sink.figures();
  std::printf("{\"sent\": %llu, \"refused\": %llu, \"lost\": %llu, \"retries\": %llu, ",
              static_cast<unsigned long long>(g_sent.load()),
              static_cast<unsigned long long>(g_refused.load()),
              static_cast<unsigned long long>(g_lost.load()),
              static_cast<unsigned long long>(g_retries.load()));
  std::printf(
      "\"messages_sent\": %llu, \"messages_dropped\": %llu, \"send_failures\": %llu, "
      "\"bind_failures\": %llu, \"events_invalid\": %llu, \"fpm_commits_dropped\": %llu}\n",
      static_cast<unsigned long long>(f.messages_sent),
      static_cast<unsigned long long>(f.messages_dropped),
      static_cast<unsigned long long>(f.send_failures),
      static_cast<unsigned long long>(f.bind_failures),
      static_cast<unsigned long long>(f.events_invalid),
      static_cast<unsigned long long>(f.fpm_commits_dropped));
}

void ramp(zl::ZmqLoadSink& sink, std::istringstream& in) {
  std::string family;
  long count = 0;
  long pause_us = 0;
  in >> family >> count >> pause_us;
  Event event(family, TSM_OP_SET, in);
  std::vector<int64_t> times;
  times.reserve(static_cast<std::size_t>(count));
  for (long v = 1; v <= count; ++v) {
    times.push_back(clock_ns(CLOCK_MONOTONIC));
    sink.emit(event.at(static_cast<double>(v)));
    if (pause_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
  }
  for (long v = 1; v <= count; ++v)
    std::printf("set %ld %lld\n", v, static_cast<long long>(times[v - 1]));
}

}  // namespace

int main(int argc, char** argv) {
  // Log lines go to stderr, for the test's failure output.
  static tsm_host_api api{};
  api.struct_size = sizeof api;
  api.log = log_line;
  tsm_sink slot{};
  slot.struct_size = sizeof slot;
  slot.report_figures = keep_figures;
  zl::ZmqLoadSink sink(options_from(argc, argv), plugin::Host(api).for_sink(slot));
  for (std::string line; std::getline(std::cin, line);) {
    std::istringstream in(line);
    std::string command;
    in >> command;
    if (command == "set" || command == "inc") {
      std::string family;
      double value = 0;
      in >> family >> value;
      Event event(family, command == "set" ? TSM_OP_SET : TSM_OP_INC, in);
      sink.emit(event.at(value));
    } else if (command == "ramp") {
      ramp(sink, in);
    } else if (command == "figures") {
      print_figures(sink);
      std::fflush(stdout);
      continue;
    } else if (command == "close") {
      sink.close(std::chrono::seconds(1));
      print_figures(sink);
      return 0;
    }
    std::printf("ok\n");
    std::fflush(stdout);
  }
  return 0;
}
