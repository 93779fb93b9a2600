// The statsd output's socket: DNS is resolved on an interval, never per
// datagram; a Unix socket that disappears is reconnected at the next flush;
// a peer that does not read makes send drop at once instead of blocking.
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>

#include "statsd_socket.hpp"

using namespace tokenspeed::metrics::statsd;
using namespace std::chrono_literals;

namespace {

int bind_unix(const std::string& path) {
  ::unlink(path.c_str());
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un at{};
  at.sun_family = AF_UNIX;
  std::memcpy(at.sun_path, path.data(), path.size());
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&at), sizeof at) == 0);
  return fd;
}

std::string temp_path(const char* name) {
  return "/tmp/statsd-unit-" + std::to_string(::getpid()) + "-" + name + ".sock";
}

}  // namespace

TEST_CASE("the host name is resolved again only when the refresh interval has passed", "[statsd]") {
  DatagramSocket socket(parse_address("localhost:8125"), 30000ms);
  std::string why;
  const auto start = DatagramSocket::Clock::now();
  REQUIRE(socket.prepare(start, why));
  for (int i = 0; i < 100; ++i) {
    REQUIRE(socket.prepare(start + 1s, why));
    socket.send("a:1|c", why);
  }
  CHECK(socket.resolutions() == 1);
  REQUIRE(socket.prepare(start + 31s, why));
  CHECK(socket.resolutions() == 2);
  CHECK(socket.connects() == 1);  // the same address keeps its socket
}

TEST_CASE("a Unix socket that disappears is reconnected at the next flush", "[statsd]") {
  const std::string path = temp_path("reconnect");
  int receiver = bind_unix(path);
  DatagramSocket socket(parse_address("unix://" + path), 30000ms);
  std::string why;
  REQUIRE(socket.prepare(DatagramSocket::Clock::now(), why));
  CHECK(socket.send("a:1|c", why) == DatagramSocket::Outcome::kSent);
  ::close(receiver);
  ::unlink(path.c_str());
  CHECK(socket.send("a:1|c", why) == DatagramSocket::Outcome::kDisconnected);
  CHECK_FALSE(socket.prepare(DatagramSocket::Clock::now(), why));
  CHECK_THAT(why, Catch::Contains("No such file"));
  receiver = bind_unix(path);
  REQUIRE(socket.prepare(DatagramSocket::Clock::now(), why));
  CHECK(socket.send("a:1|c", why) == DatagramSocket::Outcome::kSent);
  char buffer[64];
  CHECK(::recv(receiver, buffer, sizeof buffer, MSG_DONTWAIT) == 5);
  CHECK(socket.connects() == 2);
  ::close(receiver);
  ::unlink(path.c_str());
}

TEST_CASE("a receiver that does not read makes send drop at once, never block", "[statsd]") {
  const std::string path = temp_path("full");
  const int receiver = bind_unix(path);
  DatagramSocket socket(parse_address("unix://" + path), 30000ms);
  std::string why;
  REQUIRE(socket.prepare(DatagramSocket::Clock::now(), why));
  int dropped = 0;
  for (int i = 0; i < 2000; ++i) {
    if (socket.send(std::string(1000, 'x'), why) == DatagramSocket::Outcome::kDropped) ++dropped;
  }
  CHECK(dropped > 0);
  CHECK_THAT(why, Catch::Contains("Resource temporarily unavailable"));
  ::close(receiver);
  ::unlink(path.c_str());
}
