// zmq_publisher.cpp — libzmq PUB sockets: bind, options, non-blocking
// three-frame sends.
#include "zmq_publisher.hpp"

#include <zmq.h>

#include <cerrno>
#include <stdexcept>

namespace tokenspeed::metrics::zmq_load {
namespace {

constexpr int kSendHighWaterMark = 8;  // SGLang's publisher's

std::string zmq_error() { return zmq_strerror(zmq_errno()); }

void set_option(void* socket, int option, int value) {
  if (zmq_setsockopt(socket, option, &value, sizeof value) != 0)
    throw std::runtime_error("zmq_setsockopt: " + zmq_error());
}

}  // namespace

Endpoint parse_endpoint(const std::string& text) {
  const std::string scheme = "tcp://";
  const std::size_t colon = text.rfind(':');
  if (text.rfind(scheme, 0) != 0 || colon == std::string::npos || colon <= scheme.size())
    throw std::invalid_argument("'endpoint' must be tcp://HOST:PORT, got \"" + text + "\"");
  const std::string port = text.substr(colon + 1);
  long number = 0;
  bool valid = !port.empty() && port.size() <= 5;
  for (const char c : port) {
    valid = valid && c >= '0' && c <= '9';
    if (valid) number = number * 10 + (c - '0');
  }
  if (!valid || number < 1 || number > 65535)
    throw std::invalid_argument("'endpoint' must have a port from 1 to 65535, got \"" + text +
                                "\"");
  for (const char c : text)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      throw std::invalid_argument("'endpoint' must not hold a space or control character");
  return Endpoint{text.substr(0, colon + 1), static_cast<int>(number), text};
}

std::string endpoint_at(const Endpoint& endpoint, std::size_t offset) {
  return endpoint.prefix + std::to_string(endpoint.port + static_cast<long>(offset));
}

ZmqPublisher::ZmqPublisher(Endpoint endpoint, std::size_t offsets)
    : endpoint_(std::move(endpoint)), sockets_(offsets, nullptr), sequences_(offsets, 0) {
  context_ = zmq_ctx_new();
  if (context_ == nullptr) throw std::runtime_error("zmq_ctx_new: " + zmq_error());
}

ZmqPublisher::~ZmqPublisher() {
  for (void* socket : sockets_)
    if (socket != nullptr) zmq_close(socket);
  zmq_ctx_term(context_);  // LINGER 0: returns at once
}

std::string ZmqPublisher::bind(std::size_t offset) {
  const long port = endpoint_.port + static_cast<long>(offset);
  if (port > 65535) return "port " + std::to_string(port) + " is beyond 65535";
  void* socket = zmq_socket(context_, ZMQ_PUB);
  if (socket == nullptr) return "zmq_socket: " + zmq_error();
  try {
    set_option(socket, ZMQ_SNDHWM, kSendHighWaterMark);
    set_option(socket, ZMQ_LINGER, 0);
    set_option(socket, ZMQ_XPUB_NODROP, 1);  // a full subscriber fails the send: noticed
  } catch (const std::exception& e) {
    zmq_close(socket);
    return e.what();
  }
  const std::string address = endpoint_at(endpoint_, offset);
  if (zmq_bind(socket, address.c_str()) != 0) {
    const std::string why = zmq_error();
    zmq_close(socket);
    return "cannot bind " + address + " (port " + std::to_string(port) + "): " + why;
  }
  sockets_[offset] = socket;
  return {};
}

int ZmqPublisher::send_frames(void* socket, std::string_view topic, const unsigned char* sequence,
                              const unsigned char* payload, std::size_t size) noexcept {
  // Only the first frame can meet the high-water mark; the others follow it.
  if (zmq_send(socket, topic.data(), topic.size(), ZMQ_DONTWAIT | ZMQ_SNDMORE) < 0 ||
      zmq_send(socket, sequence, 8, ZMQ_DONTWAIT | ZMQ_SNDMORE) < 0 ||
      zmq_send(socket, payload, size, ZMQ_DONTWAIT) < 0)
    return zmq_errno();
  return 0;
}

ZmqPublisher::Sent ZmqPublisher::send(std::size_t offset, std::string_view topic,
                                      const unsigned char* payload, std::size_t size,
                                      std::string& why) noexcept {
  void* socket = sockets_[offset];
  unsigned char sequence[8];
  for (int i = 0; i < 8; ++i)
    sequence[i] = static_cast<unsigned char>(sequences_[offset] >> (56 - 8 * i));
  Sent sent = Sent::kSent;
  int error = send_frames(socket, topic, sequence, payload, size);
  if (error == EAGAIN) {
    // A subscriber is full: the others get the message, as a plain PUB
    // socket would send it (a socket option, no system call).
    int lossy = 0;
    zmq_setsockopt(socket, ZMQ_XPUB_NODROP, &lossy, sizeof lossy);
    error = send_frames(socket, topic, sequence, payload, size);
    int nodrop = 1;
    zmq_setsockopt(socket, ZMQ_XPUB_NODROP, &nodrop, sizeof nodrop);
    sent = Sent::kMissedBySome;
  }
  if (error != 0) {
    why = zmq_strerror(error);
    return Sent::kFailed;
  }
  ++sequences_[offset];
  return sent;
}

}  // namespace tokenspeed::metrics::zmq_load
