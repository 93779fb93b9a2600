// abi_buffer.hpp — the host side of tsm_buffer: a std::string a plugin can
// write into through the C ABI. Used around every plugin call; the bytes are
// copied before the plugin's call returns, so no memory crosses modules.
// Header-only, so that every host component can use it without linking another.
#pragma once

#include <string>

#include <tokenspeed/metric_reporter.h>

namespace tokenspeed::metrics {

class AbiBuffer {
 public:
  AbiBuffer() noexcept : buffer_{sizeof(tsm_buffer), this, &AbiBuffer::assign} {}
  AbiBuffer(const AbiBuffer&) = delete;
  AbiBuffer& operator=(const AbiBuffer&) = delete;

  tsm_buffer* get() noexcept { return &buffer_; }
  const std::string& str() const noexcept { return contents_; }
  bool empty() const noexcept { return contents_.empty(); }
  void clear() noexcept { contents_.clear(); }

 private:
  // Allocation failure keeps the previous contents: a message lost is better
  // than a crash.
  static void assign(tsm_buffer* buffer, const char* data, size_t size) noexcept {
    if (buffer == nullptr || buffer->host_data == nullptr) return;
    auto* self = static_cast<AbiBuffer*>(buffer->host_data);
    try {
      self->contents_.assign(data == nullptr ? "" : data, data == nullptr ? 0 : size);
    } catch (...) {
      // Out of memory: keep what was there.
    }
  }

  tsm_buffer buffer_;
  std::string contents_;
};

}  // namespace tokenspeed::metrics
