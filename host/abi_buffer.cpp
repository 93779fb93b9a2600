// abi_buffer.cpp — copies plugin strings into host memory. Allocation failure
// leaves the previous contents: a message lost is better than a crash.
#include "abi_buffer.hpp"

namespace tokenspeed::metrics {

AbiBuffer::AbiBuffer() noexcept : buffer_{sizeof(tsm_buffer), this, &AbiBuffer::assign} {}

void AbiBuffer::assign(tsm_buffer* buffer, const char* data, size_t size) noexcept {
  if (buffer == nullptr || buffer->host_data == nullptr) return;
  auto* self = static_cast<AbiBuffer*>(buffer->host_data);
  try {
    if (data == nullptr) size = 0;
    self->contents_.assign(data == nullptr ? "" : data, size);
  } catch (...) {
    // Out of memory: keep what was there.
  }
}

}  // namespace tokenspeed::metrics
