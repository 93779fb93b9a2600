// msgpack_writer.hpp — the few msgpack forms the load feed writes (arrays,
// maps, nil, unsigned integers in their smallest encoding, strings, float64)
// into a fixed buffer: no allocation, so a message is built on the sending
// thread without touching the heap. Tested in
// test/unit/zmq_load/msgpack_writer_test.cpp and, byte for byte against
// python3-msgpack, in test/integration/zmq_load_golden.py.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tokenspeed::metrics::zmq_load {

// Threading: one thread at a time.
class MsgpackWriter {
 public:
  static constexpr std::size_t kCapacity = 1024;  // an FPM map needs about 500 bytes

  void clear() noexcept { size_ = 0; }
  void array(uint32_t count) noexcept;
  void map(uint32_t count) noexcept;
  void nil() noexcept;
  void uint(uint64_t value) noexcept;
  void float64(double value) noexcept;
  void str(std::string_view text) noexcept;

  // False when a write did not fit (the message must not be sent).
  bool ok() const noexcept { return !overflow_; }
  const unsigned char* data() const noexcept { return bytes_.data(); }
  std::size_t size() const noexcept { return size_; }

 private:
  void byte(unsigned char value) noexcept;
  void big_endian(uint64_t value, int bytes) noexcept;
  void container(uint32_t count, unsigned char fix, unsigned char b16, unsigned char b32) noexcept;

  std::array<unsigned char, kCapacity> bytes_{};
  std::size_t size_ = 0;
  bool overflow_ = false;
};

}  // namespace tokenspeed::metrics::zmq_load
