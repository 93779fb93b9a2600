// statsd_packer.hpp — packs newline-separated lines into datagrams of at
// most max_bytes: whole lines joined by '\n'; a plain-StatsD multi-value line
// too long for one datagram is split at its ':' value boundaries with the name
// repeated; a line that cannot fit at all is counted, never truncated.
// No I/O; runs on the delivery thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenspeed::metrics::statsd {

// Threading: one thread (the delivery thread).
class DatagramPacker {
 public:
  explicit DatagramPacker(std::size_t max_bytes) noexcept : max_bytes_(max_bytes) {}

  // Adds every line of text (separated by '\n') to the datagrams of out.
  void add_lines(std::string_view text, std::vector<std::string>& out);
  // Adds one line (no '\n' in it).
  void add_line(std::string_view line, std::vector<std::string>& out);
  // Ends the datagram being filled.
  void finish(std::vector<std::string>& out);

  uint64_t oversized_lines() const noexcept { return oversized_; }
  // The bytes of the lines (or values) left out since the last call: the
  // part of a flush's events that no datagram holds.
  std::size_t take_oversized_bytes() noexcept { return std::exchange(oversized_bytes_, 0); }
  std::size_t max_bytes() const noexcept { return max_bytes_; }

 private:
  void append(std::string_view piece, std::vector<std::string>& out);

  const std::size_t max_bytes_;
  std::string current_;
  uint64_t oversized_ = 0;
  std::size_t oversized_bytes_ = 0;
};

}  // namespace tokenspeed::metrics::statsd
