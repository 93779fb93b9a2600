// statsd_socket.hpp — where datagrams go: the address setting ("host:port",
// "[v6]:port" or "unix:///path"), a non-blocking connected datagram socket,
// DNS resolved on the delivery thread and refreshed on an interval (never per
// datagram), a Unix socket that went away reconnected at the next flush.
// Never blocks: a full send buffer drops the datagram and says so.
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tokenspeed::metrics::statsd {

struct Address {
  bool unix_socket = false;
  std::string host;  // UDP: name or literal, without brackets
  std::string port;  // UDP: decimal
  std::string path;  // Unix: absolute path
  std::string text;  // as configured, for messages
};

// Parses the address setting; throws std::invalid_argument naming what is wrong.
Address parse_address(std::string_view text);

// Threading: one thread (the delivery thread) for everything.
class DatagramSocket {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Outcome {
    kSent,
    kDropped,       // this datagram is lost (buffer full, refused, too big); go on
    kDisconnected,  // no usable socket (DNS failed, Unix socket gone): the rest of
                    // this flush is lost; the next flush reconnects
  };

  DatagramSocket(Address address, std::chrono::milliseconds dns_refresh) noexcept;
  ~DatagramSocket();
  DatagramSocket(const DatagramSocket&) = delete;
  DatagramSocket& operator=(const DatagramSocket&) = delete;

  // Before each flush: resolves (when due) and connects when not connected.
  // Returns false with why when there is no socket to send through.
  bool prepare(Clock::time_point now, std::string& why) noexcept;

  // One datagram, non-blocking. why says what went wrong when not sent.
  Outcome send(std::string_view datagram, std::string& why) noexcept;

  const Address& address() const noexcept { return address_; }
  uint64_t resolutions() const noexcept { return resolutions_; }
  uint64_t connects() const noexcept { return connects_; }

 private:
  bool connect_udp(std::string& why) noexcept;
  bool connect_unix(std::string& why) noexcept;
  void disconnect() noexcept;

  const Address address_;
  const std::chrono::milliseconds dns_refresh_;
  int fd_ = -1;
  Clock::time_point next_resolve_{};
  std::string connected_to_;  // UDP: the resolved address bytes the socket is connected to
  uint64_t resolutions_ = 0;
  uint64_t connects_ = 0;
};

}  // namespace tokenspeed::metrics::statsd
