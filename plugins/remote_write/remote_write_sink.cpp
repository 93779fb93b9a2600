// remote_write_sink.cpp — the remote-write rules on the kit's HTTP exporter:
// retry 5xx, 408 and a dropped connection with backoff (honouring Retry-After,
// which the kit does), a 429 only with retry_on_429, never another 4xx
// (whose message the kit logs); snappy, one increasing timestamp per flush,
// stale markers at close. Network I/O only on the delivery thread.
#include "remote_write_sink.hpp"

#include <algorithm>
#include <string>

#include <snappy.h>

namespace tokenspeed::metrics::remote_write {
namespace {

constexpr kit::HttpExporterWords kWords{"samples", "write rejected", "write failed",
                                        "remote write"};

}  // namespace

RemoteWriteSink::RemoteWriteSink(RemoteWriteOptions options, const plugin::Host& host)
    : HttpExporter(std::move(options.exporter), kWords, host),
      retry_on_429_(options.retry_on_429),
      encoder_(options.encoder) {
  start();
}

RemoteWriteSink::~RemoteWriteSink() { stop(); }

const std::vector<std::string>& RemoteWriteSink::content_headers() const noexcept {
  static const std::vector<std::string> headers{
      "Content-Type: application/x-protobuf",
      "Content-Encoding: snappy",
      "X-Prometheus-Remote-Write-Version: 0.1.0",
      "User-Agent: tokenspeed-metrics-remote-write",
  };
  return headers;
}

kit::HttpRetryPolicy RemoteWriteSink::retry_policy() const noexcept {
  kit::HttpRetryPolicy policy;
  policy.retry_5xx = true;  // the remote-write specification: every 5xx
  policy.retry_429 = retry_on_429_;
  return policy;
}

int64_t RemoteWriteSink::next_timestamp_ms(bool final) {
  // Strictly after the previous flush (and its stale markers): a receiver
  // refuses a second, different sample at a timestamp it has.
  const int64_t at = std::max(kit::unix_time_ns() / 1000000, last_timestamp_ms_ + 1);
  last_timestamp_ms_ = final ? at + 1 : at;
  return at;
}

void RemoteWriteSink::collect(std::vector<kit::ExportRequest>& out, bool final) {
  const int64_t timestamp_ms = next_timestamp_ms(final);
  const kit::Snapshot snapshot = aggregator().collect(timestamp_ms * 1000000);
  // Compressed as each request is complete: one uncompressed body at a time.
  const std::size_t as_classic =
      encoder_.encode(snapshot, timestamp_ms, final, [&out](EncodedRequest&& request) {
        kit::ExportRequest ready;
        ready.items = request.samples;
        snappy::Compress(request.body.data(), request.body.size(), &ready.body);
        ready.body.shrink_to_fit();  // Compress reserves the worst case, about the input's size
        out.push_back(std::move(ready));
      });
  if (as_classic > 0) {
    // Delivered, though not in the form the family asked for: said why.
    native_as_classic_ += as_classic;
    log().report(TSM_LOG_WARNING, "native histograms as classic",
                 std::to_string(as_classic) +
                     " histogram series pushed as classic _bucket/_sum/_count series, not as "
                     "native histograms: their exponential buckets are at a scale below -4, "
                     "which no Prometheus schema has (" +
                     std::to_string(native_as_classic_) + " in total)",
                 as_classic);
  }
}

}  // namespace tokenspeed::metrics::remote_write
