// statsd_sink.cpp — what the statsd output does with the kit: per-flush
// aggregation of counters and gauges, observations as timers or
// distributions, packing and non-blocking sends, and its log lines. Socket
// I/O only on the delivery thread.
#include "statsd_sink.hpp"

#include <cmath>
#include <stdexcept>

namespace tokenspeed::metrics::statsd {
namespace {

bool operation_fits(uint32_t kind, uint32_t operation) noexcept {
  return (kind == TSM_KIND_COUNTER && operation == TSM_OP_INC) ||
         (kind == TSM_KIND_GAUGE && operation == TSM_OP_SET) ||
         (kind == TSM_KIND_HISTOGRAM && operation == TSM_OP_OBSERVE);
}

bool in_seconds(const char* unit) noexcept {
  return unit != nullptr && (std::string_view(unit) == "seconds" || std::string_view(unit) == "s");
}

kit::AggregationOptions aggregation_options(const StatsdOptions& options) {
  kit::AggregationOptions out;
  out.temporality = kit::Temporality::kDelta;
  out.max_series = options.max_series;
  return out;
}

kit::DeliveryOptions delivery_options(const StatsdOptions& options) {
  kit::DeliveryOptions out;
  out.interval = options.flush_interval;
  out.attempt_timeout = std::chrono::milliseconds(1000);
  out.recollect_on_retry = false;  // delta data; send never asks for a retry anyway
  out.max_pending = 16;
  return out;
}

}  // namespace

StatsdSink::StatsdSink(StatsdOptions options, const plugin::Host& host)
    : options_(std::move(options)),
      log_(host, options_.log_interval),
      aggregator_(aggregation_options(options_)),
      socket_(options_.address, options_.dns_refresh),
      packer_(options_.max_datagram_bytes),
      account_(host),
      loop_(delivery_options(options_),
            kit::DeliveryLoop<DatagramBatch>::Callbacks{
                [this](std::vector<DatagramBatch>& out, bool final) { collect(out, final); },
                [this](const DatagramBatch& batch,
                       kit::DeliveryLoop<DatagramBatch>::Clock::time_point,
                       const std::atomic<bool>*) { return send(batch); },
                {},
                {},
                {},
            }) {
  text_.reserve(std::min<std::size_t>(options_.max_buffer_bytes, 1 << 16));
  spare_.reserve(text_.capacity());
  loop_.start();
}

StatsdSink::~StatsdSink() {
  if (!closed_) loop_.close(std::chrono::nanoseconds(0));
}

void StatsdSink::emit(const tsm_metric_event& event) noexcept {
  const tsm_metric_info* info = event.info;
  if (info == nullptr || !operation_fits(info->kind, event.operation) ||
      !std::isfinite(event.value) || (event.operation == TSM_OP_INC && event.value < 0) ||
      event.weight == 0) {
    events_invalid_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (options_.aggregate && info->kind != TSM_KIND_HISTOGRAM) {
    if (aggregator_.add(event) == kit::Aggregator::Added::kAccepted)
      events_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  LineType type = LineType::kCounter;
  double value = event.value;
  if (info->kind == TSM_KIND_GAUGE) type = LineType::kGauge;
  if (info->kind == TSM_KIND_HISTOGRAM) {
    if (options_.format.flavour == Flavour::kDogstatsd) {
      type = LineType::kDistribution;
    } else {
      type = LineType::kTimer;
      if (in_seconds(info->unit)) value *= 1000.0;
    }
  }
  LabelView labels;
  labels.count = event.label_count;
  labels.names = event.label_names;
  labels.values = event.label_values;
  bool flush_early = false;
  {
    std::lock_guard lock(text_mutex_);
    const std::size_t before = text_.size();
    // A plain-StatsD timer repeats its value weight times: refuse it before
    // it can grow the buffer past its bound.
    const bool too_big =
        type == LineType::kTimer && event.weight > (options_.max_buffer_bytes - before) / 4;
    try {
      if (!too_big) {
        append_line(text_, options_.format, event.metric != nullptr ? event.metric : "", labels,
                    type, value, event.weight);
        text_ += '\n';
      }
    } catch (...) {  // out of memory: the line is incomplete, so it is counted below
    }
    if (too_big || text_.size() > options_.max_buffer_bytes || text_.empty() ||
        text_.back() != '\n') {
      text_.resize(before);
      events_buffer_full_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    flush_early = text_.size() >= options_.max_buffer_bytes / 2;
  }
  events_.fetch_add(1, std::memory_order_relaxed);
  if (flush_early) loop_.request_export();
}

void StatsdSink::collect(std::vector<DatagramBatch>& out, bool /*final*/) {
  {
    std::lock_guard lock(text_mutex_);
    text_.swap(spare_);
  }
  DatagramBatch batch;
  // The events of this flush: every line swapped out above was counted
  // before its emit returned (one counted late goes with the next flush).
  const uint64_t events = events_.load(std::memory_order_acquire);
  batch.events = events - collected_events_;
  collected_events_ = events;
  if (options_.aggregate) {
    const kit::Snapshot snapshot = aggregator_.collect(kit::unix_time_ns());
    for (const kit::Point& point : snapshot.points) {
      const kit::SeriesFamily& family = *point.family;
      LabelView labels;
      labels.count = static_cast<uint32_t>(family.label_names.size());
      labels.name_strings = family.label_names.data();
      labels.value_strings = point.label_values->data();
      scratch_.clear();
      append_line(scratch_, options_.format, family.name, labels,
                  family.kind == TSM_KIND_GAUGE ? LineType::kGauge : LineType::kCounter,
                  point.value, 1);
      packer_.add_lines(scratch_, batch.datagrams);
    }
  }
  packer_.add_lines(spare_, batch.datagrams);
  packer_.finish(batch.datagrams);
  spare_.clear();
  lines_oversized_.store(packer_.oversized_lines(), std::memory_order_relaxed);
  batch.oversized_bytes = packer_.take_oversized_bytes();
  if (!batch.datagrams.empty())
    out.push_back(std::move(batch));
  else if (batch.oversized_bytes > 0)
    events_oversized_ += batch.events;  // every line was longer than a datagram
  else
    account_.figures().lost += batch.events;
  report();
  report_figures();
}

kit::SendResult StatsdSink::send(const DatagramBatch& batch) {
  std::string why;
  uint64_t dropped = 0;
  std::vector<bool> sent(batch.datagrams.size(), false);
  if (!socket_.prepare(DatagramSocket::Clock::now(), why)) {
    dropped = batch.datagrams.size();
  } else {
    for (std::size_t i = 0; i < batch.datagrams.size(); ++i) {
      const std::string& datagram = batch.datagrams[i];
      const DatagramSocket::Outcome outcome = socket_.send(datagram, why);
      if (outcome == DatagramSocket::Outcome::kSent) {
        sent[i] = true;
        datagrams_sent_.fetch_add(1, std::memory_order_relaxed);
        bytes_sent_.fetch_add(datagram.size(), std::memory_order_relaxed);
      } else if (outcome == DatagramSocket::Outcome::kDropped) {
        ++dropped;
      } else {
        dropped += batch.datagrams.size() - i;
        break;
      }
    }
  }
  // The flush's events, shared by size among its datagrams and the lines
  // left out for being longer than a datagram (those are refused).
  std::vector<std::size_t> sizes;
  for (const std::string& datagram : batch.datagrams) sizes.push_back(datagram.size());
  if (batch.oversized_bytes > 0) sizes.push_back(batch.oversized_bytes);
  const std::vector<uint64_t> shares = kit::share_events(batch.events, sizes);
  plugin::DeliveryFigures& figures = account_.figures();
  for (std::size_t i = 0; i < batch.datagrams.size(); ++i)
    (sent[i] ? figures.sent : figures.lost) += shares[i];
  if (batch.oversized_bytes > 0) events_oversized_ += shares.back();
  report_figures();
  if (dropped > 0) {
    last_failure_ = why;
    const uint64_t total =
        datagrams_dropped_.fetch_add(dropped, std::memory_order_relaxed) + dropped;
    log_.report(TSM_LOG_WARNING, "datagrams dropped",
                std::to_string(dropped) + " of " + std::to_string(batch.datagrams.size()) +
                    " datagrams dropped: " + why + " (" + std::to_string(total) +
                    " dropped in total)");
  }
  return kit::SendResult::delivered();  // datagrams are never retried
}

void StatsdSink::report_figures() {
  const StatsdSinkFigures now = figures();
  plugin::DeliveryFigures& figures = account_.figures();
  figures.refused =
      now.events_buffer_full + now.events_over_series + now.events_invalid + events_oversized_;
  const uint64_t settled = figures.sent + figures.lost + events_oversized_;
  figures.pending = now.events > settled ? now.events - settled : 0;
  account_.report();
}

void StatsdSink::report() {
  const StatsdSinkFigures now = figures();
  kit::AggregationFigures refused;
  refused.over_series_limit = now.events_over_series;
  refused.invalid = now.events_invalid;
  refused_.report(refused, options_.max_series, log_);
  if (now.events_buffer_full > reported_.events_buffer_full) {
    log_.report(TSM_LOG_WARNING, "buffer full",
                std::to_string(now.events_buffer_full - reported_.events_buffer_full) +
                    " events dropped: more than max_buffer_bytes=" +
                    std::to_string(options_.max_buffer_bytes) + " waited for a flush");
  }
  if (now.lines_oversized > reported_.lines_oversized) {
    log_.report(TSM_LOG_WARNING, "oversized lines",
                std::to_string(now.lines_oversized - reported_.lines_oversized) +
                    " lines dropped: longer than max_datagram_bytes=" +
                    std::to_string(options_.max_datagram_bytes));
  }
  reported_ = now;
}

StatsdSinkFigures StatsdSink::figures() const noexcept {
  StatsdSinkFigures out;
  const kit::AggregationFigures aggregation = aggregator_.figures();
  out.events = events_.load(std::memory_order_relaxed);
  out.events_buffer_full = events_buffer_full_.load(std::memory_order_relaxed);
  out.events_over_series = aggregation.over_series_limit;
  out.events_invalid = events_invalid_.load(std::memory_order_relaxed) + aggregation.invalid;
  out.lines_oversized = lines_oversized_.load(std::memory_order_relaxed);
  out.datagrams_sent = datagrams_sent_.load(std::memory_order_relaxed);
  out.datagrams_dropped = datagrams_dropped_.load(std::memory_order_relaxed);
  out.bytes_sent = bytes_sent_.load(std::memory_order_relaxed);
  return out;
}

std::string StatsdSink::loss_summary() const {
  const StatsdSinkFigures s = figures();
  std::string out;
  const auto add = [&](uint64_t n, const char* what) {
    if (n == 0) return;
    if (!out.empty()) out += ", ";
    out += std::to_string(n) + " " + what;
  };
  add(s.datagrams_dropped, "datagrams dropped");
  add(s.events_buffer_full, "events dropped (buffer full)");
  add(s.events_over_series, "events dropped (series limit)");
  add(s.lines_oversized, "lines longer than max_datagram_bytes");
  return out;
}

void StatsdSink::close(std::chrono::nanoseconds timeout) {
  if (closed_) return;
  closed_ = true;
  loop_.close(timeout);
  report();
  {  // what never went out (a flush dropped at close's deadline) is lost
    plugin::DeliveryFigures& figures = account_.figures();
    const uint64_t events = events_.load(std::memory_order_acquire);
    const uint64_t settled = figures.sent + figures.lost + events_oversized_;
    if (events > settled) figures.lost += events - settled;
    report_figures();
  }
  log_.flush(TSM_LOG_WARNING, "at close");
  const std::string summary = account_.close_summary(
      options_.address.text,
      "invalid, over max_series, over max_buffer_bytes or lines longer than a datagram",
      "datagrams not sent");
  if (!summary.empty()) log_.report(TSM_LOG_WARNING, "close summary", summary);
  const std::string lost = loss_summary();
  if (!lost.empty()) {
    throw std::runtime_error("data lost on the way to " + options_.address.text + ": " + lost +
                             (last_failure_.empty() ? "" : "; last failure: " + last_failure_));
  }
}

}  // namespace tokenspeed::metrics::statsd
