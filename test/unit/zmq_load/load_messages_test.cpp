// The two schemas' payloads: the LoadStat golden vectors byte for
// byte, KV tokens from the ratio and each source of the capacity, and the
// ForwardPassMetrics map's fields in declaration order with counts as
// integers and variances as float64.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "load_messages.hpp"

using namespace tokenspeed::metrics::zmq_load;

namespace {
std::vector<unsigned char> bytes(const MsgpackWriter& w) {
  return std::vector<unsigned char>(w.data(), w.data() + w.size());
}
std::vector<unsigned char> of(const std::string& text) {
  return std::vector<unsigned char>(text.begin(), text.end());
}
RankSnapshot unset() {
  RankSnapshot s;
  for (double& v : s.values) v = std::nan("");
  return s;
}
void set(RankSnapshot& s, Field field, double value) {
  s.values[static_cast<std::size_t>(field)] = value;
}
}  // namespace

TEST_CASE("LoadStat 7, 3, 1024, 8192 of rank 2 is the golden array", "[zmq_load]") {
  RankSnapshot s = unset();
  set(s, Field::kRunning, 7);
  set(s, Field::kWaiting, 3);
  set(s, Field::kKvTokens, 1024);
  set(s, Field::kCapacity, 8192);
  MsgpackWriter w;
  write_load_stat(w, load_stat(s, 0, 2));
  CHECK(bytes(w) == of(std::string("\x96\xa8LoadStat\x07\x03\xcd\x04\x00\xcd\x20\x00\x02", 19)));
}

TEST_CASE("an unset rank is nil and unset values are 0", "[zmq_load]") {
  MsgpackWriter w;
  write_load_stat(w, load_stat(unset(), 0, -1));
  CHECK(bytes(w) == of(std::string("\x96\xa8LoadStat\x00\x00\x00\x00\xc0", 15)));
}

TEST_CASE("KV tokens are the ratio times the capacity from gauge, info or config", "[zmq_load]") {
  RankSnapshot s = unset();
  set(s, Field::kKvUsageRatio, 0.375);
  CHECK(load_stat(s, 0, 0).num_tokens == 0);  // no capacity: 0, as the docs say
  CHECK(load_stat(s, 1000, 0).num_tokens == 375);
  set(s, Field::kCacheConfigInfo, 32768);
  CHECK(load_stat(s, 1000, 0).max_total_num_tokens == 32768);
  CHECK(load_stat(s, 1000, 0).num_tokens == 12288);
  set(s, Field::kCapacity, 2000);
  CHECK(load_stat(s, 1000, 0).num_tokens == 750);
  set(s, Field::kKvTokens, 5);
  CHECK(load_stat(s, 1000, 0).num_tokens == 5);
}

TEST_CASE("a forward pass is the full map, counts as integers, variances as float64",
          "[zmq_load]") {
  ForwardPass pass;
  pass.worker_id = 300;
  pass.dp_rank = 1;
  pass.counter_id = 2;
  pass.wall_time = 0.0;
  pass.values[2] = 0.5;  // scheduled var_prefill_length
  pass.values[4] = 129;  // scheduled num_decode_requests
  MsgpackWriter w;
  write_forward_pass(w, pass);
  REQUIRE(w.ok());
  const std::string text(reinterpret_cast<const char*>(w.data()), w.size());
  CHECK(text.substr(0, 10) == "\x87\xa7version\x01");
  CHECK(text.find("\xa9worker_id\xcd\x01\x2c") != std::string::npos);
  CHECK(text.find("\xb2var_prefill_length\xcb\x3f\xe0") != std::string::npos);
  CHECK(text.find("\xb3num_decode_requests\xcc\x81") != std::string::npos);
  CHECK(text.find("scheduled_requests") < text.find("queued_requests"));
}

TEST_CASE("a counts-only forward pass has running as decode and waiting as queued prefill",
          "[zmq_load]") {
  RankSnapshot s = unset();
  set(s, Field::kRunning, 5);
  set(s, Field::kWaiting, 2);
  s.changed_at = 12.5;
  const ForwardPass pass = counts_only_forward_pass(s);
  CHECK(pass.values[4] == 5);
  CHECK(pass.values[kFpmScheduledCount] == 2);
  CHECK(pass.wall_time == 12.5);
}
