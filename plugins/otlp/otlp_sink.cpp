// otlp_sink.cpp — the OTLP/HTTP rules on the kit's HTTP exporter: retry only
// 408, 429, 502, 503, 504 and a dropped connection (kit::HttpRetryPolicy's
// default; the kit honours Retry-After), never 500 or another 4xx, protobuf
// bodies gzip-compressed or not, a partial_success logged. OTLP/gRPC: the
// same bodies framed as a gRPC message (kit/grpc.hpp), judged by their
// grpc-status. Network I/O only on the delivery thread.
#include "otlp_sink.hpp"

#include <tokenspeed/kit/grpc.hpp>
#include <tokenspeed/kit/gzip.hpp>

#include "otlp_metrics.pb.h"

namespace tokenspeed::metrics::otlp {
namespace {

constexpr kit::HttpExporterWords kWords{"data points", "export rejected", "export failed",
                                        "export"};

std::vector<std::string> headers_for(bool gzip, bool grpc, std::chrono::milliseconds timeout) {
  if (grpc) return kit::grpc_request_headers(gzip, timeout);
  std::vector<std::string> headers{"Content-Type: application/x-protobuf"};
  if (gzip) headers.emplace_back("Content-Encoding: gzip");
  return headers;
}

}  // namespace

OtlpSink::OtlpSink(OtlpOptions options, const plugin::Host& host)
    : HttpExporter(std::move(options.exporter), kWords, host),
      gzip_(options.gzip),
      grpc_(options.grpc),
      content_headers_(
          headers_for(options.gzip, options.grpc, this->options().delivery.attempt_timeout)),
      encoder_(options.encoder) {
  start();
}

OtlpSink::~OtlpSink() { stop(); }

void OtlpSink::collect(std::vector<kit::ExportRequest>& out, bool /*final*/) {
  const kit::Snapshot snapshot = aggregator().collect(kit::unix_time_ns());
  std::vector<EncodedRequest> encoded;
  encoder_.encode(snapshot, encoded);
  for (EncodedRequest& request : encoded) {
    kit::ExportRequest ready;
    ready.items = request.points;
    if (gzip_) {
      kit::gzip_compress(request.body, ready.body);
    } else {
      ready.body = std::move(request.body);
    }
    if (grpc_) {
      std::string message = std::move(ready.body);
      kit::grpc_frame(message, gzip_, ready.body);
    }
    out.push_back(std::move(ready));
  }
}

void OtlpSink::delivered(const kit::HttpResponse& response) {
  if (response.body.empty() || response.content_type.find("json") != std::string::npos) return;
  std::string message;
  bool compressed = false;
  if (grpc_ && (!kit::grpc_unframe(response.body, message, &compressed).empty() || compressed))
    return;  // not asked for: the answer's encoding is identity
  ::tokenspeed::otlp::ExportMetricsServiceResponse decoded;
  if (!decoded.ParseFromString(grpc_ ? message : response.body) || !decoded.has_partial_success())
    return;
  const auto& partial = decoded.partial_success();
  if (partial.rejected_data_points() == 0 && partial.error_message().empty()) return;
  log().report(TSM_LOG_WARNING, "partial success",
               url() + " accepted the export partly: " +
                   std::to_string(partial.rejected_data_points()) + " data points rejected" +
                   (partial.error_message().empty() ? "" : ": " + partial.error_message()));
}

}  // namespace tokenspeed::metrics::otlp
