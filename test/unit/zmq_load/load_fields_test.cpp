// The presets' families and the `map` overrides: each preset feeds the
// fields its engine records, map replaces or unmaps a field, an unknown
// field is refused naming it, and whole_number reads rank labels.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "load_fields.hpp"

using namespace tokenspeed::metrics::zmq_load;

namespace {
std::size_t at(Field field) { return static_cast<std::size_t>(field); }
}  // namespace

TEST_CASE("each preset feeds the families its engine records", "[zmq_load]") {
  const FieldMap tokenspeed = FieldMap::preset(Preset::kTokenspeed);
  CHECK(tokenspeed.find("tokenspeed:num_requests_running") == at(Field::kRunning));
  CHECK(tokenspeed.find("tokenspeed:kv_cache_usage_perc") == at(Field::kKvUsageRatio));
  CHECK(tokenspeed.find("tokenspeed:fpm_iterations_total") == at(Field::kFpmIterations));
  CHECK(tokenspeed.find("tokenspeed:prompt_tokens_total") == kFieldCount);
  CHECK(tokenspeed.fpm_group_complete());
  const FieldMap vllm = FieldMap::preset(Preset::kVllm);
  CHECK(vllm.find("vllm:cache_config_info") == at(Field::kCacheConfigInfo));
  const FieldMap sglang = FieldMap::preset(Preset::kSglang);
  CHECK(sglang.find("sglang:num_used_tokens") == at(Field::kKvTokens));
  CHECK(sglang.find("sglang:max_total_num_tokens") == at(Field::kCapacity));
  CHECK(sglang.find(nullptr) == kFieldCount);
}

TEST_CASE("map replaces a field's family, unmaps it with \"\", refuses an unknown field",
          "[zmq_load]") {
  FieldMap fields = FieldMap::preset(Preset::kTokenspeed);
  fields.override_with(
      {{"num_running_reqs", "engine:running"}, {"fpm_queued_var_decode_kv_tokens", ""}});
  CHECK(fields.find("engine:running") == at(Field::kRunning));
  CHECK(fields.find("tokenspeed:num_requests_running") == kFieldCount);
  CHECK_FALSE(fields.fpm_group_complete());
  CHECK_THROWS_WITH(fields.override_with({{"running", "x"}}),
                    Catch::Contains("'map': unknown field 'running'"));
}

TEST_CASE("whole_number reads a rank label, -1 for anything else", "[zmq_load]") {
  CHECK(whole_number("0") == 0);
  CHECK(whole_number("17") == 17);
  CHECK(whole_number("") == -1);
  CHECK(whole_number("-1") == -1);
  CHECK(whole_number("1x") == -1);
  CHECK(whole_number("99999999999999999999") == -1);
  CHECK(whole_number(nullptr) == -1);
}
