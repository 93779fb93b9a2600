// web_config_prefixes_test.cpp — the property behind "security never weakens
// at reload" (docs/reliability.md), over exporter-toolkit's own test data: for
// each good web configuration with TLS or basic-auth users, every prefix of
// it (each byte boundary of a short file, each line boundary of a long one:
// what a writer that pauses leaves) is put in place of the file of a live
// endpoint, one after the other, each held until the endpoint's watch has
// judged it, while a scraper probes throughout without TLS, without a client
// certificate and without valid credentials. No such probe is ever answered
// 200; a prefix that is refused leaves the configuration in force as it was;
// the whole file written again is applied. The unit-web-config-prefixes test
// (an executable of its own: it runs for a minute or so).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "prometheus/server/security_strength.hpp"
#include "prometheus/server/web_config.hpp"
#include "eventually.hpp"
#include "prometheus/server/web_security.hpp"
#include "prometheus/server/prometheus_endpoint.hpp"
#include "temp_dir.hpp"

using namespace tokenspeed::metrics;
using test::eventually;
namespace fs = std::filesystem;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

const fs::path kData = fs::path(TSM_SOURCE_ROOT) / "test" / "data" / "exporter-toolkit-web";

// The good files of the data with TLS or users (the verdict table of
// test/cli/test_web_config.py): every one exporter-toolkit starts with that
// protects the endpoint at all.
const char* const kProtected[] = {
    "tls_config_noAuth.requireandverifyclientcert.good.yml",
    "tls_config_noAuth.requireanyclientcert.good.yml",
    "tls_config_noAuth.requireanyclientcertkeyinline.good.yml",
    "web_config_auth_clientCAs_missing.bad.yml",
    "web_config_auth_client_san.good.yaml",
    "web_config_noAuth.good.yml",
    "web_config_noAuth_allCiphers.good.yml",
    "web_config_noAuth_allCurves.good.yml",
    "web_config_noAuth_noHTTP2.good.yml",
    "web_config_noAuth_someCiphers.good.yml",
    "web_config_noAuth_someCiphers_noOrder.good.yml",
    "web_config_noAuth_someCurves.good.yml",
    "web_config_noAuth_tlsInline.good.yml",
    "web_config_users.good.yml",
    "web_config_users_noTLS.good.yml",
    "web-config.yml",
    "docs-web-config.yml",
};

// Files up to this size are cut at every byte, longer ones at every line:
// about 1,500 prefixes in all, well under two minutes on a busy machine.
// Under a sanitizer, where each reload and bcrypt check costs ten times as
// much, every file is cut at its lines only: the races the sanitizer looks
// for are between reloads and sessions, which each line's reload still
// meets, and the byte cuts run in the main build.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr std::size_t kByteCutLimit = 0;
constexpr std::size_t kLeastPrefixes = 100;
#else
constexpr std::size_t kByteCutLimit = 300;
constexpr std::size_t kLeastPrefixes = 1000;
#endif

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The proper prefixes of text, shortest first: "" and each byte (or line)
// boundary before its end.
std::vector<std::string> prefixes_of(const std::string& text) {
  std::vector<std::string> prefixes;
  for (std::size_t end = 0; end < text.size(); ++end) {
    if (text.size() <= kByteCutLimit || end == 0 || text[end - 1] == '\n')
      prefixes.push_back(text.substr(0, end));
  }
  return prefixes;
}

// Replaces the file whole (write, then rename), so that the watch sees each
// prefix as the file's contents, never a mixture.
void put(const fs::path& file, const std::string& text) {
  const fs::path next = file.string() + ".next";
  std::ofstream(next, std::ios::binary | std::ios::trunc) << text;
  fs::rename(next, file);
}

enum class Probe { plain, plain_wrong_user, tls, tls_wrong_user };

const char* probe_name(Probe probe) {
  switch (probe) {
    case Probe::plain:
      return "plain HTTP, no credentials";
    case Probe::plain_wrong_user:
      return "plain HTTP, unknown user";
    case Probe::tls:
      return "TLS without a client certificate, no credentials";
    case Probe::tls_wrong_user:
      return "TLS without a client certificate, unknown user";
  }
  return "";
}

// "nobody:wrong", base64.
const std::string kWrongCredentials = "bm9ib2R5Ondyb25n";

template <class Stream>
unsigned get_status(Stream& stream, bool credentials) {
  http::request<http::empty_body> request{http::verb::get, "/metrics", 11};
  request.set(http::field::host, "127.0.0.1");
  if (credentials) request.set(http::field::authorization, "Basic " + kWrongCredentials);
  beast::error_code error;
  http::write(stream, request, error);
  if (error) return 0;
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(stream, buffer, response, error);
  return error ? 0 : response.result_int();
}

// The status a fresh connection's GET /metrics is answered with; 0 when the
// connection, the handshake or the exchange failed (refused).
unsigned probe(unsigned short port, Probe kind) {
  asio::io_context io;
  const tcp::endpoint to(asio::ip::make_address("127.0.0.1"), port);
  const bool credentials = kind == Probe::plain_wrong_user || kind == Probe::tls_wrong_user;
  beast::error_code error;
  if (kind == Probe::plain || kind == Probe::plain_wrong_user) {
    beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::seconds(30));  // hang guard only
    stream.connect(to, error);
    return error ? 0 : get_status(stream, credentials);
  }
  asio::ssl::context context(asio::ssl::context::tls_client);
  context.set_verify_mode(asio::ssl::verify_none);  // the server's checks are under test
  beast::ssl_stream<beast::tcp_stream> stream(io, context);
  beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(30));
  beast::get_lowest_layer(stream).connect(to, error);
  if (error) return 0;
  stream.handshake(asio::ssl::stream_base::client, error);
  return error ? 0 : get_status(stream, credentials);
}

// The probes that the full file must never let through.
std::vector<Probe> forbidden_probes(const SecurityStrength& strength) {
  std::vector<Probe> probes{Probe::plain, Probe::plain_wrong_user};
  if (strength.tls &&
      (strength.basic_auth || requires_client_certificates(strength.client_auth_type)))
    probes.push_back(Probe::tls);
  if (strength.tls && strength.basic_auth) probes.push_back(Probe::tls_wrong_user);
  return probes;
}

// Probes the endpoint until stopped, recording every forbidden probe that
// was answered 200.
class Scraper {
 public:
  Scraper(unsigned short port, std::vector<Probe> probes)
      : port_(port), probes_(std::move(probes)), thread_([this] { run(); }) {}
  ~Scraper() { stop(); }
  Scraper(const Scraper&) = delete;
  Scraper& operator=(const Scraper&) = delete;

  void stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::uint64_t probes() const { return probes_made_; }
  std::uint64_t answered() const { return answered_; }
  std::vector<std::string> served() const {
    std::lock_guard lock(mutex_);
    return served_;
  }

 private:
  void run() {
    while (!stopping_) {
      for (const Probe kind : probes_) {
        const unsigned status = probe(port_, kind);
        ++probes_made_;
        if (status != 0) ++answered_;
        if (status == 200) {
          std::lock_guard lock(mutex_);
          served_.emplace_back(probe_name(kind));
        }
      }
    }
  }

  const unsigned short port_;
  const std::vector<Probe> probes_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> probes_made_{0};
  std::atomic<std::uint64_t> answered_{0};
  mutable std::mutex mutex_;
  std::vector<std::string> served_;
  std::thread thread_;
};

std::uint64_t judged(const EndpointFigures& figures) {
  return figures.web_config_reloads + figures.web_config_reload_failures +
         figures.web_config_reloads_refused_weaker;
}

}  // namespace

TEST_CASE(
    "every prefix of a protected web configuration: never served without TLS or credentials") {
  const std::string kBody = "# TYPE up gauge\nup 1\n";
  std::size_t total_prefixes = 0;
  std::uint64_t refused_weaker = 0;
  for (const char* name : kProtected) {
    INFO(name);
    const test::TempDir dir;
    // The certificates and keys the file names, beside it as in the data.
    for (const auto& entry : fs::directory_iterator(kData))
      if (entry.path().extension() != ".yml" && entry.path().extension() != ".yaml")
        fs::copy_file(entry.path(), dir.path() / entry.path().filename());
    const std::string text = read_file(kData / name);
    const fs::path file = dir.path() / "web.yml";
    put(file, text);
    const SecurityStrength strength = load_endpoint_security(file.string())->strength;
    REQUIRE((strength.tls || strength.basic_auth));

    PrometheusEndpointOptions options;
    options.port = 0;
    options.web_config_file = file.string();
    options.web_config_check_interval = std::chrono::milliseconds(10);
    PrometheusEndpoint endpoint(options, [&] { return kBody; });
    const std::string summary = endpoint.security_summary();
    Scraper scraper(endpoint.port(), forbidden_probes(strength));
    const auto prefixes = prefixes_of(text);
    total_prefixes += prefixes.size();
    for (const std::string& prefix : prefixes) {
      const EndpointFigures before = endpoint.figures();
      const std::string in_force = endpoint.security_summary();
      put(file, prefix);
      INFO("prefix of " << prefix.size() << " bytes:\n" << prefix);
      REQUIRE(eventually([&] { return judged(endpoint.figures()) > judged(before); }));
      if (endpoint.figures().web_config_reloads == before.web_config_reloads)
        CHECK(endpoint.security_summary() == in_force);  // refused: the last good stays
    }
    // The whole file again: applied, the configuration of the start.
    const EndpointFigures before = endpoint.figures();
    put(file, text);
    REQUIRE(eventually([&] { return judged(endpoint.figures()) > judged(before); }));
    CHECK(endpoint.figures().web_config_reloads == before.web_config_reloads + 1);
    CHECK(endpoint.security_summary() == summary);
    REQUIRE(eventually([&] { return scraper.answered() > 0; }));
    scraper.stop();
    CHECK(scraper.served().empty());
    for (const std::string& served : scraper.served()) FAIL_CHECK("answered 200: " << served);
    refused_weaker += endpoint.figures().web_config_reloads_refused_weaker;
    endpoint.stop(std::chrono::seconds(30));
  }
  CHECK(total_prefixes > kLeastPrefixes);
  CHECK(refused_weaker > 0);  // valid prefixes that would have lowered security were met
}
