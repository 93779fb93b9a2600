// otlp_sink.hpp — one producer's otlp output: the kit's HTTP exporter with
// the OTLP/HTTP or OTLP/gRPC rules. emit folds the event into the
// aggregation state; the delivery loop's thread encodes, compresses and
// POSTs it to the endpoint (a gRPC call: framed, over HTTP/2). emit never
// waits for the network.
// Tested in test/integration/otlp_faults.py, test/integration/otlp_grpc.py
// and test/integration/otlp_tls.py.
#pragma once

#include <string>
#include <vector>

#include <tokenspeed/kit/http_exporter.hpp>
#include <tokenspeed/metric_reporter.hpp>

#include "otlp_encoder.hpp"

namespace tokenspeed::metrics::otlp {

// Every value comes from the settings table, through create_sink.
struct OtlpOptions {
  kit::HttpExporterOptions exporter;
  bool gzip = false;  // compress request bodies
  bool grpc = false;  // OTLP/gRPC (exporter.http.url names the call, http2 set)
  EncoderOptions encoder;
};

// Threading: as kit::HttpExporter; collect, content_headers, retry_policy and
// delivered run on the delivery thread only.
class OtlpSink : public kit::HttpExporter<OtlpSink> {
 public:
  OtlpSink(OtlpOptions options, const plugin::Host& host);
  ~OtlpSink();

  // kit::HttpExporter's delivery thread:
  void collect(std::vector<kit::ExportRequest>& out, bool final);
  const std::vector<std::string>& content_headers() const noexcept { return content_headers_; }
  // The OTLP/HTTP rule, the kit's default: 408, 429, 502, 503 and 504 (and
  // a dropped connection) are retried, never 500 or another 4xx. OTLP/gRPC:
  // the kit's gRPC rule (kit/grpc.hpp: UNAVAILABLE, DEADLINE_EXCEEDED, ...).
  kit::HttpRetryPolicy retry_policy() const noexcept {
    kit::HttpRetryPolicy policy;
    policy.grpc = grpc_;
    return policy;
  }
  // Logs a partial_success.
  void delivered(const kit::HttpResponse& response);

 private:
  const bool gzip_;
  const bool grpc_;
  const std::vector<std::string> content_headers_;
  Encoder encoder_;  // delivery thread only
};

}  // namespace tokenspeed::metrics::otlp
