// http_exporter_delivery_test.cpp — HttpExporter's delivery through a
// scripted HttpTransport, no server: what the retry policy retries, what it
// refuses (counted, logged with the receiver's answer), Retry-After, a
// transport that throws or cannot connect, and close's verdict. The loop's
// own scheduling is delivery_loop_test's; the curl transport is
// http_client_test's.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <tokenspeed/kit/http_exporter.hpp>

#include "isolation/channel_test_events.hpp"

namespace kit = tokenspeed::metrics::kit;
namespace plugin = tokenspeed::metrics::plugin;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// Generous: the machine may be loaded; a passing test never waits this long.
constexpr auto kPatience = std::chrono::seconds(20);

// One answer of the script: a response, or a throw when thrown is set.
struct Answer {
  kit::HttpResponse response;
  std::string thrown;
};

Answer status(long code, std::string body = {}) {
  Answer answer;
  answer.response.status = code;
  answer.response.body = std::move(body);
  return answer;
}

Answer no_connection(std::string error) {
  Answer answer;
  answer.response.error = std::move(error);
  return answer;
}

Answer throws(std::string what) {
  Answer answer;
  answer.thrown = std::move(what);
  return answer;
}

struct Call {
  std::string body;
  std::vector<std::string> headers;
  Clock::time_point at;
};

// Answers each post with the next answer of its script, then with
// after_script; records every call.
class ScriptedTransport : public kit::HttpTransport {
 public:
  explicit ScriptedTransport(std::deque<Answer> script, Answer after_script = status(200))
      : script_(std::move(script)), after_script_(std::move(after_script)) {}

  kit::HttpResponse post(std::string_view body, const std::vector<std::string>& content_headers,
                         Clock::time_point, const std::atomic<bool>*) override {
    std::unique_lock lock(mutex_);
    calls_.push_back({std::string(body), content_headers, Clock::now()});
    changed_.notify_all();
    Answer answer = after_script_;
    if (!script_.empty()) {
      answer = std::move(script_.front());
      script_.pop_front();
    }
    if (!answer.thrown.empty()) throw std::runtime_error(answer.thrown);
    return answer.response;
  }

  // Waits (generously) until count calls came; false when they did not.
  bool wait_for_calls(std::size_t count) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kPatience, [&] { return calls_.size() >= count; });
  }

  std::vector<Call> calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Answer> script_;
  const Answer after_script_;
  std::vector<Call> calls_;
};

// The host's side: the log lines and the last figures, from any thread.
class Recorder {
 public:
  Recorder() {
    tsm_host_api api{};
    api.struct_size = sizeof api;
    api.api_version = TSM_METRIC_REPORTER_API_VERSION;
    api.host_data = this;
    api.log = [](void* self, uint32_t, const char* message) {
      static_cast<Recorder*>(self)->add_line(message);
    };
    tsm_sink sink{};
    sink.struct_size = sizeof sink;
    sink.host_sink_data = this;
    sink.report_figures = [](void* self, const tsm_delivery_figures* figures) {
      static_cast<Recorder*>(self)->set_figures(*figures);
    };
    host_ = plugin::Host(api).for_sink(sink);
  }

  const plugin::Host& host() const { return host_; }

  tsm_delivery_figures figures() const {
    std::lock_guard lock(mutex_);
    return figures_;
  }

  // The first line holding text, or "" when none does.
  std::string line_with(const std::string& text) const {
    std::lock_guard lock(mutex_);
    for (const std::string& line : lines_)
      if (line.find(text) != std::string::npos) return line;
    return {};
  }

  // Waits (generously) until the figures satisfy done.
  template <class Done>
  bool wait_for_figures(Done done) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kPatience, [&] { return done(figures_); });
  }

 private:
  void add_line(const char* message) {
    std::lock_guard lock(mutex_);
    lines_.emplace_back(message);
  }
  void set_figures(const tsm_delivery_figures& figures) {
    std::lock_guard lock(mutex_);
    figures_ = figures;
    changed_.notify_all();
  }

  plugin::Host host_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> lines_;
  tsm_delivery_figures figures_{};
};

constexpr kit::HttpExporterWords kWords{"data points", "export rejected", "export failed",
                                        "export"};
constexpr const char* kUrl = "http://receiver.test/v1/metrics";

// An exporter of delta data: a collect with no new event sends nothing, and a
// retried request is sent again as it was.
class TestExporter : public kit::HttpExporter<TestExporter> {
 public:
  TestExporter(kit::HttpExporterOptions options, const plugin::Host& host,
               kit::HttpRetryPolicy policy)
      : HttpExporter(std::move(options), kWords, host), policy_(policy) {
    start();
  }
  ~TestExporter() { stop(); }

  void collect(std::vector<kit::ExportRequest>& out, bool /*final*/) {
    const kit::Snapshot snapshot = aggregator().collect(kit::unix_time_ns());
    if (snapshot.points.empty()) return;
    kit::ExportRequest request;
    request.body = "collect " + std::to_string(++collects_);
    request.items = snapshot.points.size();
    out.push_back(std::move(request));
  }
  const std::vector<std::string>& content_headers() const {
    static const std::vector<std::string> headers{"Content-Type: text/plain"};
    return headers;
  }
  kit::HttpRetryPolicy retry_policy() const { return policy_; }
  void delivered(const kit::HttpResponse&) { ++delivered_; }

  std::atomic<int> delivered_{0};

 private:
  const kit::HttpRetryPolicy policy_;
  int collects_ = 0;  // delivery thread only
};

const tsm_metric_info kHistogram = tokenspeed::metrics::test::channel_histogram_info();
const char* const kLabelValues[] = {"m", "0"};

// One event of one series: one data point in the next collect.
tsm_metric_event observation() {
  return tokenspeed::metrics::test::channel_event(kHistogram, kLabelValues, 0.5);
}

// Options with a short interval and a backoff of about backoff_ms.
kit::HttpExporterOptions options(std::shared_ptr<kit::HttpTransport> transport,
                                 long backoff_ms = 1) {
  kit::HttpExporterOptions out;
  out.http.url = kUrl;
  out.transport = std::move(transport);
  out.aggregation.temporality = kit::Temporality::kDelta;
  out.delivery.interval = milliseconds(20);
  out.delivery.recollect_on_retry = false;
  out.delivery.backoff.initial = milliseconds(backoff_ms);
  out.delivery.backoff.max = milliseconds(backoff_ms);
  out.log_interval = milliseconds(0);  // every line, none held back
  return out;
}

kit::HttpRetryPolicy every_5xx() {
  kit::HttpRetryPolicy policy;
  policy.retry_5xx = true;
  return policy;
}

}  // namespace

TEST_CASE("exporter: a 5xx the policy retries, then a 200: retried, delivered once") {
  auto transport = std::make_shared<ScriptedTransport>(
      std::deque<Answer>{status(500, "internal error"), status(200)});
  Recorder recorder;
  TestExporter exporter(options(transport), recorder.host(), every_5xx());
  exporter.emit(observation());
  REQUIRE(transport->wait_for_calls(2));
  REQUIRE(recorder.wait_for_figures([](const tsm_delivery_figures& f) { return f.sent == 1; }));
  exporter.close(std::chrono::seconds(5));

  const std::vector<Call> calls = transport->calls();
  REQUIRE(calls.size() == 2);  // nothing new to send at close
  CHECK(calls[0].body == "collect 1");
  CHECK(calls[1].body == calls[0].body);
  CHECK(calls[0].headers == std::vector<std::string>{"Content-Type: text/plain"});
  CHECK(exporter.delivered_ == 1);
  const tsm_delivery_figures figures = recorder.figures();
  CHECK(figures.retries == 1);
  CHECK(figures.lost == 0);
  CHECK(figures.pending == 0);
  CHECK(recorder.line_with("export to " + std::string(kUrl) +
                           " failed: HTTP 500: internal error; retrying in ") != "");
}

TEST_CASE("exporter: a 4xx is refused once, counted lost, logged with the receiver's answer") {
  auto transport =
      std::make_shared<ScriptedTransport>(std::deque<Answer>{status(400, "sample out of order\n")});
  Recorder recorder;
  TestExporter exporter(options(transport), recorder.host(), every_5xx());
  exporter.emit(observation());
  REQUIRE(recorder.wait_for_figures([](const tsm_delivery_figures& f) { return f.lost == 1; }));
  CHECK_NOTHROW(exporter.close(std::chrono::seconds(5)));  // nothing waits: a refusal is final

  CHECK(transport->calls().size() == 1);  // never retried, not even by close
  CHECK(exporter.delivered_ == 0);
  const tsm_delivery_figures figures = recorder.figures();
  CHECK(figures.sent == 0);
  CHECK(figures.retries == 0);
  CHECK(recorder.line_with("dropped a request of 1 data points for " + std::string(kUrl) +
                           ": HTTP 400: sample out of order (1 data points dropped in total)") !=
        "");
  CHECK(recorder.line_with("at close: 1 of 1 events did not reach " + std::string(kUrl)) != "");
}

TEST_CASE("exporter: Retry-After sets the delay before the retry, not the backoff") {
  Answer too_many = status(429, "slow down");
  too_many.response.retry_after = "1";
  auto transport = std::make_shared<ScriptedTransport>(std::deque<Answer>{too_many, status(200)});
  Recorder recorder;
  TestExporter exporter(options(transport), recorder.host(), kit::HttpRetryPolicy{});
  exporter.emit(observation());
  REQUIRE(transport->wait_for_calls(2));
  exporter.close(std::chrono::seconds(5));

  // The backoff alone would have waited 1 ms.
  CHECK(recorder.line_with("failed: HTTP 429: slow down; retrying in 1000 ms") != "");
  const std::vector<Call> calls = transport->calls();
  REQUIRE(calls.size() == 2);
  CHECK(calls[1].at - calls[0].at >= milliseconds(950));
  CHECK(recorder.figures().sent == 1);
}

TEST_CASE("exporter: a transport that throws or cannot connect is retried, not refused") {
  auto transport = std::make_shared<ScriptedTransport>(std::deque<Answer>{
      throws("socket closed"), no_connection("Connection refused"), status(200)});
  Recorder recorder;
  TestExporter exporter(options(transport), recorder.host(), kit::HttpRetryPolicy{});
  exporter.emit(observation());
  REQUIRE(transport->wait_for_calls(3));
  REQUIRE(recorder.wait_for_figures([](const tsm_delivery_figures& f) { return f.sent == 1; }));
  exporter.close(std::chrono::seconds(5));

  CHECK(exporter.delivered_ == 1);
  const tsm_delivery_figures figures = recorder.figures();
  CHECK(figures.retries == 2);
  CHECK(figures.lost == 0);
  CHECK(recorder.line_with("failed: transport failed: socket closed; retrying in") != "");
  CHECK(recorder.line_with("failed: Connection refused; retrying in") != "");
}

TEST_CASE("exporter: close delivers a request waiting for its retry, and says so by not throwing") {
  // A minute's backoff: only close's final attempt can deliver it.
  auto transport = std::make_shared<ScriptedTransport>(std::deque<Answer>{status(503)});
  Recorder recorder;
  TestExporter exporter(options(transport, 60000), recorder.host(), kit::HttpRetryPolicy{});
  exporter.emit(observation());
  REQUIRE(recorder.wait_for_figures([](const tsm_delivery_figures& f) { return f.retries == 1; }));
  CHECK_NOTHROW(exporter.close(std::chrono::seconds(5)));

  CHECK(transport->calls().size() == 2);
  const tsm_delivery_figures figures = recorder.figures();
  CHECK(figures.sent == 1);
  CHECK(figures.lost == 0);
  CHECK(recorder.line_with("at close:") == "");  // all events reached the receiver
}

TEST_CASE("exporter: close with a request the receiver keeps refusing throws, counting it lost") {
  auto transport = std::make_shared<ScriptedTransport>(std::deque<Answer>{}, status(503, "busy"));
  Recorder recorder;
  TestExporter exporter(options(transport, 60000), recorder.host(), kit::HttpRetryPolicy{});
  exporter.emit(observation());
  REQUIRE(recorder.wait_for_figures([](const tsm_delivery_figures& f) { return f.retries == 1; }));
  CHECK_THROWS_WITH(exporter.close(std::chrono::milliseconds(500)),
                    "data not delivered to " + std::string(kUrl) +
                        " within close's budget (1 data points dropped in total; last failure: "
                        "HTTP 503: busy)");

  CHECK(transport->calls().size() >= 2);  // close made its final attempt
  const tsm_delivery_figures figures = recorder.figures();
  CHECK(figures.sent == 0);
  CHECK(figures.lost == 1);
  CHECK(figures.pending == 0);
  CHECK(recorder.line_with("close's budget ended before delivery") != "");
}
