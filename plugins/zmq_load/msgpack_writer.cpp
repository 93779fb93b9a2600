// msgpack_writer.cpp — the msgpack encodings of the specification's
// "Formats" section, the smallest that holds each value.
#include "msgpack_writer.hpp"

#include <cstring>

namespace tokenspeed::metrics::zmq_load {

void MsgpackWriter::byte(unsigned char value) noexcept {
  if (size_ >= kCapacity) {
    overflow_ = true;
    return;
  }
  bytes_[size_++] = value;
}

void MsgpackWriter::big_endian(uint64_t value, int bytes) noexcept {
  for (int shift = (bytes - 1) * 8; shift >= 0; shift -= 8)
    byte(static_cast<unsigned char>(value >> shift));
}

void MsgpackWriter::container(uint32_t count, unsigned char fix, unsigned char b16,
                              unsigned char b32) noexcept {
  if (count < 16) {
    byte(static_cast<unsigned char>(fix | count));
  } else if (count <= 0xffff) {
    byte(b16);
    big_endian(count, 2);
  } else {
    byte(b32);
    big_endian(count, 4);
  }
}

void MsgpackWriter::array(uint32_t count) noexcept { container(count, 0x90, 0xdc, 0xdd); }

void MsgpackWriter::map(uint32_t count) noexcept { container(count, 0x80, 0xde, 0xdf); }

void MsgpackWriter::nil() noexcept { byte(0xc0); }

void MsgpackWriter::uint(uint64_t value) noexcept {
  if (value < 0x80) {
    byte(static_cast<unsigned char>(value));  // positive fixint
  } else if (value <= 0xff) {
    byte(0xcc);
    big_endian(value, 1);
  } else if (value <= 0xffff) {
    byte(0xcd);
    big_endian(value, 2);
  } else if (value <= 0xffffffffULL) {
    byte(0xce);
    big_endian(value, 4);
  } else {
    byte(0xcf);
    big_endian(value, 8);
  }
}

void MsgpackWriter::float64(double value) noexcept {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  byte(0xcb);
  big_endian(bits, 8);
}

void MsgpackWriter::str(std::string_view text) noexcept {
  const std::size_t n = text.size();
  if (n < 32) {
    byte(static_cast<unsigned char>(0xa0 | n));
  } else if (n <= 0xff) {
    byte(0xd9);
    big_endian(n, 1);
  } else {
    byte(0xda);
    big_endian(n, 2);  // the feed's strings are field names: never beyond 64 KiB
  }
  for (const char c : text) byte(static_cast<unsigned char>(c));
}

}  // namespace tokenspeed::metrics::zmq_load
