// prometheus_output_test.cpp — the built-in output's face: a node's run
// directory rendered (the launcher's figures published first) and served,
// rendering from any process, check's probe, and the delivery totals read
// back from a run's files.
#include <catch2/catch.hpp>

#include <boost/asio.hpp>
#include <filesystem>
#include <string>

#include <tokenspeed/metrics/startup_error.hpp>

#include "prometheus/prometheus_output.hpp"
#include "temp_dir.hpp"

using namespace tokenspeed::metrics;
using tokenspeed::metrics::test::TempDir;

namespace {

const MetricDefinition kRequests{"test:requests",   MetricKind::counter, "", "", {"model"}, {},
                                 GaugeMode::livemax};

MetricsSettings settings_in(const TempDir& base) {
  MetricsSettings settings;
  settings.multiproc_dir = base.path();
  settings.host = "127.0.0.1";
  settings.port = 0;
  return settings;
}

// One producer's file in dir: test:requests{model="llama"} = value.
void record_requests(const std::filesystem::path& dir, double value) {
  MultiprocessMetricStore store({dir.string()});
  *store.allocate_series(kRequests, std::vector<std::string>{"llama"}) = value;
}

// The body of GET /metrics over plain HTTP/1.0 (the server closes after it).
std::string http_get(const std::string& url) {
  const auto port_begin = url.rfind(':') + 1;
  const auto port = url.substr(port_begin, url.find('/', port_begin) - port_begin);
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  socket.connect(
      {boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(std::stoi(port))});
  const std::string request = "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n";
  boost::asio::write(socket, boost::asio::buffer(request));
  std::string response;
  boost::system::error_code ec;
  boost::asio::read(socket, boost::asio::dynamic_buffer(response), ec);
  return response;
}

}  // namespace

TEST_CASE("a node renders its run directory after the launcher's figures, then removes it") {
  TempDir base;
  int published = 0;
  PrometheusNode node(settings_in(base), [&] { ++published; });
  REQUIRE(std::filesystem::is_directory(node.run_dir()));
  CHECK(node.run_dir().parent_path() == base.path());
  CHECK(node.url().empty());  // not serving

  record_requests(node.run_dir(), 3);
  const std::string text = node.render();
  CHECK(published == 1);
  CHECK(text.find("test:requests_total{model=\"llama\"} 3") != std::string::npos);
  CHECK(render_directory(node.run_dir()) == text);

  node.remove();
  CHECK_FALSE(std::filesystem::exists(node.run_dir()));
}

TEST_CASE("a serving node answers /metrics with the run's families and its endpoint's figures") {
  TempDir base;
  PrometheusNode node(settings_in(base), nullptr);
  record_requests(node.run_dir(), 7);
  node.serve(settings_in(base));
  REQUIRE(node.url().rfind("http://127.0.0.1:", 0) == 0);

  const std::string response = http_get(node.url());
  CHECK(response.rfind("HTTP/1.", 0) == 0);
  CHECK(response.find(" 200 ") != std::string::npos);
  CHECK(response.find("test:requests_total{model=\"llama\"} 7") != std::string::npos);
  CHECK(response.find("tokenspeed_metrics_endpoint_connections_accepted_total") !=
        std::string::npos);
  node.stop(std::chrono::milliseconds(500));
}

TEST_CASE("render_directory is empty for no directory; render_store renders memory") {
  CHECK(render_directory("").empty());
  CHECK(render_directory("/nonexistent/tokenspeed-metrics").empty());

  InProcessMetricStore store;
  *store.allocate_series(kRequests, std::vector<std::string>{"mistral"}) = 2;
  CHECK(render_store(store).find("test:requests_total{model=\"mistral\"} 2") != std::string::npos);
}

TEST_CASE("delivery totals sum each output's delivered and every reason's dropped events") {
  TempDir dir;
  const auto& self = reporter_self_metric_definitions();
  for (double share : {1.0, 2.0}) {  // two processes' files
    MultiprocessMetricStore store({dir.path()});
    *store.allocate_series(self[kSelfEventsDelivered], std::vector<std::string>{"otlp"}) =
        10 * share;
    *store.allocate_series(self[kSelfEventsDropped],
                           std::vector<std::string>{"otlp", "ring_full"}) = share;
    *store.allocate_series(self[kSelfEventsDropped],
                           std::vector<std::string>{"otlp", "sink_disabled"}) = 1;
    *store.allocate_series(self[kSelfEventsDelivered], std::vector<std::string>{"jsonl"}) = 4;
    store.close();  // a closed writer's counters stay
  }
  const auto totals = delivery_totals(dir.path());
  REQUIRE(totals.size() == 2);
  CHECK(totals.at("otlp").delivered == 30);
  CHECK(totals.at("otlp").dropped == 5);
  CHECK(totals.at("jsonl").delivered == 8);
  CHECK(totals.at("jsonl").dropped == 0);
}

TEST_CASE("check_prometheus binds for a moment and creates nothing; a port in use is refused") {
  TempDir base;
  MetricsSettings settings = settings_in(base);
  CHECK(check_prometheus(settings).empty());  // no web configuration
  CHECK(std::filesystem::is_empty(base.path()));

  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor taken(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  settings.port = taken.local_endpoint().port();
  CHECK_THROWS_AS(check_prometheus(settings), StartupError);
}
