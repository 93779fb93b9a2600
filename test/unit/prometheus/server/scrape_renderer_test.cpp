// scrape_renderer_test.cpp — unit tests of host/prometheus/server/scrape_renderer:
// one render answers every scrape that waited for it, each format and
// encoding is rendered only when asked for, a failed render answers every
// waiting scrape, and stopping drops what still waits; without a socket.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "eventually.hpp"
#include "prometheus/scrape/prometheus_exposition.hpp"
#include "prometheus/scrape/protobuf_exposition.hpp"
#include "prometheus/server/scrape_renderer.hpp"

using namespace tokenspeed::metrics;
using test::eventually;

namespace {

// A gate the render handler waits at until the test opens it.
class Gate {
 public:
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    ++arrived_;
    cv_.wait(lock, [this] { return open_; });
  }
  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  int arrived() {
    std::lock_guard<std::mutex> lock(mutex_);
    return arrived_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
  int arrived_ = 0;
};

// The answers the scrapes received, in any order.
struct Answers {
  std::mutex mutex;
  std::vector<std::shared_ptr<const RenderedScrape>> received;
  ScrapeRenderer::Answer answer() {
    return [this](std::shared_ptr<const RenderedScrape> rendered) {
      std::lock_guard<std::mutex> lock(mutex);
      received.push_back(std::move(rendered));
    };
  }
  std::size_t count() {
    std::lock_guard<std::mutex> lock(mutex);
    return received.size();
  }
};

std::string gunzip(const std::string& data) {
  z_stream stream{};
  REQUIRE(inflateInit2(&stream, 16 + MAX_WBITS) == Z_OK);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  std::string out(1 << 16, '\0');
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int result = inflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  inflateEnd(&stream);
  REQUIRE(result == Z_STREAM_END);
  return out;
}

const MetricDefinition kRequests{"requests", MetricKind::counter, "Requests served.", "", {}, {}};

std::vector<MergedFamily> families() {
  MergedFamily family;
  family.metric = &kRequests;
  family.series.push_back(MergedSeries{{}, {42.0}, nullptr});
  return {family};
}

}  // namespace

TEST_CASE("the scrapes that waited during a render share the next one") {
  Gate gate;
  std::atomic<int> renders{0};
  ScrapeRenderer renderer(
      [&] {
        if (++renders == 1) gate.wait();
        return "render " + std::to_string(renders.load()) + "\n";
      },
      {}, 1);
  renderer.start(1);
  Answers answers;
  renderer.request({}, answers.answer());  // held at the gate
  REQUIRE(eventually([&] { return gate.arrived() == 1; }));
  for (int i = 0; i < 20; ++i) renderer.request({}, answers.answer());
  gate.open();
  REQUIRE(eventually([&] { return answers.count() == 21; }));
  CHECK(renders == 2);
  std::lock_guard<std::mutex> lock(answers.mutex);
  for (std::size_t i = 1; i < answers.received.size(); ++i)
    CHECK(answers.received[i] == answers.received.back());
}

TEST_CASE("gzip and protobuf are rendered only for a batch that asks for them") {
  std::atomic<int> renders{0};
  ScrapeRenderer renderer(
      {},
      [&] {
        ++renders;
        return families();
      },
      6);
  REQUIRE(renderer.has_families());
  renderer.start(1);
  const auto one = [&](ScrapeWanted wanted) {
    Answers answers;
    renderer.request(wanted, answers.answer());
    REQUIRE(eventually([&] { return answers.count() == 1; }));
    return *answers.received.front();
  };
  const RenderedScrape text = one({false, false});
  CHECK(text.body == render_exposition(families()));
  CHECK(text.gzipped.empty());
  CHECK(text.protobuf.empty());
  const RenderedScrape gzipped = one({true, false});
  CHECK(gunzip(gzipped.gzipped) == gzipped.body);
  CHECK(gzipped.protobuf.empty());
  const RenderedScrape protobuf = one({false, true});
  CHECK(protobuf.protobuf == render_protobuf_exposition(families()));
  CHECK(protobuf.body.empty());
  CHECK(protobuf.protobuf_gzipped.empty());
  const RenderedScrape both = one({true, true});
  CHECK(gunzip(both.protobuf_gzipped) == both.protobuf);
  CHECK(both.gzipped.empty());
  CHECK(renders == 4);
}

TEST_CASE("a renderer made with a handler answers protobuf scrapes with the text") {
  ScrapeRenderer renderer([] { return std::string("text\n"); }, {}, 1);
  REQUIRE_FALSE(renderer.has_families());
  renderer.start(1);
  Answers answers;
  renderer.request({false, true}, answers.answer());
  REQUIRE(eventually([&] { return answers.count() == 1; }));
  CHECK(answers.received.front()->body == "text\n");
  CHECK(answers.received.front()->protobuf.empty());
}

TEST_CASE("a render that throws answers every waiting scrape as failed, and rendering goes on") {
  std::atomic<int> renders{0};
  ScrapeRenderer renderer(
      [&]() -> std::string {
        if (++renders == 1) throw std::runtime_error("files unreadable");
        return "ok\n";
      },
      {}, 1);
  renderer.start(2);
  Answers first;
  renderer.request({true, false}, first.answer());
  REQUIRE(eventually([&] { return first.count() == 1; }));
  CHECK(first.received.front()->failed);
  CHECK(first.received.front()->body == "files unreadable");
  Answers second;
  renderer.request({}, second.answer());
  REQUIRE(eventually([&] { return second.count() == 1; }));
  CHECK_FALSE(second.received.front()->failed);
  CHECK(second.received.front()->body == "ok\n");
}

TEST_CASE("stopping ends the threads after the render in progress; waiting scrapes are dropped") {
  Gate gate;
  ScrapeRenderer renderer(
      [&] {
        gate.wait();
        return std::string("late\n");
      },
      {}, 1);
  renderer.start(1);
  Answers in_progress;
  renderer.request({}, in_progress.answer());
  REQUIRE(eventually([&] { return gate.arrived() == 1; }));
  auto held = std::make_shared<int>(0);  // what a waiting scrape's callback holds
  std::weak_ptr<int> watch = held;
  renderer.request({}, [held = std::move(held)](std::shared_ptr<const RenderedScrape>) {
    FAIL("a scrape waiting at stop was answered");
  });
  renderer.request_stop();
  CHECK_FALSE(renderer.wait_stopped(std::chrono::steady_clock::now() +
                                    std::chrono::milliseconds(20)));  // the render still runs
  gate.open();
  REQUIRE(renderer.wait_stopped(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
  CHECK(in_progress.count() == 1);  // the render in progress was answered
  CHECK_FALSE(watch.expired());
  renderer.drop_waiting();
  CHECK(watch.expired());
}
