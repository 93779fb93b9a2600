// credential_check_queue_test.cpp — unit tests of
// host/prometheus/credential_check_queue: checks run one at a time on the
// queue's thread, the bound refuses at once, a check no longer wanted is
// skipped without running, stop drops what waits.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "eventually.hpp"
#include "prometheus/server/credential_check_queue.hpp"

using namespace tokenspeed::metrics;
using test::eventually;

namespace {

// A gate the test opens: a check waits at it while running.
struct Gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  bool reached = false;
  void pass() {
    std::unique_lock lock(mutex);
    reached = true;
    cv.notify_all();
    cv.wait(lock, [this] { return open; });
  }
  void wait_reached() {
    std::unique_lock lock(mutex);
    cv.wait(lock, [this] { return reached; });
  }
  void release() {
    std::lock_guard lock(mutex);
    open = true;
    cv.notify_all();
  }
};

struct Record {
  std::atomic<int> ran{0};
  std::atomic<int> destroyed{0};
  std::atomic<std::thread::id> thread{};
};

class TestCheck final : public CredentialCheck {
 public:
  TestCheck(Record& record, bool wanted, Gate* gate = nullptr)
      : record_(record), wanted_(wanted), gate_(gate) {}
  ~TestCheck() override { ++record_.destroyed; }
  bool wanted() override { return wanted_; }
  void run() override {
    record_.thread = std::this_thread::get_id();
    if (gate_ != nullptr) gate_->pass();
    ++record_.ran;
  }

 private:
  Record& record_;
  bool wanted_;
  Gate* gate_;
};

}  // namespace

TEST_CASE("a check runs on the queue's own thread and is destroyed after") {
  CredentialCheckQueue queue(4);
  Record record;
  REQUIRE(queue.submit(std::make_unique<TestCheck>(record, true)));
  REQUIRE(eventually([&] { return record.destroyed == 1; }));
  CHECK(record.ran == 1);
  CHECK(record.thread.load() != std::this_thread::get_id());
  CHECK(queue.figures().run == 1);
  CHECK(queue.figures().skipped == 0);
}

TEST_CASE("beyond its capacity a check is refused at once and counted, the running one included") {
  CredentialCheckQueue queue(3);
  Gate gate;
  Record blocked, waiting, refused;
  REQUIRE(queue.submit(std::make_unique<TestCheck>(blocked, true, &gate)));
  gate.wait_reached();  // running: it counts against the capacity too
  REQUIRE(queue.submit(std::make_unique<TestCheck>(waiting, true)));
  REQUIRE(queue.submit(std::make_unique<TestCheck>(waiting, true)));
  CHECK_FALSE(queue.submit(std::make_unique<TestCheck>(refused, true)));
  CHECK(refused.destroyed == 1);  // dropped at once, never run
  CHECK(queue.figures().refused == 1);
  gate.release();
  REQUIRE(eventually([&] { return queue.figures().run == 3; }));
  CHECK(waiting.ran == 2);
  CHECK(refused.ran == 0);
  // Room again once they ran.
  CHECK(queue.submit(std::make_unique<TestCheck>(waiting, true)));
  REQUIRE(eventually([&] { return queue.figures().run == 4; }));
}

TEST_CASE("a check no longer wanted when its turn comes is skipped without running") {
  CredentialCheckQueue queue(8);
  Gate gate;
  Record blocked, unwanted, wanted;
  REQUIRE(queue.submit(std::make_unique<TestCheck>(blocked, true, &gate)));
  gate.wait_reached();
  REQUIRE(queue.submit(std::make_unique<TestCheck>(unwanted, false)));
  REQUIRE(queue.submit(std::make_unique<TestCheck>(wanted, true)));
  gate.release();
  REQUIRE(eventually([&] { return wanted.destroyed == 1; }));
  CHECK(unwanted.ran == 0);
  CHECK(unwanted.destroyed == 1);
  CHECK(wanted.ran == 1);
  CHECK(queue.figures().skipped == 1);
  CHECK(queue.figures().run == 2);
}

TEST_CASE("a full queue drops its unwanted checks to make room for a new one") {
  CredentialCheckQueue queue(3);
  Gate gate;
  Record blocked, unwanted, wanted;
  REQUIRE(queue.submit(std::make_unique<TestCheck>(blocked, true, &gate)));
  gate.wait_reached();
  REQUIRE(queue.submit(std::make_unique<TestCheck>(unwanted, false)));
  REQUIRE(queue.submit(std::make_unique<TestCheck>(unwanted, false)));
  // Full (one running, two waiting), but both waiting are no longer wanted.
  CHECK(queue.submit(std::make_unique<TestCheck>(wanted, true)));
  CHECK(unwanted.destroyed == 2);
  CHECK(queue.figures().skipped == 2);
  CHECK(queue.figures().refused == 0);
  gate.release();
  REQUIRE(eventually([&] { return wanted.ran == 1; }));
  CHECK(unwanted.ran == 0);
}

TEST_CASE("stop drops the waiting checks, lets the running one finish and refuses new ones") {
  Gate gate;
  Record blocked, waiting, late;
  CredentialCheckQueue queue(4);
  REQUIRE(queue.submit(std::make_unique<TestCheck>(blocked, true, &gate)));
  gate.wait_reached();
  REQUIRE(queue.submit(std::make_unique<TestCheck>(waiting, true)));
  queue.stop();
  CHECK(waiting.destroyed == 1);
  CHECK(waiting.ran == 0);
  CHECK_FALSE(queue.submit(std::make_unique<TestCheck>(late, true)));
  gate.release();
  queue.join();
  CHECK(blocked.ran == 1);
  CHECK(blocked.destroyed == 1);
  queue.stop();  // idempotent
  queue.join();
}
