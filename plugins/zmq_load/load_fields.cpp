// load_fields.cpp — the presets' family names and the field lookup.
#include "load_fields.hpp"

#include <cstring>
#include <stdexcept>

namespace tokenspeed::metrics::zmq_load {

const std::array<std::string_view, kFieldCount> kFieldKeys = {
    "num_running_reqs",
    "num_waiting_reqs",
    "num_tokens",
    "kv_usage_ratio",
    "max_total_num_tokens",
    "cache_config_info",
    "fpm_iterations",
    "fpm_scheduled_num_prefill_requests",
    "fpm_scheduled_sum_prefill_tokens",
    "fpm_scheduled_var_prefill_length",
    "fpm_scheduled_sum_prefill_kv_tokens",
    "fpm_scheduled_num_decode_requests",
    "fpm_scheduled_sum_decode_kv_tokens",
    "fpm_scheduled_var_decode_kv_tokens",
    "fpm_queued_num_prefill_requests",
    "fpm_queued_sum_prefill_tokens",
    "fpm_queued_var_prefill_length",
    "fpm_queued_num_decode_requests",
    "fpm_queued_sum_decode_kv_tokens",
    "fpm_queued_var_decode_kv_tokens",
};

const std::array<std::string_view, kFpmGaugeCount> kFpmFieldNames = {
    "num_prefill_requests", "sum_prefill_tokens",   "var_prefill_length",   "sum_prefill_kv_tokens",
    "num_decode_requests",  "sum_decode_kv_tokens", "var_decode_kv_tokens", "num_prefill_requests",
    "sum_prefill_tokens",   "var_prefill_length",   "num_decode_requests",  "sum_decode_kv_tokens",
    "var_decode_kv_tokens",
};

namespace {

std::size_t index(Field field) { return static_cast<std::size_t>(field); }

// Every preset's fpm group: <namespace>fpm_..., committed by
// <namespace>fpm_iterations_total (events name counters with _total).
void set_fpm_group(std::array<std::string, kFieldCount>& families, const std::string& ns) {
  families[index(Field::kFpmIterations)] = ns + "fpm_iterations_total";
  for (std::size_t i = 0; i < kFpmGaugeCount; ++i) {
    const std::size_t field = index(Field::kFpmFirstGauge) + i;
    families[field] = ns + std::string(kFieldKeys[field]);
  }
}

}  // namespace

FieldMap FieldMap::preset(Preset preset) {
  FieldMap out;
  auto& f = out.families_;
  switch (preset) {
    case Preset::kTokenspeed:
      f[index(Field::kRunning)] = "tokenspeed:num_requests_running";
      f[index(Field::kWaiting)] = "tokenspeed:num_requests_waiting";
      f[index(Field::kKvUsageRatio)] = "tokenspeed:kv_cache_usage_perc";
      set_fpm_group(f, "tokenspeed:");
      break;
    case Preset::kVllm:
      f[index(Field::kRunning)] = "vllm:num_requests_running";
      f[index(Field::kWaiting)] = "vllm:num_requests_waiting";
      f[index(Field::kKvUsageRatio)] = "vllm:kv_cache_usage_perc";
      f[index(Field::kCacheConfigInfo)] = "vllm:cache_config_info";
      set_fpm_group(f, "vllm:");
      break;
    case Preset::kSglang:
      f[index(Field::kRunning)] = "sglang:num_running_reqs";
      f[index(Field::kWaiting)] = "sglang:num_queue_reqs";
      f[index(Field::kKvTokens)] = "sglang:num_used_tokens";
      f[index(Field::kCapacity)] = "sglang:max_total_num_tokens";
      set_fpm_group(f, "sglang:");
      break;
  }
  return out;
}

void FieldMap::override_with(const std::vector<std::pair<std::string, std::string>>& map) {
  for (const auto& [key, family] : map) {
    std::size_t field = 0;
    while (field < kFieldCount && kFieldKeys[field] != key) ++field;
    if (field == kFieldCount) {
      std::string keys;
      for (const std::string_view k : kFieldKeys)
        keys += (keys.empty() ? "" : ", ") + std::string(k);
      throw std::invalid_argument("'map': unknown field '" + key + "' (fields: " + keys + ")");
    }
    families_[field] = family;
  }
}

bool FieldMap::fpm_group_complete() const noexcept {
  for (std::size_t i = index(Field::kFpmIterations); i < kFieldCount; ++i)
    if (families_[i].empty()) return false;
  return true;
}

std::size_t FieldMap::find(const char* metric) const noexcept {
  if (metric == nullptr) return kFieldCount;
  for (std::size_t i = 0; i < kFieldCount; ++i) {
    const std::string& family = families_[i];
    if (!family.empty() && std::strcmp(family.c_str(), metric) == 0) return i;
  }
  return kFieldCount;
}

int64_t whole_number(const char* text) noexcept {
  if (text == nullptr || *text == '\0') return -1;
  int64_t value = 0;
  for (const char* c = text; *c != '\0'; ++c) {
    if (*c < '0' || *c > '9' || value > (int64_t{1} << 53) / 10) return -1;
    value = value * 10 + (*c - '0');
  }
  return value;
}

}  // namespace tokenspeed::metrics::zmq_load
