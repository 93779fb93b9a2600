// delivery_loop_test.cpp — the kit's delivery loop: exports on the interval
// and on request, retries (a fresh collect for cumulative data, the same
// payloads in order for delta), drops rejected payloads without retrying,
// honours Retry-After, keeps at most max_pending payloads, and makes its
// last attempts inside close's budget.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <tokenspeed/kit/delivery_loop.hpp>

namespace kit = tokenspeed::metrics::kit;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// Hang guard only: every condition below holds within milliseconds.
constexpr auto kHangGuard = std::chrono::seconds(20);

// What the callbacks saw; touched by the loop thread and the test thread.
struct Recorder {
  std::mutex mutex;
  std::condition_variable changed;
  int next_payload = 1;
  std::vector<int> sent;         // payload of every attempt, in order
  std::vector<bool> sent_final;  // whether that attempt was a final one
  std::vector<Clock::time_point> deadlines;
  std::vector<int> collects_final;  // 0/1 per collect
  std::vector<std::pair<int, kit::DropReason>> dropped;
  std::vector<milliseconds> retry_delays;
  int payloads_per_collect = 1;
  std::function<kit::SendResult(int payload, Clock::time_point, const std::atomic<bool>*)> answer =
      [](int, Clock::time_point, const std::atomic<bool>*) { return kit::SendResult::delivered(); };
  bool interrupted = false;

  kit::DeliveryLoop<int>::Callbacks callbacks() {
    kit::DeliveryLoop<int>::Callbacks c;
    c.collect = [this](std::vector<int>& out, bool final) {
      std::lock_guard lock(mutex);
      for (int i = 0; i < payloads_per_collect; ++i) out.push_back(next_payload++);
      collects_final.push_back(final ? 1 : 0);
      changed.notify_all();
    };
    c.send = [this](const int& payload, Clock::time_point deadline, const std::atomic<bool>* stop) {
      {
        std::lock_guard lock(mutex);
        sent.push_back(payload);
        sent_final.push_back(stop == nullptr);
        deadlines.push_back(deadline);
        changed.notify_all();
      }
      return answer(payload, deadline, stop);
    };
    c.interrupt = [this] {
      std::lock_guard lock(mutex);
      interrupted = true;
    };
    c.dropped = [this](const int& payload, kit::DropReason reason, const std::string&) {
      std::lock_guard lock(mutex);
      dropped.emplace_back(payload, reason);
    };
    c.retrying = [this](const std::string&, milliseconds delay) {
      std::lock_guard lock(mutex);
      retry_delays.push_back(delay);
    };
    return c;
  }

  template <class Predicate>
  bool wait(Predicate predicate) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, kHangGuard, predicate);
  }
};

// A server that takes the first ordinary request and answers it only after
// close has been called and kHold has passed since, watching the stop flag
// all the while. A close that cut the attempt in flight short would set the
// flag within microseconds of its call; the hold is counted from that call,
// not from the request, so a slow test thread cannot end it before close
// begins. The close budgets in the tests below keep close waiting for the
// attempt far longer than kHold, so a correct close never sets the flag early.
class SlowServer {
 public:
  static constexpr auto kHold = milliseconds(500);

  std::function<kit::SendResult(int, Clock::time_point, const std::atomic<bool>*)> answer() {
    return [this](int payload, Clock::time_point, const std::atomic<bool>* stop) {
      if (payload == 1 && stop != nullptr) hold(*stop);
      return kit::SendResult::delivered();
    };
  }

  // Test thread: true once the server has the request.
  bool wait_for_request() {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kHangGuard, [&] { return has_request_; });
  }

  // Test thread: called just before close; the hold starts now.
  void closing() {
    std::lock_guard lock(mutex_);
    close_called_ = Clock::now();
    changed_.notify_all();
  }

  // After close: whether the server held the request after close was called
  // (false means the test proved nothing), and whether it saw the stop flag
  // within kHold of that call.
  bool held() {
    std::lock_guard lock(mutex_);
    return held_;
  }
  bool saw_stop() {
    std::lock_guard lock(mutex_);
    return saw_stop_;
  }

 private:
  void hold(const std::atomic<bool>& stop) {
    std::unique_lock lock(mutex_);
    has_request_ = true;
    changed_.notify_all();
    if (!changed_.wait_for(lock, kHangGuard, [&] { return close_called_.has_value(); })) return;
    const Clock::time_point until = *close_called_ + kHold;
    lock.unlock();
    while (Clock::now() < until && !stop.load()) std::this_thread::sleep_for(milliseconds(1));
    const bool stopped = stop.load();
    lock.lock();
    saw_stop_ = stopped;
    held_ = true;
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  bool has_request_ = false;
  std::optional<Clock::time_point> close_called_;
  bool held_ = false;
  bool saw_stop_ = false;
};

kit::DeliveryOptions fast(milliseconds interval = milliseconds(5)) {
  kit::DeliveryOptions o;
  o.interval = interval;
  o.attempt_timeout = milliseconds(1000);
  o.backoff = {milliseconds(1), milliseconds(4), 2.0, 0.0};
  return o;
}

}  // namespace

TEST_CASE("the loop collects and sends on its interval") {
  Recorder r;
  kit::DeliveryLoop<int> loop(fast(), r.callbacks());
  loop.start();
  REQUIRE(r.wait([&] { return r.sent.size() >= 3; }));
  CHECK(loop.close(milliseconds(1000)));
  std::lock_guard lock(r.mutex);
  CHECK(std::vector<int>(r.sent.begin(), r.sent.begin() + 3) == std::vector<int>{1, 2, 3});
  CHECK(r.collects_final.back() == 1);  // the last collect is the final one
  CHECK(loop.figures().delivered == r.sent.size());
}

TEST_CASE("request_export exports before the interval ends (a full batch)") {
  Recorder r;
  kit::DeliveryLoop<int> loop(fast(milliseconds(3600000)), r.callbacks());
  loop.start();
  loop.request_export();
  REQUIRE(r.wait([&] { return r.sent.size() == 1; }));
  loop.close(milliseconds(1000));
}

TEST_CASE("cumulative: a retry collects afresh, superseding what waited") {
  Recorder r;
  int failures = 2;
  r.answer = [&](int, Clock::time_point, const std::atomic<bool>*) {
    return failures-- > 0 ? kit::SendResult::retry("503") : kit::SendResult::delivered();
  };
  kit::DeliveryLoop<int> loop(fast(milliseconds(3600000)), r.callbacks());
  loop.start();
  loop.request_export();
  REQUIRE(r.wait([&] { return r.sent.size() >= 3; }));
  loop.close(milliseconds(1000));
  std::lock_guard lock(r.mutex);
  CHECK(std::vector<int>(r.sent.begin(), r.sent.begin() + 3) == std::vector<int>{1, 2, 3});
  CHECK(loop.figures().superseded >= 2);
  CHECK(r.retry_delays == std::vector<milliseconds>{milliseconds(1), milliseconds(2)});
}

TEST_CASE("delta: the payloads that waited are retried first, in order") {
  Recorder r;
  r.payloads_per_collect = 2;
  int failures = 2;
  r.answer = [&](int, Clock::time_point, const std::atomic<bool>*) {
    return failures-- > 0 ? kit::SendResult::retry("dropped connection")
                          : kit::SendResult::delivered();
  };
  kit::DeliveryOptions options = fast(milliseconds(3600000));
  options.recollect_on_retry = false;
  kit::DeliveryLoop<int> loop(options, r.callbacks());
  loop.start();
  loop.request_export();
  REQUIRE(r.wait([&] { return r.sent.size() >= 4; }));
  loop.close(milliseconds(1000));
  std::lock_guard lock(r.mutex);
  CHECK(std::vector<int>(r.sent.begin(), r.sent.begin() + 4) == std::vector<int>{1, 1, 1, 2});
  CHECK(r.dropped.empty());
}

TEST_CASE("a rejected payload is dropped and never retried") {
  Recorder r;
  r.payloads_per_collect = 2;
  r.answer = [](int payload, Clock::time_point, const std::atomic<bool>*) {
    return payload == 1 ? kit::SendResult::rejected("HTTP 400") : kit::SendResult::delivered();
  };
  kit::DeliveryLoop<int> loop(fast(milliseconds(3600000)), r.callbacks());
  loop.start();
  loop.request_export();
  REQUIRE(r.wait([&] { return r.sent.size() >= 2; }));
  loop.close(milliseconds(1000));
  std::lock_guard lock(r.mutex);
  CHECK(std::count(r.sent.begin(), r.sent.end(), 1) == 1);
  REQUIRE(!r.dropped.empty());
  CHECK(r.dropped[0] == std::make_pair(1, kit::DropReason::kRejected));
  CHECK(r.retry_delays.empty());
  CHECK(loop.figures().dropped_rejected == 1);
}

TEST_CASE("Retry-After replaces the backoff delay, capped at max_retry_after") {
  Recorder r;
  int answers = 0;
  r.answer = [&](int, Clock::time_point, const std::atomic<bool>*) {
    ++answers;
    if (answers == 1) return kit::SendResult::retry("429", milliseconds(3));
    if (answers == 2) return kit::SendResult::retry("503", milliseconds(999999999));
    return kit::SendResult::delivered();
  };
  kit::DeliveryOptions options = fast(milliseconds(3600000));
  options.max_retry_after = milliseconds(7);
  kit::DeliveryLoop<int> loop(options, r.callbacks());
  loop.start();
  loop.request_export();
  REQUIRE(r.wait([&] { return r.sent.size() >= 3; }));
  loop.close(milliseconds(1000));
  std::lock_guard lock(r.mutex);
  CHECK(r.retry_delays == std::vector<milliseconds>{milliseconds(3), milliseconds(7)});
}

TEST_CASE("at most max_pending payloads wait; the oldest is dropped and counted") {
  Recorder r;
  r.payloads_per_collect = 5;
  kit::DeliveryOptions options = fast(milliseconds(3600000));
  options.max_pending = 2;
  options.recollect_on_retry = false;
  kit::DeliveryLoop<int> loop(options, r.callbacks());
  loop.start();
  loop.request_export();
  REQUIRE(r.wait([&] { return r.sent.size() >= 2; }));
  CHECK(loop.figures().dropped_queue_full == 3);  // before close, whose final collect adds 5 more
  loop.close(milliseconds(1000));
  std::lock_guard lock(r.mutex);
  CHECK(std::vector<int>(r.sent.begin(), r.sent.begin() + 2) == std::vector<int>{4, 5});
  CHECK(r.dropped[0] == std::make_pair(1, kit::DropReason::kQueueFull));
}

TEST_CASE("close makes a final collect and delivers it within its budget") {
  Recorder r;
  kit::DeliveryLoop<int> loop(fast(milliseconds(3600000)), r.callbacks());
  loop.start();
  const Clock::time_point start = Clock::now();
  CHECK(loop.close(milliseconds(500)));
  std::lock_guard lock(r.mutex);
  CHECK(r.collects_final == std::vector<int>{1});
  REQUIRE(r.sent == std::vector<int>{1});
  CHECK(r.sent_final[0]);
  CHECK(r.deadlines[0] <= start + milliseconds(500));  // the attempt is bounded by the budget
}

TEST_CASE("close interrupts a hanging attempt, bounds the final ones, drops what is left") {
  Recorder r;
  // A receiver that never answers: every attempt lasts until its deadline or stop.
  r.answer = [](int, Clock::time_point deadline, const std::atomic<bool>* stop) {
    while (Clock::now() < deadline && !(stop != nullptr && stop->load())) {
      std::this_thread::sleep_for(milliseconds(1));
    }
    return kit::SendResult::retry("no response within the timeout");
  };
  kit::DeliveryOptions options = fast(milliseconds(3600000));
  options.attempt_timeout = milliseconds(3600000);
  kit::DeliveryLoop<int> loop(options, r.callbacks());
  loop.start();
  loop.request_export();
  REQUIRE(r.wait([&] { return r.sent.size() == 1; }));
  const Clock::time_point start = Clock::now();
  CHECK_FALSE(loop.close(milliseconds(200)));
  CHECK_FALSE(loop.close(milliseconds(200)));  // repeated close is safe
  std::lock_guard lock(r.mutex);
  CHECK(r.interrupted);
  for (std::size_t i = 0; i < r.sent.size(); ++i) {
    if (r.sent_final[i]) CHECK(r.deadlines[i] <= start + milliseconds(200));
  }
  CHECK(loop.figures().dropped_close >= 1);
  REQUIRE(!r.dropped.empty());
  CHECK(r.dropped.back().second == kit::DropReason::kCloseDeadline);
}

TEST_CASE("delta: close lets the attempt in flight finish, so its payload is not sent twice") {
  Recorder r;
  SlowServer server;
  r.answer = server.answer();
  kit::DeliveryOptions options = fast(milliseconds(3600000));
  options.attempt_timeout = milliseconds(60000);
  options.recollect_on_retry = false;
  kit::DeliveryLoop<int> loop(options, r.callbacks());
  loop.start();
  loop.request_export();
  REQUIRE(server.wait_for_request());
  server.closing();
  CHECK(loop.close(milliseconds(5000)));  // waits for the attempt until 4.9 s after the call
  std::lock_guard lock(r.mutex);
  REQUIRE(server.held());
  CHECK_FALSE(server.saw_stop());
  CHECK(std::count(r.sent.begin(), r.sent.end(), 1) == 1);
  CHECK(r.sent == std::vector<int>{1, 2});  // 2: the final collect
}

TEST_CASE("cumulative: close lets an attempt in flight finish before the final one") {
  // Cut short, the request could still reach the server after the final one,
  // which a time series database refuses as an out-of-order sample.
  Recorder r;
  SlowServer server;
  r.answer = server.answer();
  kit::DeliveryOptions options = fast(milliseconds(3600000));
  options.attempt_timeout = milliseconds(60000);
  kit::DeliveryLoop<int> loop(options, r.callbacks());
  loop.start();
  loop.request_export();
  REQUIRE(server.wait_for_request());
  server.closing();
  CHECK(loop.close(milliseconds(60000)));  // waits for the attempt until 30 s after the call
  std::lock_guard lock(r.mutex);
  REQUIRE(server.held());
  CHECK_FALSE(server.saw_stop());
  CHECK(r.sent == std::vector<int>{1, 2});  // in order: 2 is the final collect
}

TEST_CASE("cumulative: close cuts a hanging attempt short (the final collect supersedes it)") {
  Recorder r;
  std::atomic<bool> first_attempt_saw_stop{false};
  r.answer = [&](int payload, Clock::time_point deadline, const std::atomic<bool>* stop) {
    if (payload == 1 && stop != nullptr) {
      while (Clock::now() < deadline && !stop->load()) std::this_thread::sleep_for(milliseconds(1));
      first_attempt_saw_stop = stop->load();
      return kit::SendResult::retry("stopped");
    }
    return kit::SendResult::delivered();
  };
  kit::DeliveryOptions options = fast(milliseconds(3600000));
  options.attempt_timeout = milliseconds(3600000);
  kit::DeliveryLoop<int> loop(options, r.callbacks());
  loop.start();
  loop.request_export();
  REQUIRE(r.wait([&] { return !r.sent.empty(); }));
  CHECK(loop.close(milliseconds(5000)));
  CHECK(first_attempt_saw_stop);
  std::lock_guard lock(r.mutex);
  CHECK(r.sent == std::vector<int>{1, 2});
  CHECK(r.retry_delays.empty());  // a cut short by close is no failure to report
}

TEST_CASE("a loop never started closes at once") {
  Recorder r;
  kit::DeliveryLoop<int> loop(fast(), r.callbacks());
  CHECK(loop.close(milliseconds(100)));
  CHECK(r.sent.empty());
}
