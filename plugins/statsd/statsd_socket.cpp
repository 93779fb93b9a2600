// statsd_socket.cpp — address parsing, DNS and the non-blocking datagram
// socket (see statsd_socket.hpp). Only the delivery thread calls in here.
#include "statsd_socket.hpp"

#include <errno.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

namespace tokenspeed::metrics::statsd {

Address parse_address(std::string_view text) {
  Address address;
  address.text = std::string(text);
  constexpr std::string_view kUnix = "unix://";
  if (text.substr(0, kUnix.size()) == kUnix) {
    address.unix_socket = true;
    address.path = std::string(text.substr(kUnix.size()));
    if (address.path.empty() || address.path.front() != '/')
      throw std::invalid_argument(
          "'address' unix:// needs an absolute path (unix:///run/x.sock), got \"" + address.text +
          "\"");
    if (address.path.size() >= sizeof(sockaddr_un{}.sun_path))
      throw std::invalid_argument("'address' socket path is longer than " +
                                  std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) + " bytes");
    return address;
  }
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      throw std::invalid_argument("'address' must be host:port, [v6]:port or unix:///path, got \"" +
                                  address.text + "\"");
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon)
      throw std::invalid_argument("'address' must be host:port, [v6]:port or unix:///path, got \"" +
                                  address.text + "\"");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  bool digits = !port.empty() && port.size() <= 5;
  for (const char c : port) digits = digits && c >= '0' && c <= '9';
  if (host.empty() || !digits || std::stoi(std::string(port)) < 1 ||
      std::stoi(std::string(port)) > 65535)
    throw std::invalid_argument("'address' needs a host and a port from 1 to 65535, got \"" +
                                address.text + "\"");
  address.host = std::string(host);
  address.port = std::string(port);
  return address;
}

DatagramSocket::DatagramSocket(Address address, std::chrono::milliseconds dns_refresh) noexcept
    : address_(std::move(address)), dns_refresh_(dns_refresh) {}

DatagramSocket::~DatagramSocket() { disconnect(); }

void DatagramSocket::disconnect() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool DatagramSocket::prepare(Clock::time_point now, std::string& why) noexcept {
  if (address_.unix_socket) return fd_ >= 0 || connect_unix(why);
  if (fd_ >= 0 && now < next_resolve_) return true;
  next_resolve_ = now + dns_refresh_;
  if (connect_udp(why)) return true;
  // Resolution failed: keep sending to the address we had, if any.
  return fd_ >= 0;
}

bool DatagramSocket::connect_udp(std::string& why) noexcept {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  ++resolutions_;
  const int status = ::getaddrinfo(address_.host.c_str(), address_.port.c_str(), &hints, &found);
  if (status != 0 || found == nullptr) {
    why = "cannot resolve " + address_.host + ": " + ::gai_strerror(status);
    return false;
  }
  const std::string resolved(reinterpret_cast<const char*>(found->ai_addr), found->ai_addrlen);
  if (fd_ >= 0 && resolved == connected_to_) {
    ::freeaddrinfo(found);
    return true;
  }
  const int fd = ::socket(found->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::connect(fd, found->ai_addr, found->ai_addrlen) != 0) {
    why = "cannot open a UDP socket to " + address_.text + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    ::freeaddrinfo(found);
    return false;
  }
  ::freeaddrinfo(found);
  disconnect();
  fd_ = fd;
  connected_to_ = resolved;
  ++connects_;
  return true;
}

bool DatagramSocket::connect_unix(std::string& why) noexcept {
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    why = std::string("cannot open a Unix datagram socket: ") + std::strerror(errno);
    return false;
  }
  sockaddr_un to{};
  to.sun_family = AF_UNIX;
  std::memcpy(to.sun_path, address_.path.data(), address_.path.size());
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
    why = "cannot connect to " + address_.text + ": " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  fd_ = fd;
  ++connects_;
  return true;
}

DatagramSocket::Outcome DatagramSocket::send(std::string_view datagram, std::string& why) noexcept {
  if (fd_ < 0) {
    why = "not connected to " + address_.text;
    return Outcome::kDisconnected;
  }
  const ssize_t sent = ::send(fd_, datagram.data(), datagram.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  if (sent >= 0) return Outcome::kSent;
  const int error = errno;
  why = address_.text + ": " + std::strerror(error);
  if (address_.unix_socket && (error == ECONNREFUSED || error == ENOENT || error == ENOTCONN ||
                               error == EDESTADDRREQ || error == ECONNRESET)) {
    disconnect();  // the receiver went away: reconnect at the next flush
    return Outcome::kDisconnected;
  }
  return Outcome::kDropped;  // EAGAIN/ENOBUFS (buffer full), ECONNREFUSED (UDP peer down), ...
}

}  // namespace tokenspeed::metrics::statsd
