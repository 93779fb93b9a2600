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
#include <tokenspeed/kit/overflow_label.hpp>

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

// Writes a snapshot's points, one at a time, as the series of requests of at
// most max_samples_per_request samples each.
class PointWriter {
 public:
  PointWriter(const EncoderOptions& options, int64_t timestamp_ms, bool stale_markers,
              const std::function<void(EncodedRequest&&)>& take)
      : options_(options), take_(take), builder_(timestamp_ms, stale_markers) {}

  void write(const kit::Snapshot& snapshot, const kit::Point& point) {
    const kit::SeriesFamily& family = *point.family;
    set_base_labels(family, *point.label_values);
    switch (family.kind) {
      case TSM_KIND_COUNTER:
      case TSM_KIND_GAUGE:
        write_sample(family.name, point.value, nullptr);
        break;
      case TSM_KIND_HISTOGRAM:
        if (family.exponential) {
          write_exponential(family.name, snapshot.exponential[point.exponential_index], point);
        } else {
          write_classic(family, snapshot, point);
        }
        break;
      default:
        break;
    }
  }

  // Hands over the last request; returns how many exponential histograms
  // were written as classic ones.
  std::size_t finish() {
    builder_.finish(take_);
    return as_classic_;
  }

 private:
  // The labels of every series of a point but __name__ and le: the constant
  // labels, the point's own (a label of the event wins over a constant label
  // of the same name), then the process label in place of any of its name.
  void set_base_labels(const kit::SeriesFamily& family, const std::vector<std::string>& values) {
    const auto drop = [this](std::string_view label) {
      base_.erase(std::remove_if(base_.begin(), base_.end(),
                                 [&](const LabelView& l) { return l.first == label; }),
                  base_.end());
    };
    base_.clear();
    for (const auto& [label, value] : options_.constant_labels) base_.emplace_back(label, value);
    for (std::size_t i = 0; i < family.label_names.size() && i < values.size(); ++i) {
      const std::string_view label = family.label_names[i];
      if (kit::is_unset_overflow_label(label, values[i])) continue;
      drop(label);
      if (label != options_.process_label.first) base_.emplace_back(label, values[i]);
    }
    if (!options_.process_label.first.empty()) {
      drop(options_.process_label.first);
      base_.emplace_back(options_.process_label.first, options_.process_label.second);
    }
  }

  // One series of one sample, with the base labels and le when given.
  void write_sample(std::string_view series_name, double value, const std::string* le) {
    labels_.assign(base_.begin(), base_.end());
    if (le != nullptr) labels_.emplace_back("le", *le);
    builder_.add(labels_, series_name, value);
    finish_when_full();
  }

  void write_sum_and_count(const std::string& family_name, const kit::Point& point) {
    name_.assign(family_name).append("_sum");
    write_sample(name_, point.sum, nullptr);
    name_.assign(family_name).append("_count");
    write_sample(name_, static_cast<double>(point.count), nullptr);
  }

  // A native histogram sample; classic buckets when the histogram is none
  // that remote write can carry.
  void write_exponential(const std::string& family_name, const kit::ExponentialHistogram& histogram,
                         const kit::Point& point) {
    if (histogram.to_prometheus(native_) == kit::ExponentialHistogram::NativeExported::kExported) {
      labels_.assign(base_.begin(), base_.end());
      builder_.add(labels_, family_name, native_);
      finish_when_full();
      return;
    }
    ++as_classic_;
    name_.assign(family_name).append("_bucket");
    kit::for_each_classic_bucket(histogram, [&](double bound, uint64_t cumulative) {
      le_ = format_le(bound);
      write_sample(name_, static_cast<double>(cumulative), &le_);
    });
    le_ = "+Inf";
    write_sample(name_, static_cast<double>(histogram.count()), &le_);
    write_sum_and_count(family_name, point);
  }

  // The point's bucket counts, made cumulative, one series per bound and +Inf.
  void write_classic(const kit::SeriesFamily& family, const kit::Snapshot& snapshot,
                     const kit::Point& point) {
    const std::vector<double>& bounds = family.bounds;
    le_text_.resize(bounds.size() + 1);
    for (std::size_t i = 0; i < bounds.size(); ++i) le_text_[i] = format_le(bounds[i]);
    le_text_[bounds.size()] = "+Inf";
    name_.assign(family.name).append("_bucket");
    uint64_t running = 0;
    for (std::size_t i = 0; i <= bounds.size(); ++i) {
      running += snapshot.buckets[point.bucket_offset + i];
      write_sample(name_, static_cast<double>(running), &le_text_[i]);
    }
    write_sum_and_count(family.name, point);
  }

  void finish_when_full() {
    if (builder_.samples() >= options_.max_samples_per_request) builder_.finish(take_);
  }

  const EncoderOptions& options_;
  const std::function<void(EncodedRequest&&)>& take_;
  RequestBuilder builder_;
  // Scratch kept between points: their capacity is reused.
  std::vector<LabelView> base_;
  std::vector<LabelView> labels_;
  std::string name_;
  std::vector<std::string> le_text_;
  std::string le_;
  kit::PrometheusNativeHistogram native_;
  std::size_t as_classic_ = 0;
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
  PointWriter writer(options_, timestamp_ms, stale_markers, out);
  for (const kit::Point& point : snapshot.points) writer.write(snapshot, point);
  return writer.finish();
}

}  // namespace tokenspeed::metrics::remote_write
