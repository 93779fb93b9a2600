// metric_definition_record.cpp — Boost.JSON encoding of definitions for the
// producer files. Never throws out of decode: a bad record is ignored.
#include "prometheus/store/metric_definition_record.hpp"

#include <cstdio>
#include <cstdlib>

#include <boost/json.hpp>

namespace tokenspeed::metrics {
namespace {

bool kind_from_string(std::string_view text, MetricKind& kind) noexcept {
  for (const MetricKind candidate :
       {MetricKind::counter, MetricKind::gauge, MetricKind::histogram, MetricKind::summary}) {
    if (to_string(candidate) == text) {
      kind = candidate;
      return true;
    }
  }
  return false;
}

// An exponential histogram's record names a kind of its own: a launcher
// built before it knows no such kind and refuses the family by name rather
// than reading its slots as classic buckets.
constexpr std::string_view kExponentialHistogramKind = "exponential_histogram";

// Hexadecimal floating-point text: exact both ways, where Boost.JSON 1.81's
// number parsing may be one unit in the last place off.
boost::json::string exact_text(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%a", value);
  return boost::json::string(text);
}

bool exact_value(const boost::json::value& json, double& value) {
  const std::string text(json.as_string());
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return end != text.c_str() && *end == '\0';
}

}  // namespace

std::string encode_definition(const MetricDefinition& definition) {
  boost::json::object record;
  record["kind"] = definition.exponential ? kExponentialHistogramKind : to_string(definition.kind);
  if (definition.exponential) {
    record["max_buckets"] = definition.exponential->max_buckets;
    record["max_scale"] = definition.exponential->max_scale;
    record["zero_threshold"] = exact_text(definition.exponential->zero_threshold);
  }
  record["help"] = definition.help;
  record["unit"] = definition.unit;
  boost::json::array labels;
  for (const std::string& label : definition.label_names) labels.emplace_back(label);
  record["labels"] = std::move(labels);
  boost::json::array buckets;
  for (const double bound : definition.buckets) buckets.emplace_back(exact_text(bound));
  record["buckets"] = std::move(buckets);
  record["gauge_mode"] = to_string(definition.gauge_mode);
  return boost::json::serialize(record);
}

std::optional<MetricDefinition> decode_definition(std::string_view name, std::string_view payload) {
  try {
    const boost::json::object record = boost::json::parse(payload).as_object();
    MetricDefinition definition;
    definition.name = std::string(name);
    const std::string_view kind = record.at("kind").as_string();
    if (kind == kExponentialHistogramKind) {
      definition.kind = MetricKind::histogram;
      ExponentialHistogramOptions& options = definition.exponential.emplace();
      options.max_buckets = boost::json::value_to<std::uint32_t>(record.at("max_buckets"));
      options.max_scale = boost::json::value_to<std::int32_t>(record.at("max_scale"));
      if (!exact_value(record.at("zero_threshold"), options.zero_threshold)) return std::nullopt;
    } else if (!kind_from_string(kind, definition.kind)) {
      return std::nullopt;
    }
    definition.help = std::string(record.at("help").as_string());
    definition.unit = std::string(record.at("unit").as_string());
    for (const boost::json::value& label : record.at("labels").as_array()) {
      definition.label_names.emplace_back(label.as_string());
    }
    for (const boost::json::value& bound : record.at("buckets").as_array()) {
      double value = 0;
      if (!exact_value(bound, value)) return std::nullopt;
      definition.buckets.push_back(value);
    }
    if (!gauge_mode_from_string(record.at("gauge_mode").as_string(), definition.gauge_mode)) {
      return std::nullopt;
    }
    static_cast<void>(checked_definition(definition));  // throws on names the exposition rejects
    return definition;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace tokenspeed::metrics
