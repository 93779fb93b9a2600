// load_messages.hpp — the payloads of the two schemas, built from a rank's
// values: SGLang's LoadStat array and Dynamo's ForwardPassMetrics map
// (version 1, every field present, in declaration order). No allocation.
// Tested in test/unit/zmq_load/load_messages_test.cpp and against
// python3-msgpack in test/integration/zmq_load_golden.py.
#pragma once

#include <array>
#include <cstdint>

#include "load_fields.hpp"
#include "msgpack_writer.hpp"
#include "rank_state.hpp"

namespace tokenspeed::metrics::zmq_load {

// SGLang's LoadStat.
struct LoadStat {
  uint64_t num_running_reqs = 0;
  uint64_t num_waiting_reqs = 0;
  uint64_t num_tokens = 0;            // KV tokens in use
  uint64_t max_total_num_tokens = 0;  // 0: unknown
  int64_t attn_dp_rank = -1;          // -1: nil
};

// The LoadStat of a snapshot: KV tokens from the tokens gauge, else
// round(ratio x capacity); capacity from its gauge, else the info gauge's
// blocks x block size, else configured_capacity (0: unknown).
LoadStat load_stat(const RankSnapshot& snapshot, uint64_t configured_capacity, int64_t rank);

// ["LoadStat", running, waiting, tokens, capacity, rank or nil]
void write_load_stat(MsgpackWriter& out, const LoadStat& stat) noexcept;

// Dynamo's ForwardPassMetrics: counts and sums as unsigned integers, the
// var_* fields and wall_time as float64.
struct ForwardPass {
  uint64_t worker_id = 0;
  uint64_t dp_rank = 0;
  uint64_t counter_id = 0;                      // the message's sequence number
  double wall_time = 0.0;                       // Unix seconds; 0.0 on a heartbeat
  std::array<double, kFpmGaugeCount> values{};  // the fpm group, in kFpmFieldNames' order
};

// A message from counts alone: running as scheduled decode requests,
// waiting as queued prefill requests.
ForwardPass counts_only_forward_pass(const RankSnapshot& snapshot);

void write_forward_pass(MsgpackWriter& out, const ForwardPass& pass) noexcept;

}  // namespace tokenspeed::metrics::zmq_load
