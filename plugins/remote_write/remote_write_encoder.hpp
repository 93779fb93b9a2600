// remote_write_encoder.hpp — turns an aggregation snapshot into remote-write
// WriteRequest bodies (protobuf, not yet compressed) of at most a given
// number of samples each, all stamped with the flush's one timestamp.
// Delivery thread only; never sees an event, does no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <tokenspeed/kit/aggregation.hpp>

namespace tokenspeed::metrics::remote_write {

struct EncodedRequest {
  std::string body;         // serialized WriteRequest (not compressed)
  std::size_t samples = 0;  // samples in it, stale markers included
};

struct EncoderOptions {
  // Labels of every series: the external labels (a label of the metric of
  // the same name wins over one of them) and the process label (which wins
  // over the metric's label, so two processes never share a series).
  std::vector<std::pair<std::string, std::string>> constant_labels;
  std::pair<std::string, std::string> process_label;  // unused while the name is empty
  std::size_t max_samples_per_request = 0;            // 0: no bound
};

// The StaleNaN of Prometheus: the NaN whose bits mark a series as ended.
inline constexpr uint64_t kStaleNaNBits = 0x7ff0000000000002ull;
double stale_nan() noexcept;

// Threading: one thread at a time (the delivery thread).
class Encoder {
 public:
  explicit Encoder(EncoderOptions options);

  // Appends the requests of snapshot to out, every sample at timestamp_ms;
  // with stale_markers, each series also ends with a StaleNaN at
  // timestamp_ms + 1. Counters become NAME (already ending in _total),
  // gauges NAME, histograms NAME_bucket{le} (cumulative, +Inf last), NAME_sum
  // and NAME_count; a family aggregated in exponential buckets becomes NAME
  // with native histogram samples (integer counts, one sample each; its stale
  // marker a histogram whose sum is the StaleNaN). Labels are sorted by name,
  // __name__ among them. Returns the points of exponential families written
  // as classic series instead: a scale below -4, which no Prometheus schema
  // has (le at their buckets' boundaries, as /metrics writes them).
  std::size_t encode(const kit::Snapshot& snapshot, int64_t timestamp_ms, bool stale_markers,
                     std::vector<EncodedRequest>& out) const;

  // The same, handing each request to take as soon as it is complete, so
  // that only one uncompressed body exists at a time.
  std::size_t encode(const kit::Snapshot& snapshot, int64_t timestamp_ms, bool stale_markers,
                     const std::function<void(EncodedRequest&&)>& take) const;

 private:
  EncoderOptions options_;
};

}  // namespace tokenspeed::metrics::remote_write
