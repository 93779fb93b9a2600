// abi_buffer.hpp — the host side of tsm_buffer: a std::string a plugin can
// write into through the C ABI. Used around every plugin call; the bytes are
// copied before the plugin's call returns, so no memory crosses modules.
#pragma once

#include <string>

#include <tokenspeed/metric_reporter.h>

namespace tokenspeed::metrics {

class AbiBuffer {
 public:
  AbiBuffer() noexcept;
  AbiBuffer(const AbiBuffer&) = delete;
  AbiBuffer& operator=(const AbiBuffer&) = delete;

  tsm_buffer* get() noexcept { return &buffer_; }
  const std::string& str() const noexcept { return contents_; }
  bool empty() const noexcept { return contents_.empty(); }
  void clear() noexcept { contents_.clear(); }

 private:
  static void assign(tsm_buffer* buffer, const char* data, size_t size) noexcept;

  tsm_buffer buffer_;
  std::string contents_;
};

}  // namespace tokenspeed::metrics
