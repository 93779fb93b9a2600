// otlp_encoder.hpp — turns an aggregation snapshot into OTLP/HTTP request
// bodies (ExportMetricsServiceRequest, protobuf), at most a given number of
// data points each (an ExponentialHistogram point is one data point like any
// other), every one carrying this process's resource. Delivery thread only;
// never sees an event.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <tokenspeed/kit/aggregation.hpp>

namespace tokenspeed::metrics::otlp {

struct EncodedRequest {
  std::string body;        // serialized ExportMetricsServiceRequest (not compressed)
  std::size_t points = 0;  // data points in it
};

struct EncoderOptions {
  // Resource attributes in order; service.instance.id and the rest are
  // filled in by the caller.
  std::vector<std::pair<std::string, std::string>> resource_attributes;
  int64_t process_id = 0;  // process.pid, an int attribute
  std::string scope_name = "tokenspeed-metrics";
  std::string scope_version;
  std::size_t max_points_per_request = 0;  // 0: no bound
};

// Threading: one thread at a time (the delivery thread).
class Encoder {
 public:
  explicit Encoder(EncoderOptions options);

  // Appends the requests of snapshot to out; nothing when it has no point.
  void encode(const kit::Snapshot& snapshot, std::vector<EncodedRequest>& out) const;

 private:
  EncoderOptions options_;
};

}  // namespace tokenspeed::metrics::otlp
