// metric_definition_record.cpp — Boost.JSON encoding of definitions for the
// producer files. Never throws out of decode: a bad record is ignored.
#include "prometheus/metric_definition_record.hpp"

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

}  // namespace

std::string encode_definition(const MetricDefinition& definition) {
  boost::json::object record;
  record["kind"] = to_string(definition.kind);
  record["help"] = definition.help;
  record["unit"] = definition.unit;
  boost::json::array labels;
  for (const std::string& label : definition.label_names) labels.emplace_back(label);
  record["labels"] = std::move(labels);
  // Bounds as hexadecimal floating-point text: exact both ways, where
  // Boost.JSON 1.81's number parsing may be one unit in the last place off.
  boost::json::array buckets;
  for (const double bound : definition.buckets) {
    char text[40];
    std::snprintf(text, sizeof text, "%a", bound);
    buckets.emplace_back(text);
  }
  record["buckets"] = std::move(buckets);
  record["gauge_mode"] = to_string(definition.gauge_mode);
  return boost::json::serialize(record);
}

std::optional<MetricDefinition> decode_definition(std::string_view name, std::string_view payload) {
  try {
    const boost::json::object record = boost::json::parse(payload).as_object();
    MetricDefinition definition;
    definition.name = std::string(name);
    if (!kind_from_string(record.at("kind").as_string(), definition.kind)) return std::nullopt;
    definition.help = std::string(record.at("help").as_string());
    definition.unit = std::string(record.at("unit").as_string());
    for (const boost::json::value& label : record.at("labels").as_array()) {
      definition.label_names.emplace_back(label.as_string());
    }
    for (const boost::json::value& bound : record.at("buckets").as_array()) {
      const std::string text(bound.as_string());
      char* end = nullptr;
      const double value = std::strtod(text.c_str(), &end);
      if (end == text.c_str() || *end != '\0') return std::nullopt;
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
