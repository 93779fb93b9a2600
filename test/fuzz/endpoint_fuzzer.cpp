// endpoint_fuzzer.cpp — fuzzes the /metrics server's request handling
// (host/prometheus/server/prometheus_endpoint) by driving the real server over
// loopback: the input is sent as the bytes of one connection, which is then
// half-closed. The server must answer with well-formed HTTP/1.1 responses of
// the statuses it documents and close, within seconds (never hang), and keep
// answering a well-behaved scrape afterwards. Each input goes to two servers:
// one open to all, and one whose web configuration has a basic-auth user, so
// that the Authorization header's parsing and checking are fuzzed too (only
// the right credentials may see the exposition there).
#include <crypt.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <boost/beast/http.hpp>

#include "fuzz_support.hpp"
#include "prometheus/server/prometheus_endpoint.hpp"

namespace {

namespace tsm = tokenspeed::metrics;
namespace http = boost::beast::http;

constexpr std::uint32_t kMaxRequestBytes = 4096;  // small, so that the fuzzer reaches the limits
constexpr std::string_view kExposition = "# TYPE up gauge\nup 1\n";

// The user of the server with authentication; the seed corpus holds its
// Authorization header ("Basic " and base64 of "fuzz:fuzz-password").
constexpr std::string_view kCredentials = "ZnV6ejpmdXp6LXBhc3N3b3Jk";
constexpr std::string_view kAuthorization = "Authorization: Basic ZnV6ejpmdXp6LXBhc3N3b3Jk";

tsm::PrometheusEndpointOptions fuzzing_options() {
  tsm::PrometheusEndpointOptions options;
  options.port = 0;
  options.threads = 1;
  options.read_timeout = std::chrono::milliseconds(2000);
  options.write_timeout = std::chrono::milliseconds(2000);
  options.max_request_bytes = kMaxRequestBytes;
  return options;
}

// A web configuration with the user fuzz (bcrypt at the lowest cost, 04).
std::string write_web_config() {
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  FUZZ_CHECK(crypt_gensalt_rn("$2b$", 4, nullptr, 0, setting, sizeof setting) != nullptr);
  crypt_data data{};
  const char* hash = crypt_r("fuzz-password", setting, &data);
  FUZZ_CHECK(hash != nullptr && hash[0] == '$');
  char path[] = "/tmp/tsm-endpoint-fuzzer-XXXXXX";
  const int fd = ::mkstemp(path);
  FUZZ_CHECK(fd >= 0);
  ::close(fd);
  std::ofstream(path) << "basic_auth_users:\n  fuzz: " << hash << "\n";
  return path;
}

enum class Server { open, with_auth };

tsm::PrometheusEndpoint& server(Server which) {
  // Never destroyed: the process ends with libFuzzer's exit.
  static tsm::PrometheusEndpoint* open =
      new tsm::PrometheusEndpoint(fuzzing_options(), [] { return std::string(kExposition); });
  static tsm::PrometheusEndpoint* with_auth = [] {
    tsm::PrometheusEndpointOptions options = fuzzing_options();
    options.web_config_file = write_web_config();
    auto* endpoint = new tsm::PrometheusEndpoint(options, [] { return std::string(kExposition); });
    std::remove(options.web_config_file.c_str());  // read: the endpoint keeps what it needs
    return endpoint;
  }();
  return which == Server::open ? *open : *with_auth;
}

// A connection to the server. A busy machine can refuse one for a while
// (a full accept queue, ports still being released), which says nothing
// about the server: such failures are retried for up to ten seconds.
int connect_to(Server which) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(server(which).port());
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    FUZZ_CHECK(fd >= 0);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) return fd;
    const int error = errno;
    ::close(fd);
    const bool transient = error == ECONNREFUSED || error == EADDRNOTAVAIL || error == EAGAIN ||
                           error == ETIMEDOUT || error == EINTR;
    if (!transient || std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "connect to 127.0.0.1:%u: %s\n", unsigned{server(which).port()},
                   std::strerror(error));
      FUZZ_CHECK(!"the server accepts connections");
    }
    ::poll(nullptr, 0, 10);  // back off before the next attempt
  }
}

// How a client ends its side once its request is sent.
enum class Ending {
  // Half-closes the connection: the end of the input is the end of what the
  // server reads (a cut-short request is answered as one).
  half_close,
  // Keeps its side open, as a scraper does (the request asks the server to
  // close): a half-close while a credential check runs would tell the server
  // the client has gone, and the check would be skipped unanswered.
  keep_open,
};

// Sends request to server on a fresh connection and returns what the server
// sent until it closed. Aborts when the server neither answers nor closes
// within ten seconds.
std::string exchange(Server which, std::string_view request, Ending ending = Ending::half_close) {
  const int fd = connect_to(which);
  std::size_t sent = 0;
  std::string received;
  char buffer[65536];
  bool write_open = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    if (write_open && sent == request.size() && ending == Ending::half_close) {
      ::shutdown(fd, SHUT_WR);
      write_open = false;
    }
    const bool sending = write_open && sent < request.size();
    pollfd events{fd, static_cast<short>(POLLIN | (sending ? POLLOUT : 0)), 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    FUZZ_CHECK(left.count() > 0);  // the server hung
    if (::poll(&events, 1, static_cast<int>(left.count())) <= 0) continue;
    if (events.revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) break;  // closed (or reset after an error response)
      received.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (events.revents & POLLOUT) {
      const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n < 0) {
        write_open = false;  // the server closed its side first
        ::shutdown(fd, SHUT_WR);
      } else {
        sent += static_cast<std::size_t>(n);
      }
    }
  }
  // Closed with a reset: no TIME_WAIT per input to run out of ports with.
  const linger reset{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  ::close(fd);
  return received;
}

// For each request that the input holds, as Beast reads them, whether it is
// a HEAD request (whose response has a length but no body).
std::vector<bool> head_requests(std::string_view input) {
  std::vector<bool> heads;
  while (!input.empty()) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(kMaxRequestBytes);  // the server's limits
    parser.body_limit(kMaxRequestBytes);
    boost::beast::error_code ec;
    std::size_t used = 0;
    while (!parser.is_done() && !ec) {
      if (used == input.size()) {
        // Cut short: the half-close is the end of what the server reads.
        parser.put_eof(ec);
        break;
      }
      used += parser.put(boost::asio::buffer(input.data() + used, input.size() - used), ec);
    }
    if (ec) break;  // the server answers this one with an error, body included
    heads.push_back(parser.get().method() == http::verb::head);
    input.remove_prefix(used);
  }
  return heads;
}

// Every response in text is complete HTTP/1.1 with a documented status (401
// with its challenge from the server with authentication only); returns how
// many there are.
std::size_t check_responses(Server which, std::string_view text,
                            const std::vector<bool>& heads = {}) {
  // 503: the credential checks' queue was full (with authentication only).
  static const std::set<unsigned> kStatuses = {200, 400, 401, 404, 405, 413, 431, 503};
  std::size_t count = 0;
  while (!text.empty()) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(1 << 20);
    parser.skip(count < heads.size() && heads[count]);
    boost::beast::error_code ec;
    std::size_t used = 0;
    while (!parser.is_done()) {
      const std::size_t n =
          parser.put(boost::asio::buffer(text.data() + used, text.size() - used), ec);
      used += n;
      if (ec == http::error::need_more) {
        // A response cut short can only be the last one, when the server
        // reset the connection after an error: nothing more to read.
        FUZZ_CHECK(used == text.size());
        return count;
      }
      FUZZ_CHECK(!ec);
    }
    const auto& response = parser.get();
    FUZZ_CHECK(response.version() == 11 || response.version() == 10);
    FUZZ_CHECK(kStatuses.count(response.result_int()) == 1);
    if (response.result_int() == 401 || response.result_int() == 503) {
      FUZZ_CHECK(which == Server::with_auth);
    }
    if (response.result_int() == 401) {
      FUZZ_CHECK(response[http::field::www_authenticate].starts_with("Basic"));
    }
    if (response.result_int() == 200 && !response.body().empty() &&
        response[http::field::content_encoding].empty()) {
      FUZZ_CHECK(response.body() == kExposition);
    }
    text.remove_prefix(used);
    ++count;
  }
  return count;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static std::size_t runs = 0;
  const std::string_view request(reinterpret_cast<const char*>(data), size);
  const std::vector<bool> heads = head_requests(request);
  check_responses(Server::open, exchange(Server::open, request), heads);
  const std::string answer = exchange(Server::with_auth, request);
  check_responses(Server::with_auth, answer, heads);
  // Without the user's credentials, nothing but a refusal or an error.
  if (request.find(kCredentials) == std::string_view::npos) {
    FUZZ_CHECK(answer.find("\r\n\r\n" + std::string(kExposition)) == std::string::npos);
  }
  // Every 16th input (and the first) a well-behaved scrape still answers.
  if (runs++ % 16 == 0) {
    const std::string scrape = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
    const std::string open = exchange(Server::open, scrape + "\r\n", Ending::keep_open);
    FUZZ_CHECK(open.starts_with("HTTP/1.1 200 "));
    FUZZ_CHECK(check_responses(Server::open, open) == 1);
    const std::string authorized = exchange(
        Server::with_auth, scrape + std::string(kAuthorization) + "\r\n\r\n", Ending::keep_open);
    FUZZ_CHECK(authorized.starts_with("HTTP/1.1 200 "));
    FUZZ_CHECK(check_responses(Server::with_auth, authorized) == 1);
  }
  return 0;
}
