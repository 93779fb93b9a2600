// channel_reader.hpp — the helper's side of an isolated output's channel:
// takes the next event from the ring into a private copy (so the host may
// reuse the ring's bytes at once) and rebuilds the metric descriptions the
// plugin's emit sees. Validates every record; never trusts a size it read.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <tokenspeed/metric_reporter.h>

#include "isolation/shared_channel.hpp"

namespace tokenspeed::metrics::isolation {

enum class ReadResult : std::uint8_t { event, empty, corrupt };

// Threading: the helper's one consumer thread.
class ChannelReader {
 public:
  explicit ChannelReader(const SharedChannel& channel);

  // ReadResult::event: event is filled (its strings valid until the next
  // call), read_pos and events_read are published. empty: nothing to read.
  // corrupt: a record or description failed validation.
  ReadResult next(tsm_metric_event& event) noexcept;

  // True when the host wrote nothing the helper has not taken.
  bool empty() const noexcept;

 private:
  struct Definition {
    tsm_metric_info info{};
    std::string name, help, unit;
    std::vector<std::string> labels;
    std::vector<const char*> label_ptrs;
    std::vector<double> buckets;
  };
  bool load_definitions(std::uint32_t wanted) noexcept;

  const SharedChannel& channel_;
  ControlBlock& control_;
  std::uint64_t read_pos_;
  std::uint64_t events_read_;
  std::uint64_t definition_bytes_ = 0;
  std::vector<std::unique_ptr<Definition>> definitions_;
  std::vector<std::byte> copy_;            // the current record
  std::vector<const char*> label_values_;  // into copy_
};

}  // namespace tokenspeed::metrics::isolation
