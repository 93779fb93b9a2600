// load_fields.hpp — which of the engine's families feed which field of the
// load messages: the presets (tokenspeed, vllm, sglang) and the operator's
// `map` overrides, and the lookup emit makes per event (string compares over
// a fixed table, no allocation). Tested in
// test/unit/zmq_load/load_fields_test.cpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenspeed::metrics::zmq_load {

// The inputs of the messages, in the order of kFieldKeys.
enum class Field : uint8_t {
  kRunning,          // gauge: requests running
  kWaiting,          // gauge: requests waiting
  kKvTokens,         // gauge: KV tokens in use
  kKvUsageRatio,     // gauge: KV tokens in use as a 0-1 ratio of the capacity
  kCapacity,         // gauge: KV tokens the cache holds
  kCacheConfigInfo,  // info gauge: capacity = labels num_gpu_blocks x block_size
  kFpmIterations,    // counter: one scheduler iteration committed (the fpm gauges below)
  kFpmFirstGauge,    // the fpm gauge group, kFpmGaugeCount of them from here
};

// The fpm gauge group in the order of Dynamo's ForwardPassMetrics: the
// seven of scheduled_requests, then the six of queued_requests.
inline constexpr std::size_t kFpmScheduledCount = 7;
inline constexpr std::size_t kFpmGaugeCount = 13;
inline constexpr std::size_t kFieldCount =
    static_cast<std::size_t>(Field::kFpmFirstGauge) + kFpmGaugeCount;

// The `map` keys, one per field: "num_running_reqs", ..., then
// "fpm_scheduled_num_prefill_requests", ... "fpm_queued_var_decode_kv_tokens".
extern const std::array<std::string_view, kFieldCount> kFieldKeys;
// Dynamo's names of the fpm gauges within their struct ("num_prefill_requests").
extern const std::array<std::string_view, kFpmGaugeCount> kFpmFieldNames;

enum class Preset { kTokenspeed, kVllm, kSglang };

// Family name per field ("" = not fed). Threading: immutable once made.
class FieldMap {
 public:
  FieldMap() = default;
  static FieldMap preset(Preset preset);

  // Sets the families named by `map` ({field key, family}); throws
  // std::invalid_argument naming an unknown key.
  void override_with(const std::vector<std::pair<std::string, std::string>>& map);

  const std::string& family(std::size_t field) const noexcept { return families_[field]; }
  bool fpm_group_complete() const noexcept;

  // The field metric feeds; kFieldCount when none. No allocation.
  std::size_t find(const char* metric) const noexcept;

 private:
  std::array<std::string, kFieldCount> families_;
};

// The number encoded in the value of label name ("" or not a whole number
// from 0 to 2^53: -1). No allocation.
int64_t whole_number(const char* text) noexcept;

}  // namespace tokenspeed::metrics::zmq_load
