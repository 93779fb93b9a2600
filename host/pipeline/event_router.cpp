// event_router.cpp — thread registration (the one allocation per collector
// thread), the shutdown sequence within one shared budget, and figures. No
// plugin function is called here.
#include "pipeline/event_router.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "core/thread_safety.hpp"

namespace tokenspeed::metrics {

namespace {

std::atomic<std::uint64_t> next_router_id{1};

// Live routers by id, so that a collector thread that exits can hand its
// ring sets back to the routers that still exist. Never destroyed (threads
// may exit during static destruction).
Mutex& registry_mutex() {
  static auto* mutex = new Mutex;
  return *mutex;
}
std::vector<std::pair<std::uint64_t, EventRouter*>>& registry() TSM_REQUIRES(registry_mutex()) {
  static auto* routers = new std::vector<std::pair<std::uint64_t, EventRouter*>>;
  return *routers;
}

}  // namespace

// Per collector thread: the ring sets it uses, by router id. On thread exit
// each set goes back to its router (if alive) for the next new thread, so
// threads that come and go do not grow memory.
struct EventRouter::ThreadExit {
  std::vector<std::pair<std::uint64_t, EventRing* const*>> known;
  ~ThreadExit() {
    try {
      MutexLock lock(registry_mutex());
      for (const auto& [id, rings] : known) {
        for (const auto& [router_id, router] : registry()) {
          if (router_id == id) router->release_thread_rings(rings);
        }
      }
    } catch (...) {
      // A thread's exit (a destructor): the set stays with its router, unused.
    }
  }
};

void EventRouter::release_thread_rings(EventRing* const* rings) noexcept {
  try {
    MutexLock lock(threads_mutex_);
    for (auto& thread : threads_) {
      if (thread->rings.data() == rings) free_threads_.push_back(thread.get());
    }
  } catch (...) {
    // No memory to list it as free: the set stays allocated, unused (thread exit).
  }
}

std::size_t EventRouter::ring_sets() const {
  MutexLock lock(threads_mutex_);
  return threads_.size();
}

EventRouter::EventRouter(std::vector<OutputDefinition> outputs, RouterOptions options)
    : options_(std::move(options)),
      id_(next_router_id.fetch_add(1, std::memory_order_relaxed)),
      series_table_(std::make_shared<SeriesTable>()) {
  SinkDeliveryOptions delivery_options;
  delivery_options.series_table = series_table_;
  delivery_options.process = std::make_shared<const ProcessIdentityView>(options_.process);
  delivery_options.queue_size = std::max<std::size_t>(options_.queue_size, 1);
  delivery_options.idle_park_timeout = options_.idle_park_timeout;
  delivery_options.log_interval = options_.log_interval;
  delivery_options.log = options_.log;
  deliveries_.reserve(outputs.size());
  for (OutputDefinition& output : outputs) {
    deliveries_.push_back(std::make_shared<SinkDelivery>(std::move(output), delivery_options));
    delivery_raw_.push_back(deliveries_.back().get());
  }
  // The delivery threads start parked: they create their sink when its first event
  // arrives, so no plugin resource exists before an event does.
  for (auto& delivery : deliveries_) delivery->start();
  StallReporterOptions stall;
  stall.process_name = options_.process.name;
  stall.check_interval = options_.stall_check_interval;
  stall.stall_threshold = options_.stall_threshold;
  stall.line_interval = options_.log_interval;
  stall.log = options_.log;
  stall_reporter_ = std::make_unique<StallReporter>(deliveries_, std::move(stall));
  stall_reporter_->start();
  MutexLock lock(registry_mutex());
  registry().emplace_back(id_, this);
}

EventRouter::~EventRouter() {
  {
    MutexLock lock(registry_mutex());
    auto& routers = registry();
    routers.erase(std::remove_if(routers.begin(), routers.end(),
                                 [&](const auto& r) { return r.first == id_; }),
                  routers.end());
  }
  close(options_.close_grace);
}

EventRing* const* EventRouter::register_thread() noexcept {
  try {
    // Every router this thread has published to (ids are never reused).
    static thread_local ThreadExit thread_exit;
    auto& known = thread_exit.known;
    for (const auto& [id, rings] : known) {
      if (id == id_) {
        tl_cache_ = ThreadCache{id_, rings};
        return rings;
      }
    }
    known.reserve(known.size() + 1);  // nothing can fail after the rings are taken
    EventRing* const* rings = nullptr;
    {
      // A set left by a thread that exited: its rings keep their counts and
      // whatever is still queued; the mutex orders the old producer's last
      // push before this thread's first.
      MutexLock lock(threads_mutex_);
      if (!free_threads_.empty()) {
        rings = free_threads_.back()->rings.data();
        free_threads_.pop_back();
      }
    }
    if (rings == nullptr) {
      auto thread = std::make_unique<ThreadRings>();
      thread->router_id = id_;
      thread->rings.reserve(deliveries_.size());
      for (auto& delivery : deliveries_) thread->rings.push_back(delivery->new_ring());
      rings = thread->rings.data();
      MutexLock lock(threads_mutex_);
      threads_.push_back(std::move(thread));
    }
    known.emplace_back(id_, rings);
    tl_cache_ = ThreadCache{id_, rings};
    return rings;
  } catch (...) {
    return nullptr;  // counted by publish() as dropped_ring_full (unregistered_drops_)
  }
}

bool EventRouter::close(std::chrono::nanoseconds budget) noexcept {
  if (!close_mutex_.try_lock()) return false;  // another thread is closing
  MutexLock lock(close_mutex_, std::adopt_lock);
  if (closed_) return close_result_;
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::max(budget, std::chrono::nanoseconds::zero());
  const auto hard_deadline = deadline + options_.close_grace;

  // 1. Stop accepting: later events count as dropped after close.
  closing_.store(true, std::memory_order_seq_cst);
  // 2. Drain every sink in parallel (each on its own delivery thread) until the deadline.
  for (auto& delivery : deliveries_) delivery->request_drain();
  bool ok = true;
  for (auto& delivery : deliveries_) ok = delivery->wait_drained(deadline) && ok;
  // 3. What is still queued now is discarded at the deadline.
  for (auto& delivery : deliveries_) delivery->freeze();
  // 4. Close the plugin sinks one after the other with what remains of the
  //    budget; one failure skips nothing. Sinks whose delivery thread finished
  //    draining go first; those still inside a plugin call (they stop when
  //    it returns) last, so a stuck one cannot eat the others' grace.
  std::vector<SinkDelivery*> order;
  order.reserve(deliveries_.size());
  for (auto& delivery : deliveries_) {
    if (delivery->drain_finished()) order.push_back(delivery.get());
  }
  for (auto& delivery : deliveries_) {
    if (std::find(order.begin(), order.end(), delivery.get()) == order.end())
      order.push_back(delivery.get());
  }
  for (SinkDelivery* delivery : order) {
    const auto remaining =
        std::max(std::chrono::nanoseconds::zero(),
                 std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now()));
    ok = delivery->close_plugin(remaining, hard_deadline) && ok;
  }
  for (auto& delivery : deliveries_) delivery->release_thread();
  // The last drop counts, so that the lines add up to the totals.
  stall_reporter_->stop();
  for (auto& delivery : deliveries_) {
    try {
      const SinkFigures s = delivery->figures();
      if (s.discarded_at_deadline > 0 || s.abandoned) {
        LogWriter write = options_.log ? options_.log : LogWriter(&write_log_line_to_stderr);
        write("tokenspeed-metrics: output '" + s.name + "'" +
              (options_.process.name.empty() ? std::string() : " in " + options_.process.name) +
              ": close: " + std::to_string(s.discarded_at_deadline) +
              " events discarded at the deadline" +
              (s.abandoned ? "; the sink did not finish in time and was left running" : ""));
      }
    } catch (...) {
      // No memory for the line: the figures are in the summary and on /metrics.
    }
  }
  closed_ = true;
  close_result_ = ok;
  return ok;
}

std::vector<SinkFigures> EventRouter::figures() const {
  std::vector<SinkFigures> out;
  out.reserve(deliveries_.size());
  const std::uint64_t unregistered = unregistered_drops_.load(std::memory_order_relaxed);
  for (const auto& delivery : deliveries_) {
    SinkFigures s = delivery->figures();
    s.accepted += unregistered;
    s.dropped_ring_full += unregistered;
    out.push_back(std::move(s));
  }
  return out;
}

std::uint64_t EventRouter::output_mask(
    const std::optional<std::vector<std::string>>& outputs) const {
  if (!outputs) return ~std::uint64_t{0};
  std::uint64_t mask = ~std::uint64_t{0};
  for (std::size_t i = 0; i < delivery_raw_.size() && i < 64; ++i) {
    const std::string& name = delivery_raw_[i]->name();
    if (std::find(outputs->begin(), outputs->end(), name) == outputs->end()) {
      mask &= ~(std::uint64_t{1} << i);
    }
  }
  return mask;
}

}  // namespace tokenspeed::metrics
