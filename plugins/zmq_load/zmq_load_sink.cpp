// zmq_load_sink.cpp — emit's per-rank latest values and the sending
// thread: changes at once, heartbeats on its own timer, fpm commits one
// message each, the figures of what went out and what a full subscriber
// missed, and the log lines of runtime faults.
#include "zmq_load_sink.hpp"

#include <cmath>
#include <cstring>

#include <tokenspeed/kit/background_thread.hpp>

namespace tokenspeed::metrics::zmq_load {
namespace {

constexpr std::size_t kNoSlot = static_cast<std::size_t>(-1);

// vLLM's cache_config_info: the capacity is in its labels.
double capacity_from_labels(const tsm_metric_event& event) noexcept {
  int64_t blocks = -1;
  int64_t block_size = -1;
  for (uint32_t i = 0; i < event.label_count; ++i) {
    if (std::strcmp(event.label_names[i], "num_gpu_blocks") == 0)
      blocks = whole_number(event.label_values[i]);
    else if (std::strcmp(event.label_names[i], "block_size") == 0)
      block_size = whole_number(event.label_values[i]);
  }
  if (blocks < 0 || block_size < 0) return std::nan("");
  return static_cast<double>(blocks) * static_cast<double>(block_size);
}

double unix_seconds(const tsm_metric_event& event) noexcept {
  return static_cast<double>(event.timestamp_ns) / 1e9;
}

}  // namespace

ZmqLoadSink::ZmqLoadSink(ZmqLoadOptions options, const plugin::Host& host)
    : options_(std::move(options)),
      unset_slot_(static_cast<std::size_t>(options_.max_ranks)),
      log_(host, options_.log_interval),
      ranks_(new RankState[unset_slot_ + 1]),
      publisher_(options_.endpoint, unset_slot_),
      progress_(unset_slot_ + 1),
      account_(host) {
  thread_ = kit::start_background_thread([this] { run(); });
}

ZmqLoadSink::~ZmqLoadSink() {
  if (!closed_) {
    stopping_.store(true);
    wake();
    if (thread_.joinable()) thread_.join();
  }
}

std::size_t ZmqLoadSink::slot_of(const tsm_metric_event& event) const noexcept {
  for (uint32_t i = 0; i < event.label_count; ++i) {
    if (std::strcmp(event.label_names[i], options_.rank_label.c_str()) != 0) continue;
    const int64_t rank = whole_number(event.label_values[i]);
    if (rank < 0 || rank >= options_.max_ranks) return kNoSlot;
    return static_cast<std::size_t>(rank);
  }
  if (options_.process_rank >= 0 && options_.process_rank < options_.max_ranks)
    return static_cast<std::size_t>(options_.process_rank);
  return unset_slot_;
}

std::size_t ZmqLoadSink::offset_of(std::size_t slot) const noexcept {
  return slot == unset_slot_ ? 0 : slot;
}

int64_t ZmqLoadSink::rank_of(std::size_t slot) const noexcept {
  return slot == unset_slot_ ? -1 : static_cast<int64_t>(slot);
}

void ZmqLoadSink::emit(const tsm_metric_event& event) noexcept {
  const std::size_t field = options_.fields.find(event.metric);
  if (field == kFieldCount) {  // not a family of the feed: nothing to deliver
    other_events_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const std::size_t slot = slot_of(event);
  if (slot == kNoSlot) {
    events_invalid_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  RankState& rank = ranks_[slot];
  const bool first = !rank.seen();
  if (!update(rank, field, event)) return;
  rank.note_event();
  if (first) {
    rank.mark_seen();
    wake();  // the thread binds the rank's port
  }
}

// Applies one event; false when it is refused (counted).
bool ZmqLoadSink::update(RankState& rank, std::size_t field,
                         const tsm_metric_event& event) noexcept {
  if (field == static_cast<std::size_t>(Field::kFpmIterations)) {
    if (event.operation != TSM_OP_INC) {
      events_invalid_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    if (options_.schema != Schema::kForwardPass) return true;
    if (!rank.commit_fpm(unix_seconds(event))) {
      fpm_commits_dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    wake();
    return true;
  }
  const bool info = field == static_cast<std::size_t>(Field::kCacheConfigInfo);
  const double value = info ? capacity_from_labels(event) : event.value;
  if (event.operation != TSM_OP_SET || (!info && !std::isfinite(value))) {
    events_invalid_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (info && std::isnan(value)) return true;  // an info gauge without the capacity labels
  if (rank.set(field, value, unix_seconds(event))) wake();
  return true;
}

void ZmqLoadSink::wake() noexcept {
  if (wake_pending_.exchange(true, std::memory_order_acq_rel)) return;  // already woken
  std::lock_guard lock(wake_mutex_);
  wake_.notify_one();
}

void ZmqLoadSink::run() {
  while (true) {
    Clock::time_point due = Clock::now() + options_.heartbeat;
    for (std::size_t slot = 0; slot <= unset_slot_; ++slot) {
      if (!ranks_[slot].seen()) continue;
      const Progress& p = progress_[slot];
      due = std::min(due, std::max(p.last_sent + options_.heartbeat, p.next_bind));
    }
    {
      std::unique_lock lock(wake_mutex_);
      wake_.wait_until(lock, due, [this] {
        return wake_pending_.load(std::memory_order_acquire) || stopping_.load();
      });
    }
    const bool stop = stopping_.load();
    wake_pending_.exchange(false, std::memory_order_acq_rel);  // sees the values set before
    const Clock::time_point now = Clock::now();
    for (std::size_t slot = 0; slot <= unset_slot_; ++slot)
      if (ranks_[slot].seen()) publish(slot, now);
    report_figures();
    if (stop) return;
  }
}

// Binds the rank's port when due; false while it is not bound.
bool ZmqLoadSink::ready(std::size_t slot, Clock::time_point now) {
  const std::size_t offset = offset_of(slot);
  if (publisher_.bound(offset)) return true;
  Progress& p = progress_[slot];
  if (now < p.next_bind) return false;
  const std::string why = publisher_.bind(offset);
  if (why.empty()) return true;
  p.next_bind = now + options_.heartbeat;
  bind_failures_.fetch_add(1, std::memory_order_relaxed);
  log_.report(TSM_LOG_ERROR, "bind " + std::to_string(offset),
              "rank " + std::to_string(rank_of(slot)) + ": " + why +
                  "; no load messages for this rank until it binds (tried every heartbeat)");
  return false;
}

void ZmqLoadSink::publish(std::size_t slot, Clock::time_point now) {
  if (!ready(slot, now)) return;
  if (options_.schema == Schema::kLoadStat)
    publish_load_stat(slot, now);
  else
    publish_forward_pass(slot, now);
}

void ZmqLoadSink::publish_load_stat(std::size_t slot, Clock::time_point now) {
  Progress& p = progress_[slot];
  const uint64_t version = ranks_[slot].version();
  if (version == p.sent_version && now - p.last_sent < options_.heartbeat) return;
  p.sent_version = version;
  const LoadStat stat = load_stat(
      ranks_[slot].snapshot(), static_cast<uint64_t>(options_.max_total_num_tokens), rank_of(slot));
  writer_.clear();
  write_load_stat(writer_, stat);
  send(slot, "load", now);
}

void ZmqLoadSink::publish_forward_pass(std::size_t slot, Clock::time_point now) {
  Progress& p = progress_[slot];
  RankState& rank = ranks_[slot];
  ForwardPass pass;
  FpmRecord record;
  const auto write_and_send = [&] {
    pass.worker_id = options_.worker_id;
    pass.dp_rank = rank_of(slot) < 0 ? 0 : static_cast<uint64_t>(rank_of(slot));
    pass.counter_id = publisher_.next_sequence(offset_of(slot));
    writer_.clear();
    write_forward_pass(writer_, pass);
    send(slot, "", now);
  };
  while (rank.take_fpm(record)) {
    pass.values = record.values;
    pass.wall_time = record.wall_time;
    write_and_send();
  }
  const RankSnapshot snapshot = rank.snapshot();
  const bool counts_only = !snapshot.fpm_seen && !options_.require_full_fpm;
  const uint64_t version = rank.version();
  if (version != p.sent_version) {
    p.sent_version = version;
    if (counts_only) {
      pass = counts_only_forward_pass(snapshot);
      write_and_send();
    }
  }
  if (now - p.last_sent >= options_.heartbeat) {
    // Idle: no iteration scheduled anything. Counts-only, the counts stay
    // (a router must not read a busy rank as empty).
    pass = counts_only ? counts_only_forward_pass(snapshot) : ForwardPass{};
    pass.wall_time = 0.0;
    write_and_send();
  }
}

// Sends the writer's payload on slot's socket; settles the rank's events:
// sent when the message went out (a subscriber at its high-water mark that
// missed it is a retry: the next change or heartbeat carries the state
// again), lost when it could not be sent at all.
bool ZmqLoadSink::send(std::size_t slot, std::string_view topic, Clock::time_point now) {
  progress_[slot].last_sent = now;  // a failed send waits for the next heartbeat too
  plugin::DeliveryFigures& figures = account_.figures();
  const uint64_t events = ranks_[slot].take_events();
  std::string why;
  const ZmqPublisher::Sent sent =
      writer_.ok() ? publisher_.send(offset_of(slot), topic, writer_.data(), writer_.size(), why)
                   : ZmqPublisher::Sent::kFailed;
  progress_[slot].last_ok = sent != ZmqPublisher::Sent::kFailed;
  if (sent == ZmqPublisher::Sent::kFailed) {
    figures.lost += events;
    send_failures_.fetch_add(1, std::memory_order_relaxed);
    log_.report(TSM_LOG_ERROR, "send failed",
                "rank " + std::to_string(rank_of(slot)) + ": send failed: " +
                    (writer_.ok() ? why : std::string("message larger than its buffer")));
    return false;
  }
  messages_sent_.fetch_add(1, std::memory_order_relaxed);
  figures.sent += events;
  if (sent == ZmqPublisher::Sent::kMissedBySome) {
    ++figures.retries;
    const uint64_t total = messages_dropped_.fetch_add(1, std::memory_order_relaxed) + 1;
    log_.report(TSM_LOG_WARNING, "high-water mark",
                "a subscriber of rank " + std::to_string(rank_of(slot)) +
                    " is at its high-water mark and missed a message (" + std::to_string(total) +
                    " missed in total; the others got them)");
  }
  return true;
}

void ZmqLoadSink::report_figures() {
  plugin::DeliveryFigures& figures = account_.figures();
  figures.sent += other_events_.exchange(0, std::memory_order_acq_rel);
  figures.refused = events_invalid_.load(std::memory_order_relaxed) +
                    fpm_commits_dropped_.load(std::memory_order_relaxed);
  account_.report();
}

ZmqLoadFigures ZmqLoadSink::figures() const noexcept {
  ZmqLoadFigures out;
  out.messages_sent = messages_sent_.load(std::memory_order_relaxed);
  out.messages_dropped = messages_dropped_.load(std::memory_order_relaxed);
  out.send_failures = send_failures_.load(std::memory_order_relaxed);
  out.bind_failures = bind_failures_.load(std::memory_order_relaxed);
  out.events_invalid = events_invalid_.load(std::memory_order_relaxed);
  out.fpm_commits_dropped = fpm_commits_dropped_.load(std::memory_order_relaxed);
  return out;
}

void ZmqLoadSink::close(std::chrono::nanoseconds /*timeout: sends never wait*/) {
  if (closed_) return;
  closed_ = true;
  stopping_.store(true);
  wake();
  if (thread_.joinable()) thread_.join();  // its last pass sends what changed
  // What is still pending was carried by a rank's last message, or is an
  // fpm gauge value no commit followed: sent when that message went out,
  // lost when that send failed or the rank's port never bound.
  plugin::DeliveryFigures& figures = account_.figures();
  for (std::size_t slot = 0; slot <= unset_slot_; ++slot)
    (progress_[slot].last_ok ? figures.sent : figures.lost) += ranks_[slot].take_events();
  report_figures();
  log_.flush(TSM_LOG_WARNING, "at close");
  const std::string summary =
      account_.close_summary(options_.endpoint.text,
                             "a wrong operation, not finite, a rank label that is no rank, or "
                             "fpm commits beyond the ring between two sends",
                             "a send that failed, or a port that did not bind");
  if (!summary.empty()) log_.report(TSM_LOG_WARNING, "close summary", summary);
}

}  // namespace tokenspeed::metrics::zmq_load
