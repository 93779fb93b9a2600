// remote_write_sink.hpp — one producer's remote_write output: the kit's HTTP
// exporter with the remote-write rules. emit folds the event into the
// aggregation state; the delivery loop's thread encodes, snappy-compresses
// and POSTs it to the remote-write URL. emit never waits for the network.
// Tested in test/integration/remote_write_agreement.py and
// test/integration/remote_write_faults.py.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <tokenspeed/kit/http_exporter.hpp>
#include <tokenspeed/metric_reporter.hpp>

#include "remote_write_encoder.hpp"

namespace tokenspeed::metrics::remote_write {

// Every value comes from the settings table, through create_sink.
struct RemoteWriteOptions {
  kit::HttpExporterOptions exporter;
  bool retry_on_429 = false;  // a 429 is retried, not dropped
  EncoderOptions encoder;
};

// Threading: as kit::HttpExporter; collect, content_headers, retry_policy and
// delivered run on the delivery thread only.
class RemoteWriteSink : public kit::HttpExporter<RemoteWriteSink> {
 public:
  RemoteWriteSink(RemoteWriteOptions options, const plugin::Host& host);
  ~RemoteWriteSink();

  // kit::HttpExporter's delivery thread. The final collect adds the series'
  // stale markers.
  void collect(std::vector<kit::ExportRequest>& out, bool final);
  const std::vector<std::string>& content_headers() const noexcept;
  // Every 5xx, 408 (and a dropped connection); a 429 only with retry_on_429.
  kit::HttpRetryPolicy retry_policy() const noexcept;
  void delivered(const kit::HttpResponse& /*response*/) noexcept {}

 private:
  int64_t next_timestamp_ms(bool final);

  const bool retry_on_429_;
  Encoder encoder_;                 // delivery thread only
  int64_t last_timestamp_ms_ = 0;   // delivery thread only: flush timestamps only increase
  uint64_t native_as_classic_ = 0;  // delivery thread only: histogram points sent as classic
};

}  // namespace tokenspeed::metrics::remote_write
