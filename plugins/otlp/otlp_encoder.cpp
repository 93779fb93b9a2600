// otlp_encoder.cpp — the mapping of series to OTLP: counters are monotonic
// Sums, gauges Gauges, histograms explicit-bucket Histograms with the event's
// bounds or, when the family has exponential buckets, ExponentialHistograms;
// labels attributes, units UCUM. Builds protobuf messages; no I/O.
#include "otlp_encoder.hpp"

#include <cstdint>
#include <unordered_map>

#include <google/protobuf/arena.h>
#include <tokenspeed/kit/overflow_label.hpp>

#include "otlp_metrics.pb.h"
#include "otlp_naming.hpp"

namespace tokenspeed::metrics::otlp {
namespace {

namespace pb = ::tokenspeed::otlp;

void add_string(google::protobuf::RepeatedPtrField<pb::KeyValue>* attributes,
                const std::string& key, const std::string& value) {
  pb::KeyValue* attribute = attributes->Add();
  attribute->set_key(key);
  attribute->mutable_value()->set_string_value(value);
}

// The labels as attributes. A family capped by a view carries the overflow
// label (kit/overflow_label.hpp): as OpenTelemetry's SDK sends it, its overflow series has
// the one attribute otel.metric.overflow = true, its other series none of it.
void add_labels(google::protobuf::RepeatedPtrField<pb::KeyValue>* attributes,
                const kit::Point& point) {
  const std::vector<std::string>& names = point.family->label_names;
  const std::vector<std::string>& values = *point.label_values;
  for (std::size_t i = 0; i < names.size() && i < values.size(); ++i) {
    if (names[i] != kit::kOverflowLabel) continue;
    if (values[i].empty()) break;
    pb::KeyValue* overflow = attributes->Add();
    overflow->set_key("otel.metric.overflow");
    overflow->mutable_value()->set_bool_value(true);
    return;
  }
  for (std::size_t i = 0; i < names.size() && i < values.size(); ++i) {
    if (names[i] != kit::kOverflowLabel) add_string(attributes, names[i], values[i]);
  }
}

// What every Sum, Histogram and ExponentialHistogram point carries first.
template <class DataPoint>
void set_series(DataPoint& data, const kit::Point& point) {
  add_labels(data.mutable_attributes(), point);
  data.set_start_time_unix_nano(static_cast<uint64_t>(point.start_ns));
  data.set_time_unix_nano(static_cast<uint64_t>(point.time_ns));
}

pb::AggregationTemporality temporality_of(const kit::Snapshot& snapshot) {
  return snapshot.temporality == kit::Temporality::kDelta ? pb::AGGREGATION_TEMPORALITY_DELTA
                                                          : pb::AGGREGATION_TEMPORALITY_CUMULATIVE;
}

// Builds one request at a time, one Metric per family within it.
class RequestBuilder {
 public:
  RequestBuilder(const EncoderOptions& options, const kit::Snapshot& snapshot)
      : options_(options), snapshot_(snapshot) {
    request_ = google::protobuf::Arena::CreateMessage<pb::ExportMetricsServiceRequest>(&arena_);
  }

  void add(const kit::Point& point) {
    if (scope_ == nullptr) start();
    pb::Metric*& metric = metrics_[point.family];
    if (metric == nullptr) metric = new_metric(*point.family);
    switch (point.family->kind) {
      case TSM_KIND_COUNTER: {
        pb::NumberDataPoint* data = metric->mutable_sum()->add_data_points();
        set_series(*data, point);
        data->set_as_double(point.value);
        break;
      }
      case TSM_KIND_GAUGE: {
        pb::NumberDataPoint* data = metric->mutable_gauge()->add_data_points();
        add_labels(data->mutable_attributes(), point);
        data->set_time_unix_nano(static_cast<uint64_t>(point.time_ns));
        data->set_as_double(point.value);
        break;
      }
      case TSM_KIND_HISTOGRAM: {
        if (point.family->exponential) {
          add_exponential(*metric, point);
          break;
        }
        pb::HistogramDataPoint* data = metric->mutable_histogram()->add_data_points();
        set_series(*data, point);
        data->set_count(point.count);
        data->set_sum(point.sum);
        const std::vector<double>& bounds = point.family->bounds;
        for (double bound : bounds) data->add_explicit_bounds(bound);
        for (std::size_t i = 0; i <= bounds.size(); ++i)
          data->add_bucket_counts(snapshot_.buckets[point.bucket_offset + i]);
        break;
      }
      default:
        return;
    }
    ++points_;
  }

  std::size_t points() const noexcept { return points_; }

  void finish(std::vector<EncodedRequest>& out) {
    if (points_ == 0) return;
    EncodedRequest encoded;
    encoded.points = points_;
    request_->SerializeToString(&encoded.body);
    out.push_back(std::move(encoded));
    arena_.Reset();  // one arena per request: no allocation per message
    request_ = google::protobuf::Arena::CreateMessage<pb::ExportMetricsServiceRequest>(&arena_);
    metrics_.clear();
    scope_ = nullptr;
    points_ = 0;
  }

 private:
  void start() {
    pb::ResourceMetrics* resource = request_->add_resource_metrics();
    auto* attributes = resource->mutable_resource()->mutable_attributes();
    for (const auto& [key, value] : options_.resource_attributes)
      add_string(attributes, key, value);
    pb::KeyValue* pid = attributes->Add();
    pid->set_key("process.pid");
    pid->mutable_value()->set_int_value(options_.process_id);
    scope_ = resource->add_scope_metrics();
    scope_->mutable_scope()->set_name(options_.scope_name);
    scope_->mutable_scope()->set_version(options_.scope_version);
  }

  void add_exponential(pb::Metric& metric, const kit::Point& point) {
    pb::ExponentialHistogramDataPoint* data =
        metric.mutable_exponential_histogram()->add_data_points();
    set_series(*data, point);
    snapshot_.exponential[point.exponential_index].to_otlp(exponential_);
    data->set_count(exponential_.count);
    // Sent with negative values too (OTLP would leave it out): Prometheus'
    // native histograms carry it, and /metrics shows it.
    data->set_sum(exponential_.sum);
    data->set_scale(exponential_.scale);
    data->set_zero_count(exponential_.zero_count);
    data->set_zero_threshold(exponential_.zero_threshold);
    set_buckets(exponential_.positive, *data->mutable_positive());
    set_buckets(exponential_.negative, *data->mutable_negative());
    if (exponential_.count > 0) {  // min and max of no observation do not exist
      data->set_min(exponential_.min);
      data->set_max(exponential_.max);
    }
  }

  static void set_buckets(const kit::OtlpExponentialBuckets& from,
                          pb::ExponentialHistogramDataPoint::Buckets& to) {
    to.set_offset(from.offset);
    to.mutable_bucket_counts()->Add(from.bucket_counts.begin(), from.bucket_counts.end());
  }

  pb::Metric* new_metric(const kit::SeriesFamily& family) {
    pb::Metric* metric = scope_->add_metrics();
    metric->set_name(otlp_metric_name(family.name, family.kind));
    metric->set_description(family.help);
    metric->set_unit(otlp_unit(family.unit));
    if (family.kind == TSM_KIND_COUNTER) {
      metric->mutable_sum()->set_aggregation_temporality(temporality_of(snapshot_));
      metric->mutable_sum()->set_is_monotonic(true);
    } else if (family.kind == TSM_KIND_GAUGE) {
      metric->mutable_gauge();
    } else if (family.kind == TSM_KIND_HISTOGRAM && family.exponential) {
      metric->mutable_exponential_histogram()->set_aggregation_temporality(
          temporality_of(snapshot_));
    } else if (family.kind == TSM_KIND_HISTOGRAM) {
      metric->mutable_histogram()->set_aggregation_temporality(temporality_of(snapshot_));
    }
    return metric;
  }

  const EncoderOptions& options_;
  const kit::Snapshot& snapshot_;
  google::protobuf::Arena arena_;
  pb::ExportMetricsServiceRequest* request_ = nullptr;  // on arena_
  pb::ScopeMetrics* scope_ = nullptr;
  std::unordered_map<const kit::SeriesFamily*, pb::Metric*> metrics_;
  std::size_t points_ = 0;
  kit::ExponentialPoint exponential_;  // scratch of add_exponential: its vectors reused
};

}  // namespace

Encoder::Encoder(EncoderOptions options) : options_(std::move(options)) {
  // 0: no bound (the plugin always sets it from its settings).
  if (options_.max_points_per_request == 0) options_.max_points_per_request = SIZE_MAX;
}

void Encoder::encode(const kit::Snapshot& snapshot, std::vector<EncodedRequest>& out) const {
  RequestBuilder builder(options_, snapshot);
  for (const kit::Point& point : snapshot.points) {
    builder.add(point);
    if (builder.points() >= options_.max_points_per_request) builder.finish(out);
  }
  builder.finish(out);
}

}  // namespace tokenspeed::metrics::otlp
