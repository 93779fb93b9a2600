// metric_series.cpp — builds a family's plugin-facing metadata once.
#include "pipeline/metric_series.hpp"

namespace tokenspeed::metrics {

namespace {
std::vector<const char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<const char*> out;
  out.reserve(strings.size());
  for (const std::string& s : strings) out.push_back(s.c_str());
  return out;
}
}  // namespace

SeriesFamily::SeriesFamily(const MetricDefinition& def)
    : definition(def),
      sample_name(def.sample_name()),
      label_names(c_strings(def.label_names)),
      operation(operation_of(def.kind)) {
  info.struct_size = sizeof(tsm_metric_info);
  info.kind = static_cast<std::uint32_t>(abi_kind_of(def.kind));
  info.name = sample_name.c_str();
  info.help = def.help.c_str();
  info.unit = def.unit.c_str();
  info.label_count = static_cast<std::uint32_t>(label_names.size());
  info.label_names = label_names.empty() ? nullptr : label_names.data();
  info.bucket_count = static_cast<std::uint32_t>(def.buckets.size());
  info.bucket_bounds = def.buckets.empty() ? nullptr : def.buckets.data();
  if (def.exponential) {
    info.histogram_layout = TSM_HISTOGRAM_EXPONENTIAL;
    info.max_buckets = def.exponential->max_buckets;
    info.max_scale = def.exponential->max_scale;
    info.zero_threshold = def.exponential->zero_threshold;
  }
}

}  // namespace tokenspeed::metrics
