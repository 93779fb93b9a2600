// remote_write_encoder.cpp — the mapping of series to remote-write time
// series: names as the exposition writes them, labels sorted by name with
// __name__, histogram buckets made cumulative, exponential buckets as native
// histogram samples. Builds protobuf messages on an
// arena, one per request; no I/O.
#include "remote_write_encoder.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>

#include <google/protobuf/arena.h>

#include "remote_write.pb.h"
#include "remote_write_naming.hpp"

namespace tokenspeed::metrics::remote_write {

double stale_nan() noexcept {
  double value;
  std::memcpy(&value, &kStaleNaNBits, sizeof value);
  return value;
}

namespace {

namespace pb = ::tokenspeed::prompb;
using LabelView = std::pair<std::string_view, std::string_view>;

// Builds one request at a time; finish hands it over and starts the next.
class RequestBuilder {
 public:
  RequestBuilder(int64_t timestamp_ms, bool stale_markers)
      : timestamp_ms_(timestamp_ms), stale_markers_(stale_markers) {
    request_ = google::protobuf::Arena::CreateMessage<pb::WriteRequest>(&arena_);
  }

  // One series of one sample: labels holds the point's labels (without
  // __name__).
  void add(std::vector<LabelView>& labels, std::string_view name, double value) {
    pb::TimeSeries* series = add_series(labels, name);
    pb::Sample* sample = series->add_samples();
    sample->set_value(value);
    sample->set_timestamp(timestamp_ms_);
    ++samples_;
    if (stale_markers_) {
      pb::Sample* marker = series->add_samples();
      marker->set_value(stale_nan());
      marker->set_timestamp(timestamp_ms_ + 1);
      ++samples_;
    }
  }

  // One series of one native histogram sample.
  void add(std::vector<LabelView>& labels, std::string_view name,
           const kit::PrometheusNativeHistogram& histogram) {
    pb::TimeSeries* series = add_series(labels, name);
    pb::Histogram* sample = series->add_histograms();
    sample->set_count_int(histogram.count);
    sample->set_sum(histogram.sum);
    sample->set_schema(histogram.schema);
    sample->set_zero_threshold(histogram.zero_threshold);
    sample->set_zero_count_int(histogram.zero_count);
    copy_buckets(histogram.negative, *sample->mutable_negative_spans(),
                 *sample->mutable_negative_deltas());
    copy_buckets(histogram.positive, *sample->mutable_positive_spans(),
                 *sample->mutable_positive_deltas());
    // Cumulative counts since the series' start: the receiver sees a reset
    // where they drop (a restarted process), as it does for a scrape.
    sample->set_reset_hint(pb::Histogram::UNKNOWN);
    sample->set_timestamp(timestamp_ms_);
    ++samples_;
    if (stale_markers_) {
      // Prometheus' stale marker of a histogram series: an empty integer
      // histogram whose sum is the StaleNaN.
      pb::Histogram* marker = series->add_histograms();
      marker->set_count_int(0);
      marker->set_sum(stale_nan());
      marker->set_schema(histogram.schema);
      marker->set_zero_count_int(0);
      marker->set_timestamp(timestamp_ms_ + 1);
      ++samples_;
    }
  }

  std::size_t samples() const noexcept { return samples_; }

  void finish(const std::function<void(EncodedRequest&&)>& take) {
    if (samples_ == 0) return;
    EncodedRequest encoded;
    encoded.samples = samples_;
    request_->SerializeToString(&encoded.body);
    take(std::move(encoded));
    arena_.Reset();
    request_ = google::protobuf::Arena::CreateMessage<pb::WriteRequest>(&arena_);
    samples_ = 0;
  }

 private:
  pb::TimeSeries* add_series(std::vector<LabelView>& labels, std::string_view name) {
    labels.emplace_back("__name__", name);
    std::sort(labels.begin(), labels.end());
    pb::TimeSeries* series = request_->add_timeseries();
    for (const auto& [label, text] : labels) {
      pb::Label* out = series->add_labels();
      out->set_name(label.data(), label.size());
      out->set_value(text.data(), text.size());
    }
    return series;
  }

  static void copy_buckets(const kit::NativeBuckets& buckets,
                           google::protobuf::RepeatedPtrField<pb::BucketSpan>& spans,
                           google::protobuf::RepeatedField<int64_t>& deltas) {
    spans.Reserve(static_cast<int>(buckets.spans.size()));
    for (const kit::NativeBucketSpan& span : buckets.spans) {
      pb::BucketSpan* out = spans.Add();
      out->set_offset(span.offset);
      out->set_length(span.length);
    }
    deltas.Reserve(static_cast<int>(buckets.deltas.size()));
    for (const int64_t delta : buckets.deltas) deltas.Add(delta);
  }

  const int64_t timestamp_ms_;
  const bool stale_markers_;
  google::protobuf::Arena arena_;
  pb::WriteRequest* request_ = nullptr;  // on arena_
  std::size_t samples_ = 0;
};

}  // namespace

Encoder::Encoder(EncoderOptions options) : options_(std::move(options)) {
  // 0: no bound (the plugin always sets it from its settings).
  if (options_.max_samples_per_request == 0) options_.max_samples_per_request = SIZE_MAX;
}

std::size_t Encoder::encode(const kit::Snapshot& snapshot, int64_t timestamp_ms, bool stale_markers,
                            std::vector<EncodedRequest>& out) const {
  return encode(snapshot, timestamp_ms, stale_markers,
                [&out](EncodedRequest&& request) { out.push_back(std::move(request)); });
}

std::size_t Encoder::encode(const kit::Snapshot& snapshot, int64_t timestamp_ms, bool stale_markers,
                            const std::function<void(EncodedRequest&&)>& out) const {
  RequestBuilder builder(timestamp_ms, stale_markers);
  std::vector<LabelView> base;
  std::vector<LabelView> labels;
  std::string name;
  std::vector<std::string> le_text;
  std::string le;
  kit::PrometheusNativeHistogram native;
  std::size_t as_classic = 0;
  const auto emit = [&](std::string_view series_name, double value, const std::string* le) {
    labels.assign(base.begin(), base.end());
    if (le != nullptr) labels.emplace_back("le", *le);
    builder.add(labels, series_name, value);
    if (builder.samples() >= options_.max_samples_per_request) builder.finish(out);
  };
  const auto emit_sum_and_count = [&](const std::string& family_name, const kit::Point& point) {
    name.assign(family_name).append("_sum");
    emit(name, point.sum, nullptr);
    name.assign(family_name).append("_count");
    emit(name, static_cast<double>(point.count), nullptr);
  };
  for (const kit::Point& point : snapshot.points) {
    const kit::SeriesFamily& family = *point.family;
    base.clear();
    for (const auto& [label, value] : options_.constant_labels) base.emplace_back(label, value);
    const std::vector<std::string>& values = *point.label_values;
    for (std::size_t i = 0; i < family.label_names.size() && i < values.size(); ++i) {
      // A label of the event wins over a constant label of the same name.
      const std::string_view label = family.label_names[i];
      base.erase(std::remove_if(base.begin(), base.end(),
                                [&](const LabelView& l) { return l.first == label; }),
                 base.end());
      if (label != options_.process_label.first) base.emplace_back(label, values[i]);
    }
    if (!options_.process_label.first.empty()) {
      const std::string_view label = options_.process_label.first;
      base.erase(std::remove_if(base.begin(), base.end(),
                                [&](const LabelView& l) { return l.first == label; }),
                 base.end());
      base.emplace_back(label, options_.process_label.second);
    }
    switch (family.kind) {
      case TSM_KIND_COUNTER:
      case TSM_KIND_GAUGE:
        emit(family.name, point.value, nullptr);
        break;
      case TSM_KIND_HISTOGRAM: {
        name.assign(family.name).append("_bucket");
        if (family.exponential) {
          const kit::ExponentialHistogram& histogram =
              snapshot.exponential[point.exponential_index];
          if (histogram.to_prometheus(native) ==
              kit::ExponentialHistogram::NativeExported::kExported) {
            labels.assign(base.begin(), base.end());
            builder.add(labels, family.name, native);
            if (builder.samples() >= options_.max_samples_per_request) builder.finish(out);
            break;
          }
          ++as_classic;
          kit::for_each_classic_bucket(histogram, [&](double bound, uint64_t cumulative) {
            le = format_le(bound);
            emit(name, static_cast<double>(cumulative), &le);
          });
          le = "+Inf";
          emit(name, static_cast<double>(histogram.count()), &le);
          emit_sum_and_count(family.name, point);
          break;
        }
        const std::vector<double>& bounds = family.bounds;
        le_text.resize(bounds.size() + 1);
        for (std::size_t i = 0; i < bounds.size(); ++i) le_text[i] = format_le(bounds[i]);
        le_text[bounds.size()] = "+Inf";
        uint64_t running = 0;
        for (std::size_t i = 0; i <= bounds.size(); ++i) {
          running += snapshot.buckets[point.bucket_offset + i];
          emit(name, static_cast<double>(running), &le_text[i]);
        }
        emit_sum_and_count(family.name, point);
        break;
      }
      default:
        break;
    }
  }
  builder.finish(out);
  return as_classic;
}

}  // namespace tokenspeed::metrics::remote_write
