/*
 * tokenspeed/kit/delivery_loop.hpp — a network output's delivery thread:
 * collects on an interval (or early, when a batch is full), sends each
 * payload with a per-attempt timeout, retries with capped exponential backoff
 * and jitter or the server's Retry-After, keeps a bounded number of payloads,
 * and makes a last attempt inside close's budget. Generic over the payload
 * and the "collect" and "send one" callbacks. Never touches the event path:
 * request_export is the only call meant for emit.
 */
#ifndef TOKENSPEED_KIT_DELIVERY_LOOP_HPP
#define TOKENSPEED_KIT_DELIVERY_LOOP_HPP

#include <tokenspeed/kit/background_thread.hpp>
#include <tokenspeed/kit/backoff.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace tokenspeed::metrics::kit {

/* What one attempt to send a payload came to. */
struct SendResult {
  enum class Outcome {
    kDelivered,  // done with this payload
    kRetry,      // try again later (429, 502-504, a dropped connection, a timeout)
    kRejected,   // never retry (other 4xx): the payload is dropped
  };
  Outcome outcome = Outcome::kDelivered;
  std::optional<std::chrono::milliseconds> retry_after;  // the server's wish, if any
  std::string message;                                   // for the log when not delivered

  static SendResult delivered() { return {}; }
  static SendResult retry(std::string why, std::optional<std::chrono::milliseconds> after = {}) {
    return {Outcome::kRetry, after, std::move(why)};
  }
  static SendResult rejected(std::string why) {
    return {Outcome::kRejected, std::nullopt, std::move(why)};
  }
};

/* Why a payload was given up. */
enum class DropReason {
  kRejected,       // the server refused it for good
  kQueueFull,      // more than max_pending payloads waited
  kCloseDeadline,  // close's budget ended before it was delivered
};

struct DeliveryOptions {
  std::chrono::milliseconds interval{10000};         // collect and send this often
  std::chrono::milliseconds attempt_timeout{10000};  // bound of one send
  BackoffOptions backoff;
  std::size_t max_pending = 64;  // payloads kept while the server does not take them
  // true (cumulative data): a retry collects afresh and drops what waited,
  // since the new collect supersedes it. false (delta data): the payloads
  // that waited are sent first, new ones after.
  bool recollect_on_retry = true;
  std::chrono::milliseconds max_retry_after{std::chrono::minutes(5)};  // cap on Retry-After
};

/* Counted on the delivery thread; read with figures() from any thread. */
struct DeliveryLoopFigures {
  uint64_t collects = 0;
  uint64_t attempts = 0;
  uint64_t delivered = 0;
  uint64_t retried = 0;  // attempts that will be tried again
  uint64_t dropped_rejected = 0;
  uint64_t dropped_queue_full = 0;
  uint64_t dropped_close = 0;
  uint64_t superseded = 0;  // cumulative payloads replaced by a fresh collect
};
/* The name of earlier kit releases. */
using DeliveryStats [[deprecated("renamed DeliveryLoopFigures")]] = DeliveryLoopFigures;

/* Threading: start, request_export, close and stats from any thread (emit's
 * thread and the host's close thread); the callbacks run on the loop's own
 * thread only, never concurrently. close lets the attempt in flight finish
 * (delta data until the close deadline, cumulative data for half the budget)
 * and then interrupts it (through the stop flag and the interrupt callback),
 * so that no earlier request lands after the final one; then it makes the
 * final collect and attempts within its budget; the thread
 * never outlives close because every attempt's deadline is inside that
 * budget. */
template <class Payload>
class DeliveryLoop {
 public:
  using Clock = std::chrono::steady_clock;

  struct Callbacks {
    // Appends what to send now; final is true once, in close.
    std::function<void(std::vector<Payload>& out, bool final)> collect;
    // One attempt, which must end by deadline, and at once when *stop turns
    // true (stop is null for the final attempts, which only have deadline).
    std::function<SendResult(const Payload& payload, Clock::time_point deadline,
                             const std::atomic<bool>* stop)>
        send;
    // Called from close's thread after stop turned true: wake the attempt in
    // flight so that it sees stop now rather than at its next poll (may be empty).
    std::function<void()> interrupt;
    // A payload was given up, and why (for counting and logging; may be empty).
    std::function<void(const Payload& payload, DropReason reason, const std::string& why)> dropped;
    // An attempt failed and will be retried after delay (may be empty).
    std::function<void(const std::string& why, std::chrono::milliseconds delay)> retrying;
  };

  DeliveryLoop(DeliveryOptions options, Callbacks callbacks, uint64_t seed = std::random_device{}())
      : options_(options), callbacks_(std::move(callbacks)), backoff_(options.backoff, seed) {}
  DeliveryLoop(const DeliveryLoop&) = delete;
  DeliveryLoop& operator=(const DeliveryLoop&) = delete;
  ~DeliveryLoop() { close(std::chrono::nanoseconds(0)); }

  /* Starts the thread (in create_sink). Throws std::system_error. The
   * thread never takes SIGPIPE (a peer that went away makes a write fail
   * instead): it starts with SIGPIPE blocked; the caller's mask is kept. */
  void start() {
    std::lock_guard lock(mutex_);
    if (thread_.joinable() || closing_) return;
    thread_ = start_background_thread([this] { run(); });
  }

  /* Asks for an export before the interval ends (a batch is full). Cheap;
   * wakes the thread only when it is waiting for the interval. */
  void request_export() noexcept {
    if (export_requested_.exchange(true, std::memory_order_acq_rel)) return;
    std::lock_guard lock(mutex_);
    wake_.notify_one();
  }

  /* Stops the loop: interrupts the attempt in flight, collects a last time
   * and tries to deliver everything within timeout; drops (counted) what is
   * left. Returns true when nothing was left. Repeated calls return at once. */
  bool close(std::chrono::nanoseconds timeout) noexcept {
    {
      std::lock_guard lock(mutex_);
      if (closing_) return close_result_;
      closing_ = true;
      const auto budget = std::clamp(timeout, std::chrono::nanoseconds(0),
                                     std::chrono::nanoseconds(std::chrono::hours(1)));
      // Keep a tenth of the budget (at most 100 ms) for tearing down.
      const auto reserve =
          std::min<std::chrono::nanoseconds>(budget / 10, std::chrono::milliseconds(100));
      close_deadline_ = Clock::now() + budget - reserve;
      if (!thread_.joinable()) {
        close_result_ = true;
        return true;
      }
      wake_.notify_one();
    }
    {
      // Let the attempt in flight finish before the final one. Cut short, a
      // request the server already took could still land after the final
      // request: delta data would be counted twice, cumulative data refused
      // as out of order (a time series database takes a series' samples in
      // time order). Delta data waits until the close deadline; cumulative
      // data for half of what is left, keeping the rest for the final
      // collect, which supersedes the attempt when a hanging server holds it.
      std::unique_lock lock(mutex_);
      const auto now = Clock::now();
      const auto until = options_.recollect_on_retry && close_deadline_ > now
                             ? now + (close_deadline_ - now) / 2
                             : close_deadline_;
      attempt_done_.wait_until(lock, until, [&] { return !attempt_in_flight_; });
    }
    stop_attempts_.store(true, std::memory_order_release);
    if (callbacks_.interrupt) callbacks_.interrupt();
    thread_.join();
    std::lock_guard lock(mutex_);
    return close_result_;
  }

  DeliveryLoopFigures figures() const {
    std::lock_guard lock(mutex_);
    return figures_;
  }
  [[deprecated("use figures()")]] DeliveryLoopFigures stats() const { return figures(); }

  const DeliveryOptions& options() const noexcept { return options_; }

 private:
  template <class F>
  void count(F&& f) {
    std::lock_guard lock(mutex_);
    f(figures_);
  }

  void drop_all(DropReason reason, const std::string& why) {
    for (const Payload& payload : pending_) drop(payload, reason, why);
    pending_.clear();
  }

  void drop(const Payload& payload, DropReason reason, const std::string& why) {
    count([&](DeliveryLoopFigures& s) {
      if (reason == DropReason::kRejected) ++s.dropped_rejected;
      if (reason == DropReason::kQueueFull) ++s.dropped_queue_full;
      if (reason == DropReason::kCloseDeadline) ++s.dropped_close;
    });
    if (callbacks_.dropped) callbacks_.dropped(payload, reason, why);
  }

  void collect(bool final) {
    std::vector<Payload> fresh;
    callbacks_.collect(fresh, final);
    count([](DeliveryLoopFigures& s) { ++s.collects; });
    for (Payload& payload : fresh) pending_.push_back(std::move(payload));
    while (pending_.size() > options_.max_pending) {
      drop(pending_.front(), DropReason::kQueueFull,
           "more than " + std::to_string(options_.max_pending) + " payloads waiting");
      pending_.pop_front();
    }
  }

  // Sends pending payloads in order until one must be retried. Returns the
  // retry's delay, or nullopt when everything was sent or dropped.
  std::optional<std::chrono::milliseconds> send_pending(Clock::time_point hard_deadline,
                                                        bool final) {
    while (!pending_.empty()) {
      if (!final) {
        std::lock_guard lock(mutex_);
        if (closing_) return std::nullopt;
        attempt_in_flight_ = true;
      }
      const Clock::time_point now = Clock::now();
      if (final && now >= hard_deadline) return std::nullopt;
      const Clock::time_point deadline = std::min(now + options_.attempt_timeout, hard_deadline);
      count([](DeliveryLoopFigures& s) { ++s.attempts; });
      SendResult result;
      try {
        result = callbacks_.send(pending_.front(), deadline, final ? nullptr : &stop_attempts_);
      } catch (const std::exception& e) {
        result = SendResult::rejected(std::string("cannot send: ") + e.what());
      }
      if (!final) {
        std::lock_guard lock(mutex_);
        attempt_in_flight_ = false;
        attempt_done_.notify_all();
      }
      switch (result.outcome) {
        case SendResult::Outcome::kDelivered:
          count([](DeliveryLoopFigures& s) { ++s.delivered; });
          backoff_.reset();
          pending_.pop_front();
          break;
        case SendResult::Outcome::kRejected:
          drop(pending_.front(), DropReason::kRejected, result.message);
          pending_.pop_front();
          break;
        case SendResult::Outcome::kRetry: {
          count([](DeliveryLoopFigures& s) { ++s.retried; });
          // Cut short by close: the final attempts follow at once, no failure to report.
          if (!final && stop_attempts_.load(std::memory_order_acquire))
            return std::chrono::milliseconds(0);
          std::chrono::milliseconds delay = backoff_.next();
          if (result.retry_after)
            delay = std::min(std::max(*result.retry_after, std::chrono::milliseconds(0)),
                             options_.max_retry_after);
          if (callbacks_.retrying) callbacks_.retrying(result.message, delay);
          return delay;
        }
      }
    }
    return std::nullopt;
  }

  void run() {
    Clock::time_point next_collect = Clock::now() + options_.interval;
    bool retrying = false;  // pending_ waits for retry_at
    Clock::time_point retry_at = next_collect;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        wake_.wait_until(lock, retrying ? retry_at : next_collect, [&] {
          return closing_ || (!retrying && export_requested_.load(std::memory_order_acquire));
        });
        if (closing_) break;
      }
      const Clock::time_point now = Clock::now();
      const bool requested = export_requested_.load(std::memory_order_acquire);
      if (retrying && now < retry_at) continue;  // spurious wake-up
      if (!retrying && now < next_collect && !requested) continue;
      try {
        if (retrying && options_.recollect_on_retry) {
          count([&](DeliveryLoopFigures& s) { s.superseded += pending_.size(); });
          pending_.clear();
        }
        if (pending_.empty()) {
          export_requested_.store(false, std::memory_order_release);
          collect(false);
          next_collect = Clock::now() + options_.interval;
        }
        const auto delay = send_pending(Clock::time_point::max(), false);
        retrying = delay.has_value();
        if (retrying) retry_at = Clock::now() + *delay;
      } catch (...) {
        // A collect that ran out of memory: try again at the next interval.
        retrying = false;
        next_collect = Clock::now() + options_.interval;
      }
    }
    finish();
  }

  // The last collect and attempts, within close's deadline.
  void finish() {
    Clock::time_point deadline;
    {
      std::lock_guard lock(mutex_);
      deadline = close_deadline_;
    }
    try {
      if (options_.recollect_on_retry) {
        count([&](DeliveryLoopFigures& s) { s.superseded += pending_.size(); });
        pending_.clear();
      }
      collect(true);
      while (!pending_.empty() && Clock::now() < deadline) {
        const auto delay = send_pending(deadline, true);
        if (!delay || pending_.empty()) break;
        const Clock::time_point retry = Clock::now() + *delay;
        if (retry >= deadline) break;
        std::this_thread::sleep_until(retry);
      }
    } catch (...) {  // what is still pending is dropped and counted just below
    }
    const bool complete = pending_.empty();
    drop_all(DropReason::kCloseDeadline, "close's budget ended before delivery");
    std::lock_guard lock(mutex_);
    close_result_ = complete;
  }

  const DeliveryOptions options_;
  const Callbacks callbacks_;
  Backoff backoff_;              // loop thread only
  std::deque<Payload> pending_;  // loop thread only
  mutable std::mutex mutex_;     // guards what follows
  std::condition_variable wake_;
  std::condition_variable attempt_done_;  // an ordinary attempt ended
  bool attempt_in_flight_ = false;        // an ordinary (not final) attempt is in send
  bool closing_ = false;
  bool close_result_ = false;
  Clock::time_point close_deadline_{};
  DeliveryLoopFigures figures_;
  std::thread thread_;
  std::atomic<bool> export_requested_{false};
  std::atomic<bool> stop_attempts_{false};  // close began: end the ordinary attempt in flight
};

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_DELIVERY_LOOP_HPP
