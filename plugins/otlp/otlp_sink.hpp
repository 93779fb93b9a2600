// otlp_sink.hpp — one producer's otlp output: the kit's HTTP exporter with
// the OTLP/HTTP rules. emit folds the event into the aggregation state; the
// delivery loop's thread encodes, compresses and POSTs it to the OTLP/HTTP
// endpoint. emit never waits for the network.
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
  // a dropped connection) are retried, never 500 or another 4xx.
  static kit::HttpRetryPolicy retry_policy() noexcept { return {}; }
  // Logs a partial_success.
  void delivered(const kit::HttpResponse& response);

 private:
  const bool gzip_;
  const std::vector<std::string> content_headers_;
  Encoder encoder_;  // delivery thread only
};

}  // namespace tokenspeed::metrics::otlp
