// zmq_publisher.hpp — the PUB sockets of the feed, one per rank on the
// endpoint's port plus the rank: bound on demand, SNDHWM 8, LINGER 0, and
// three-frame messages [topic, sequence as 8 bytes big-endian, payload] that
// never block. A subscriber at its high-water mark is noticed (XPUB_NODROP
// fails the send) and the message goes again without it, so that it alone
// misses it. Only the sending thread (and start_node's probe) touch it.
// Tested in test/integration/zmq_load_feed.py.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tokenspeed::metrics::zmq_load {

// tcp://HOST:PORT (HOST an address, "*" or an interface name).
struct Endpoint {
  std::string prefix;  // "tcp://HOST:"
  int port = 0;
  std::string text;  // as configured
};

// Throws std::invalid_argument starting "'endpoint'".
Endpoint parse_endpoint(const std::string& text);

// The endpoint of rank offset: the port plus offset.
std::string endpoint_at(const Endpoint& endpoint, std::size_t offset);

// Threading: one thread at a time (the context's own I/O thread is
// libzmq's).
class ZmqPublisher {
 public:
  enum class Sent {
    kSent,
    kMissedBySome,  // sent to every subscriber but one at its high-water mark
    kFailed,
  };

  ZmqPublisher(Endpoint endpoint, std::size_t offsets);  // throws std::runtime_error
  ~ZmqPublisher();
  ZmqPublisher(const ZmqPublisher&) = delete;
  ZmqPublisher& operator=(const ZmqPublisher&) = delete;

  bool bound(std::size_t offset) const noexcept { return sockets_[offset] != nullptr; }
  // Binds offset's socket; "" when bound, else why, naming the port.
  std::string bind(std::size_t offset);
  // The sequence number the next message of offset gets.
  uint64_t next_sequence(std::size_t offset) const noexcept { return sequences_[offset]; }
  // Sends [topic, sequence, payload] without waiting; the sequence moves on
  // only when sent. why says what failed.
  Sent send(std::size_t offset, std::string_view topic, const unsigned char* payload,
            std::size_t size, std::string& why) noexcept;

 private:
  // One attempt; the zmq error number, 0 when sent.
  int send_frames(void* socket, std::string_view topic, const unsigned char* sequence,
                  const unsigned char* payload, std::size_t size) noexcept;

  const Endpoint endpoint_;
  void* context_ = nullptr;
  std::vector<void*> sockets_;
  std::vector<uint64_t> sequences_;
};

}  // namespace tokenspeed::metrics::zmq_load
