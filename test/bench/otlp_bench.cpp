// otlp_bench.cpp — the otlp output's costs: events per second that one
// delivery thread pushes through the sink's emit into the aggregation state (goal:
// at least 10 M/s), and the collect + encode + gzip and the HTTP export of
// 10,000 series (to a local keep-alive HTTP server on a thread of its own).
#include <benchmark/benchmark.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <tokenspeed/kit/aggregation.hpp>
#include <tokenspeed/kit/gzip.hpp>
#include <tokenspeed/kit/http_client.hpp>

#include "export_cpu_sizes.hpp"
#include "bench_events.hpp"
#include "otlp_encoder.hpp"
#include "otlp_sink.hpp"

namespace bench = tokenspeed::metrics::bench;
namespace kit = tokenspeed::metrics::kit;
namespace otlp = tokenspeed::metrics::otlp;

namespace {

using bench::EventSet;

otlp::OtlpOptions bench_options(const std::string& endpoint) {
  otlp::OtlpOptions options;
  options.exporter.http.url = endpoint;
  options.gzip = true;
  options.exporter.delivery.interval = std::chrono::hours(1);  // never exports during the run
  options.exporter.aggregation.max_series = 1'000'000;
  options.encoder.resource_attributes = {{"service.name", "bench"},
                                         {"service.instance.id", "bench-1"}};
  return options;
}

// emit as the host's delivery thread calls it: one thread, events of `range(0)` series.
void BM_OtlpSinkEmit(benchmark::State& state) {
  const EventSet set(static_cast<int>(state.range(0)));
  otlp::OtlpSink sink(bench_options("http://127.0.0.1:9/v1/metrics"), {});
  std::size_t at = 0;
  for (auto _ : state) {
    sink.emit(set.events[at]);
    if (++at == set.events.size()) at = 0;
  }
  state.SetItemsProcessed(state.iterations());
  try {
    sink.close(std::chrono::milliseconds(0));  // nothing listens: the final export is dropped
  } catch (const std::exception&) {
  }
}
BENCHMARK(BM_OtlpSinkEmit)->Arg(100)->Arg(10'000);

// A local HTTP/1.1 server answering 200 to every POST, keep-alive.
class NullReceiver {
 public:
  NullReceiver() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(fd_, 4) != 0) {
      std::perror("NullReceiver");
      std::abort();
    }
    socklen_t size = sizeof address;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~NullReceiver() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.detach();  // blocked in read of a kept-alive connection until the process exits
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1/metrics"; }

 private:
  void serve() {
    for (;;) {
      const int client = ::accept(fd_, nullptr, nullptr);
      if (client < 0) return;
      std::string buffer;
      char chunk[65536];
      for (;;) {
        const std::size_t head_end = buffer.find("\r\n\r\n");
        if (head_end != std::string::npos) {
          const std::size_t at = buffer.find("Content-Length: ");
          const std::size_t length =
              at == std::string::npos ? 0 : std::strtoul(buffer.c_str() + at + 16, nullptr, 10);
          if (buffer.size() >= head_end + 4 + length) {
            buffer.erase(0, head_end + 4 + length);
            static const char kOk[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
            if (::write(client, kOk, sizeof kOk - 1) < 0) break;
            continue;
          }
        }
        const ssize_t n = ::read(client, chunk, sizeof chunk);
        if (n <= 0) break;
        buffer.append(chunk, static_cast<std::size_t>(n));
      }
      ::close(client);
    }
  }
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

// 10,000 series (a third each counters, gauges, 20-bucket histograms).
void fill(kit::Aggregator& aggregator, const EventSet& set) {
  for (const tsm_metric_event& e : set.events) aggregator.add(e);
}

otlp::EncoderOptions encoder_options() {
  otlp::EncoderOptions options;
  options.resource_attributes = {{"service.name", "bench"}, {"service.instance.id", "bench-1"}};
  options.process_id = 1;
  options.max_points_per_request = 8192;
  return options;
}

void BM_Collect10kSeries(benchmark::State& state) {
  const EventSet set(10'000);
  kit::Aggregator aggregator({});
  fill(aggregator, set);
  for (auto _ : state) benchmark::DoNotOptimize(aggregator.collect(1).points.size());
  state.SetItemsProcessed(state.iterations() * 10'000);
}
BENCHMARK(BM_Collect10kSeries)->Unit(benchmark::kMillisecond);

void BM_Encode10kSeries(benchmark::State& state) {
  const EventSet set(10'000);
  kit::Aggregator aggregator({});
  fill(aggregator, set);
  const kit::Snapshot snapshot = aggregator.collect(1);
  const otlp::Encoder encoder(encoder_options());
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::vector<otlp::EncodedRequest> out;
    encoder.encode(snapshot, out);
    bytes = 0;
    for (const auto& r : out) bytes += r.body.size();
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  state.SetItemsProcessed(state.iterations() * 10'000);
}
BENCHMARK(BM_Encode10kSeries)->Unit(benchmark::kMillisecond);

void BM_Gzip10kSeries(benchmark::State& state) {
  const EventSet set(10'000);
  kit::Aggregator aggregator({});
  fill(aggregator, set);
  std::vector<otlp::EncodedRequest> out;
  otlp::Encoder(encoder_options()).encode(aggregator.collect(1), out);
  std::size_t bytes = 0;
  std::string compressed;
  for (auto _ : state) {
    bytes = 0;
    for (const auto& r : out) {
      kit::gzip_compress(r.body, compressed);
      bytes += compressed.size();
    }
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_Gzip10kSeries)->Unit(benchmark::kMillisecond);

// collect + encode + gzip + POST of every request, as one export does.
void BM_Export10kSeries(benchmark::State& state) {
  const EventSet set(10'000);
  kit::Aggregator aggregator({});
  fill(aggregator, set);
  const otlp::Encoder encoder(encoder_options());
  NullReceiver receiver;
  kit::HttpClient client;
  const std::string url = receiver.url();
  std::string compressed;
  for (auto _ : state) {
    std::vector<otlp::EncodedRequest> out;
    encoder.encode(aggregator.collect(1), out);
    for (const auto& r : out) {
      kit::gzip_compress(r.body, compressed);
      kit::HttpRequest request;
      request.url = url;
      request.body = compressed;
      request.headers = {"Content-Type: application/x-protobuf", "Content-Encoding: gzip",
                         "Expect:"};
      const kit::HttpResponse response =
          client.post(request, std::chrono::steady_clock::now() + std::chrono::seconds(10));
      if (response.status != 200) state.SkipWithError(response.error.c_str());
    }
  }
  state.SetItemsProcessed(state.iterations() * 10'000);
}
BENCHMARK(BM_Export10kSeries)->Unit(benchmark::kMillisecond);

// The CPU of one export without the network, at range(0) series: collect,
// encode and gzip every request, as the delivery thread does before its
// POSTs (process CPU time: nothing else runs in the process).
void BM_ExportCpu(benchmark::State& state) {
  const auto series = static_cast<int>(state.range(0));
  const EventSet set(series);
  kit::AggregationOptions aggregation;
  aggregation.max_series = static_cast<std::size_t>(series);
  kit::Aggregator aggregator(aggregation);
  fill(aggregator, set);
  const otlp::Encoder encoder(encoder_options());
  std::string compressed;
  std::size_t bytes = 0;
  std::size_t requests = 0;
  for (auto _ : state) {
    std::vector<otlp::EncodedRequest> out;
    encoder.encode(aggregator.collect(1), out);
    bytes = 0;
    for (const auto& r : out) {
      kit::gzip_compress(r.body, compressed);
      bytes += compressed.size();
    }
    requests = out.size();
  }
  state.counters["series"] = series;
  state.counters["gzip_bytes"] = static_cast<double>(bytes);
  state.counters["requests"] = static_cast<double>(requests);
  state.SetItemsProcessed(state.iterations() * series);
}
BENCHMARK(BM_ExportCpu)->Apply(export_cpu_sizes);

}  // namespace

BENCHMARK_MAIN();
