// statsd_bench.cpp — the statsd output's costs: events per second that one
// delivery thread pushes through the sink's emit (counters and gauges into the
// per-flush aggregation, observations formatted as lines), per flavour; and
// datagrams per second that the delivery thread packs and sends through a
// non-blocking socket to a local receiver draining on a thread of its own.
#include <benchmark/benchmark.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <tokenspeed/kit/aggregation.hpp>

#include "export_cpu_sizes.hpp"
#include "statsd_format.hpp"
#include "statsd_packer.hpp"
#include "statsd_sink.hpp"
#include "statsd_socket.hpp"

namespace statsd = tokenspeed::metrics::statsd;
namespace plugin = tokenspeed::metrics::plugin;
namespace kit = tokenspeed::metrics::kit;

namespace {

const char* const kLabelNames[] = {"model_name", "app_key", "dp_rank"};

tsm_metric_info make_info(uint32_t kind, const char* name) {
  tsm_metric_info i{};
  i.struct_size = sizeof i;
  i.kind = kind;
  i.name = name;
  i.help = "help";
  i.unit = kind == TSM_KIND_HISTOGRAM ? "seconds" : "tokens";
  i.label_count = 3;
  i.label_names = kLabelNames;
  return i;
}

const tsm_metric_info kCounter = make_info(TSM_KIND_COUNTER, "tokenspeed:generation_tokens_total");
const tsm_metric_info kGauge = make_info(TSM_KIND_GAUGE, "tokenspeed:num_requests_running");
const tsm_metric_info kHistogram =
    make_info(TSM_KIND_HISTOGRAM, "tokenspeed:inter_token_latency_seconds");

struct EventSet {
  explicit EventSet(int series) {
    for (int i = 0; i < series; ++i) ranks.push_back(std::to_string(i));
    values.resize(static_cast<std::size_t>(series) * 3);
    for (std::size_t i = 0; i < static_cast<std::size_t>(series); ++i) {
      values[3 * i] = "llama-3-8b";
      values[3 * i + 1] = "default";
      values[3 * i + 2] = ranks[i].c_str();
      tsm_metric_event e{};
      e.struct_size = sizeof e;
      e.weight = 1;
      e.label_count = 3;
      e.label_names = kLabelNames;
      e.label_values = &values[3 * i];
      switch (i % 3) {
        case 0:
          e.info = &kCounter;
          e.operation = TSM_OP_INC;
          e.value = 3;
          break;
        case 1:
          e.info = &kGauge;
          e.operation = TSM_OP_SET;
          e.value = 7;
          break;
        default:
          e.info = &kHistogram;
          e.operation = TSM_OP_OBSERVE;
          e.value = 0.0125;
          e.weight = 4;
          break;
      }
      e.metric = e.info->name;
      events.push_back(e);
    }
  }
  std::vector<std::string> ranks;
  std::vector<const char*> values;
  std::vector<tsm_metric_event> events;
};

// A Unix datagram or UDP (127.0.0.1, 4 MiB receive buffer) receiver that
// reads and discards on its own thread.
class DrainingReceiver {
 public:
  explicit DrainingReceiver(bool udp = false) {
    if (udp) {
      fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
      const int size = 4 << 20;
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
      sockaddr_in at{};
      at.sin_family = AF_INET;
      at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::bind(fd_, reinterpret_cast<const sockaddr*>(&at), sizeof at) != 0) std::perror("bind");
      socklen_t length = sizeof at;
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&at), &length);
      address_ = "127.0.0.1:" + std::to_string(ntohs(at.sin_port));
    } else {
      path_ = "/tmp/statsd-bench-" + std::to_string(::getpid()) + ".sock";
      ::unlink(path_.c_str());
      fd_ = ::socket(AF_UNIX, SOCK_DGRAM, 0);
      sockaddr_un at{};
      at.sun_family = AF_UNIX;
      std::memcpy(at.sun_path, path_.data(), path_.size());
      if (::bind(fd_, reinterpret_cast<const sockaddr*>(&at), sizeof at) != 0) std::perror("bind");
      address_ = "unix://" + path_;
    }
    timeval tv{0, 100000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    thread_ = std::thread([this] {
      char buffer[65536];
      while (!stop_.load()) {
        if (::recv(fd_, buffer, sizeof buffer, 0) > 0) received_.fetch_add(1);
      }
    });
  }
  ~DrainingReceiver() {
    stop_.store(true);
    thread_.join();
    ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  const std::string& address() const { return address_; }

 private:
  std::string path_;
  std::string address_;
  int fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> received_{0};
  std::thread thread_;
};

plugin::Host quiet_host() {
  static tsm_host_api api{};
  api.struct_size = sizeof api;
  api.log = [](void*, uint32_t, const char*) {};
  return plugin::Host(api);
}

// Events per second through emit: a third counters, gauges (aggregated) and
// weighted observations (formatted), 300 series, flushing every 10 ms.
void BM_Emit(benchmark::State& state) {
  DrainingReceiver receiver;
  statsd::StatsdOptions options;
  options.address = statsd::parse_address(receiver.address());
  options.format.flavour =
      state.range(0) == 0 ? statsd::Flavour::kStatsd : statsd::Flavour::kDogstatsd;
  options.max_datagram_bytes = 8192;
  options.flush_interval = std::chrono::milliseconds(10);
  options.max_buffer_bytes = 64 << 20;
  options.aggregate = true;
  options.dns_refresh = std::chrono::seconds(30);
  options.max_series = 100000;
  statsd::StatsdSink sink(options, quiet_host());
  const EventSet set(300);
  std::size_t at = 0;
  for (auto _ : state) {
    sink.emit(set.events[at]);
    if (++at == set.events.size()) at = 0;
  }
  state.SetItemsProcessed(state.iterations());
  try {
    sink.close(std::chrono::seconds(5));
  } catch (...) {
  }
  const statsd::StatsdSinkFigures stats = sink.figures();
  state.counters["datagrams"] = static_cast<double>(stats.datagrams_sent);
  state.counters["dropped_events"] = static_cast<double>(stats.events_buffer_full);
  state.SetLabel(state.range(0) == 0 ? "statsd" : "dogstatsd");
}
BENCHMARK(BM_Emit)->Arg(0)->Arg(1)->UseRealTime();

// Datagrams per second: 10,000 DogStatsD lines packed into datagrams of
// max_datagram_bytes (first argument) and sent non-blocking over UDP
// (second argument 1) or a Unix socket (0) to a draining receiver.
void BM_PackAndSend(benchmark::State& state) {
  DrainingReceiver receiver(state.range(1) == 1);
  statsd::DatagramSocket socket(statsd::parse_address(receiver.address()),
                                std::chrono::milliseconds(30000));
  std::string why;
  if (!socket.prepare(statsd::DatagramSocket::Clock::now(), why)) {
    state.SkipWithError(why.c_str());
    return;
  }
  const EventSet set(300);
  statsd::FormatOptions format;
  format.flavour = statsd::Flavour::kDogstatsd;
  std::string lines;
  for (int i = 0; i < 10000; ++i) {
    const tsm_metric_event& e = set.events[static_cast<std::size_t>(i) % set.events.size()];
    statsd::LabelView labels;
    labels.count = e.label_count;
    labels.names = e.label_names;
    labels.values = e.label_values;
    statsd::append_line(lines, format, e.metric, labels, statsd::LineType::kDistribution, e.value,
                        e.weight);
    lines += '\n';
  }
  statsd::DatagramPacker packer(static_cast<std::size_t>(state.range(0)));
  std::vector<std::string> datagrams;
  uint64_t sent = 0;
  uint64_t dropped = 0;
  for (auto _ : state) {
    datagrams.clear();
    packer.add_lines(lines, datagrams);
    packer.finish(datagrams);
    for (const std::string& d : datagrams) {
      if (socket.send(d, why) == statsd::DatagramSocket::Outcome::kSent) {
        ++sent;
      } else {
        ++dropped;
      }
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(sent + dropped));
  state.counters["sent/s"] =
      benchmark::Counter(static_cast<double>(sent), benchmark::Counter::kIsRate);
  state.counters["dropped"] = static_cast<double>(dropped);
  state.counters["lines/datagram"] =
      static_cast<double>(10000) / static_cast<double>(datagrams.size());
}
BENCHMARK(BM_PackAndSend)->Args({1432, 1})->Args({8192, 0})->UseRealTime();

// The CPU of one flush without the network, at range(0) series, as the
// delivery thread does it with aggregation on: collect the counters and
// gauges that changed since the last flush (every one, here), format a line
// for each, and pack them with the observation lines emit formatted (a
// third of the series, one observation each) into UDP-sized datagrams. The
// series are touched again between flushes, outside the timing.
void BM_ExportCpu(benchmark::State& state) {
  const auto series = static_cast<int>(state.range(0));
  const EventSet set(series);
  kit::AggregationOptions aggregation;
  aggregation.temporality = kit::Temporality::kDelta;
  aggregation.max_series = static_cast<std::size_t>(series);
  kit::Aggregator aggregator(aggregation);
  statsd::FormatOptions format;
  format.flavour = statsd::Flavour::kDogstatsd;
  std::string observations;
  for (const tsm_metric_event& e : set.events) {
    if (e.info->kind != TSM_KIND_HISTOGRAM) continue;
    statsd::LabelView labels;
    labels.count = e.label_count;
    labels.names = e.label_names;
    labels.values = e.label_values;
    statsd::append_line(observations, format, e.metric, labels, statsd::LineType::kDistribution,
                        e.value, e.weight);
    observations += '\n';
  }
  statsd::DatagramPacker packer(1432);
  std::vector<std::string> datagrams;
  std::string line;
  for (auto _ : state) {
    state.PauseTiming();
    for (const tsm_metric_event& e : set.events) {
      if (e.info->kind != TSM_KIND_HISTOGRAM) aggregator.add(e);
    }
    datagrams.clear();
    state.ResumeTiming();
    const kit::Snapshot snapshot = aggregator.collect(kit::unix_time_ns());
    for (const kit::Point& point : snapshot.points) {
      const kit::SeriesFamily& family = *point.family;
      statsd::LabelView labels;
      labels.count = static_cast<uint32_t>(family.label_names.size());
      labels.name_strings = family.label_names.data();
      labels.value_strings = point.label_values->data();
      line.clear();
      statsd::append_line(
          line, format, family.name, labels,
          family.kind == TSM_KIND_GAUGE ? statsd::LineType::kGauge : statsd::LineType::kCounter,
          point.value, 1);
      packer.add_lines(line, datagrams);
    }
    packer.add_lines(observations, datagrams);
    packer.finish(datagrams);
  }
  std::size_t bytes = 0;
  for (const std::string& d : datagrams) bytes += d.size();
  state.counters["series"] = series;
  state.counters["datagrams"] = static_cast<double>(datagrams.size());
  state.counters["bytes"] = static_cast<double>(bytes);
  state.SetItemsProcessed(state.iterations() * series);
}
BENCHMARK(BM_ExportCpu)->Apply(export_cpu_sizes);

}  // namespace

BENCHMARK_MAIN();
