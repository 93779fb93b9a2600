// channel_writer.hpp — the host's side of an isolated output's channel: copies
// each event (and, once per metric, its description) into the shared mapping
// and wakes the helper only when it sleeps. Never calls a plugin, never blocks,
// no syscall per event while the helper keeps up.
// Tested in test/unit/isolation/isolated_output_test.cpp (both ends of the
// channel, through the real helper).
#pragma once

#include <cstdint>
#include <unordered_map>

#include <tokenspeed/metric_reporter.h>

#include "isolation/shared_channel.hpp"

namespace tokenspeed::metrics::isolation {

enum class WriteResult : std::uint8_t {
  written,    // in the ring, for the helper
  ring_full,  // no room (helper slow, stalled or restarting)
  too_large,  // the event (its label values) exceeds kMaxEventRecord, or the
              // table of metric descriptions is full
};

// Threading: one producer thread (the output's delivery thread) calls write;
// the channel outlives the writer.
class ChannelWriter {
 public:
  explicit ChannelWriter(SharedChannel& channel) noexcept;

  // Allocates only on the first event of a metric (its description).
  WriteResult write(const tsm_metric_event& event) noexcept;

  // Wakes the helper regardless of whether it sleeps (close, restart).
  void wake() noexcept;

 private:
  // The description's index in the table, or -1 when the table is full.
  std::int64_t definition_of(const tsm_metric_info& info) noexcept;

  SharedChannel& channel_;
  ControlBlock& control_;
  std::byte* ring_;
  std::uint64_t write_pos_ = 0;
  std::uint64_t read_pos_seen_ = 0;  // last read_pos loaded from the helper's line
  std::uint64_t events_written_ = 0;
  std::uint64_t definition_bytes_ = 0;
  std::uint32_t definitions_ = 0;
  const tsm_metric_info* last_info_ = nullptr;  // one-entry cache before the map
  std::uint32_t last_id_ = 0;
  std::unordered_map<const tsm_metric_info*, std::uint32_t> ids_;
};

}  // namespace tokenspeed::metrics::isolation
