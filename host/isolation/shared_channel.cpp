// shared_channel.cpp — creating and attaching the shared mapping of an
// isolated output, and futex calls on its words. No plugin call, no event.
#include "isolation/shared_channel.hpp"

#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>
#include <new>
#include <system_error>
#include <utility>

namespace tokenspeed::metrics::isolation {

SharedChannel SharedChannel::create() {
  SharedChannel channel;
  channel.fd_ = static_cast<int>(::memfd_create("tokenspeed-metrics-isolated-output", MFD_CLOEXEC));
  if (channel.fd_ < 0) throw std::system_error(errno, std::generic_category(), "memfd_create");
  if (::ftruncate(channel.fd_, static_cast<off_t>(kChannelBytes)) != 0) {
    throw std::system_error(errno, std::generic_category(), "ftruncate of the shared channel");
  }
  void* base = ::mmap(nullptr, kChannelBytes, PROT_READ | PROT_WRITE, MAP_SHARED, channel.fd_, 0);
  if (base == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap");
  auto* bytes = static_cast<std::byte*>(base);
  // A fresh memfd reads as zeros: every atomic starts at 0.
  channel.control_ = new (base) ControlBlock();
  channel.control_->magic = kChannelMagic;
  channel.control_->version = kChannelVersion;
  channel.definitions_ = bytes + kControlBytes;
  channel.ring_ = bytes + kControlBytes + kDefinitionBytes;
  return channel;
}

SharedChannel SharedChannel::attach(int fd) noexcept {
  SharedChannel channel;
  void* control = ::mmap(nullptr, kControlBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (control == MAP_FAILED) return channel;
  // The table and the ring are the host's: read-only here, so that a plugin's
  // stray write cannot corrupt what the next helper reads.
  void* rest = ::mmap(nullptr, kDefinitionBytes + kRingBytes, PROT_READ, MAP_SHARED, fd,
                      static_cast<off_t>(kControlBytes));
  if (rest == MAP_FAILED) {
    ::munmap(control, kControlBytes);
    return channel;
  }
  auto* block = static_cast<ControlBlock*>(control);
  if (block->magic != kChannelMagic || block->version != kChannelVersion) {
    ::munmap(control, kControlBytes);
    ::munmap(rest, kDefinitionBytes + kRingBytes);
    return channel;
  }
  channel.fd_ = fd;
  channel.control_ = block;
  channel.rest_ = rest;
  channel.definitions_ = static_cast<std::byte*>(rest);
  channel.ring_ = static_cast<std::byte*>(rest) + kDefinitionBytes;
  return channel;
}

SharedChannel::SharedChannel(SharedChannel&& other) noexcept { *this = std::move(other); }

SharedChannel& SharedChannel::operator=(SharedChannel&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    control_ = std::exchange(other.control_, nullptr);
    definitions_ = std::exchange(other.definitions_, nullptr);
    ring_ = std::exchange(other.ring_, nullptr);
    rest_ = std::exchange(other.rest_, nullptr);
  }
  return *this;
}

SharedChannel::~SharedChannel() { release(); }

void SharedChannel::release() noexcept {
  if (control_ != nullptr) {
    if (rest_ != nullptr) {
      ::munmap(control_, kControlBytes);
      ::munmap(rest_, kDefinitionBytes + kRingBytes);
    } else {
      ::munmap(control_, kChannelBytes);
    }
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  control_ = nullptr;
  definitions_ = nullptr;
  ring_ = nullptr;
  rest_ = nullptr;
}

void shared_futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                       std::int64_t timeout_ns) noexcept {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(timeout_ns / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(timeout_ns % 1'000'000'000);
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT, expected, &ts, nullptr,
            0);
}

void shared_futex_wake(std::atomic<std::uint32_t>& word) noexcept {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr,
            nullptr, 0);
}

void set_message(ControlBlock& control, std::string_view text) noexcept {
  const std::size_t n = text.size() < kMessageBytes ? text.size() : kMessageBytes;
  std::memcpy(control.message, text.data(), n);
  control.message_size.store(static_cast<std::uint32_t>(n), std::memory_order_release);
}

std::string message_of(const ControlBlock& control) {
  std::uint32_t n = control.message_size.load(std::memory_order_acquire);
  if (n > kMessageBytes) n = kMessageBytes;
  return std::string(control.message, n);
}

}  // namespace tokenspeed::metrics::isolation
