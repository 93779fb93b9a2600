// protobuf_exposition.cpp — the delimited MetricFamily writer (protobuf-lite
// messages of exposition_metrics.proto) and the Accept negotiation.
#include "prometheus/scrape/protobuf_exposition.hpp"

#include <cstdlib>
#include <limits>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "prometheus/scrape/exposition_metrics.pb.h"
#include "prometheus/scrape/prometheus_exposition.hpp"

namespace tokenspeed::metrics {
namespace {

namespace pb = tokenspeed::exposition;

std::string_view trimmed(std::string_view text) noexcept {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

pb::MetricType type_of(MetricKind kind) noexcept {
  switch (kind) {
    case MetricKind::counter:
      return pb::COUNTER;
    case MetricKind::gauge:
      return pb::GAUGE;
    case MetricKind::histogram:
      return pb::HISTOGRAM;
    case MetricKind::summary:
      return pb::SUMMARY;
  }
  return pb::UNTYPED;
}

// Counts are whole numbers kept in doubles (exact below 2^53); 2^64 and
// more saturate instead of wrapping to a small count.
std::uint64_t whole(double count) noexcept {
  return kit::exponential_detail::saturated_count(count);
}

void add_native_buckets(const kit::NativeBuckets& from,
                        google::protobuf::RepeatedPtrField<pb::BucketSpan>& spans,
                        google::protobuf::RepeatedField<std::int64_t>& deltas) {
  for (const kit::NativeBucketSpan& span : from.spans) {
    pb::BucketSpan& out = *spans.Add();
    out.set_offset(span.offset);
    out.set_length(span.length);
  }
  for (const std::int64_t delta : from.deltas) deltas.Add(delta);
}

void fill_exponential(pb::Histogram& out, const kit::ExponentialHistogram& histogram) {
  out.set_sample_count(histogram.count());
  out.set_sample_sum(histogram.sum());
  kit::for_each_classic_bucket(histogram, [&](double upper_bound, std::uint64_t cumulative) {
    pb::Bucket& bucket = *out.add_bucket();
    bucket.set_upper_bound(upper_bound);
    bucket.set_cumulative_count(cumulative);
  });
  kit::PrometheusNativeHistogram native;
  if (histogram.to_prometheus(native) != kit::ExponentialHistogram::NativeExported::kExported)
    return;  // scale below -4: the classic buckets alone
  out.set_schema(native.schema);
  out.set_zero_threshold(native.zero_threshold);
  out.set_zero_count(native.zero_count);
  add_native_buckets(native.negative, *out.mutable_negative_span(), *out.mutable_negative_delta());
  add_native_buckets(native.positive, *out.mutable_positive_span(), *out.mutable_positive_delta());
}

void fill_classic(pb::Histogram& out, const MetricDefinition& metric, const MergedSeries& series) {
  const std::size_t n = metric.buckets.size();
  double cumulative = 0;
  for (std::size_t i = 0; i < n; ++i) {
    cumulative += series.slots[i];
    pb::Bucket& bucket = *out.add_bucket();
    bucket.set_upper_bound(metric.buckets[i]);
    bucket.set_cumulative_count(whole(cumulative));
  }
  cumulative += series.slots[n];
  out.set_sample_count(whole(cumulative));
  out.set_sample_sum(series.slots[n + 1]);
}

void fill_family(pb::MetricFamily& out, const MergedFamily& family) {
  const MetricDefinition& metric = *family.metric;
  out.set_name(metric.sample_name());
  if (!metric.help.empty()) out.set_help(to_valid_utf8(metric.help));
  out.set_type(type_of(metric.kind));
  for (const MergedSeries& series : family.series) {
    pb::Metric& sample = *out.add_metric();
    for (const auto& [name, value] : series.labels) {
      pb::LabelPair& label = *sample.add_label();
      label.set_name(name);
      label.set_value(value);
    }
    switch (metric.kind) {
      case MetricKind::counter:
        sample.mutable_counter()->set_value(series.slots[0]);
        break;
      case MetricKind::gauge:
        sample.mutable_gauge()->set_value(series.slots[0]);
        break;
      case MetricKind::summary:  // slots: count, sum
        sample.mutable_summary()->set_sample_count(whole(series.slots[0]));
        sample.mutable_summary()->set_sample_sum(series.slots[1]);
        break;
      case MetricKind::histogram:
        if (series.exponential) {
          fill_exponential(*sample.mutable_histogram(), *series.exponential);
        } else {
          fill_classic(*sample.mutable_histogram(), metric, series);
        }
        break;
    }
  }
}

}  // namespace

ExpositionFormat negotiate_exposition(std::string_view accept) noexcept {
  double protobuf_q = -1;
  double text_q = -1;
  while (!accept.empty()) {
    const std::size_t comma = accept.find(',');
    std::string_view element = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view() : accept.substr(comma + 1);
    std::size_t semi = element.find(';');
    const std::string_view type = trimmed(element.substr(0, semi));
    double q = 1;
    bool metric_family = false;
    bool delimited = false;
    while (semi != std::string_view::npos) {
      element.remove_prefix(semi + 1);
      semi = element.find(';');
      const std::string_view parameter = trimmed(element.substr(0, semi));
      const std::size_t equals = parameter.find('=');
      if (equals == std::string_view::npos) continue;
      const std::string_view key = trimmed(parameter.substr(0, equals));
      const std::string_view value = trimmed(parameter.substr(equals + 1));
      if (iequals(key, "q")) {
        q = std::strtod(std::string(value).c_str(), nullptr);
      } else if (iequals(key, "proto")) {
        metric_family = value == "io.prometheus.client.MetricFamily";
      } else if (iequals(key, "encoding")) {
        delimited = iequals(value, "delimited");
      }
    }
    if (iequals(type, "application/vnd.google.protobuf") && metric_family && delimited) {
      protobuf_q = std::max(protobuf_q, q);
    } else if (iequals(type, "text/plain") || iequals(type, "text/*") || type == "*/*" ||
               iequals(type, "application/openmetrics-text")) {
      text_q = std::max(text_q, q);
    }
  }
  return protobuf_q > 0 && protobuf_q > text_q ? ExpositionFormat::protobuf
                                               : ExpositionFormat::text;
}

std::string render_protobuf_exposition(std::span<const MergedFamily> families) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    pb::MetricFamily message;
    for (const MergedFamily& family : families) {
      message.Clear();
      fill_family(message, family);
      coded.WriteVarint32(static_cast<std::uint32_t>(message.ByteSizeLong()));
      message.SerializeWithCachedSizes(&coded);
    }
  }  // the streams flush into out here
  return out;
}

}  // namespace tokenspeed::metrics
