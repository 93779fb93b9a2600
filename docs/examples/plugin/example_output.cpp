// example_output.cpp — a minimal output plugin on the tokenspeed-metrics kit:
// its settings table, an Aggregator fed by emit, a DeliveryLoop that
// collects every interval_ms and "sends" a summary line through the host's
// log, and the delivery figures it reports to the host (what reached the
// back end). Replace send() with your protocol; everything else is what a
// real output keeps.
#include <tokenspeed/kit/aggregation.hpp>
#include <tokenspeed/kit/delivery_figures.hpp>
#include <tokenspeed/kit/delivery_loop.hpp>
#include <tokenspeed/kit/registration.hpp>
#include <tokenspeed/kit/settings.hpp>
#include <tokenspeed/metric_reporter.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace example {
namespace {

namespace kit = tokenspeed::metrics::kit;
namespace plugin = tokenspeed::metrics::plugin;

// The settings: key, type, default, min, max, description.
const kit::SettingsTable& settings_table() {
  static const kit::SettingsTable table{{
      {"interval_ms", kit::SettingType::kInteger, "10000", 100, 3600000,
       "How often the series are collected and sent."},
      {"max_series", kit::SettingType::kInteger, "10000", 1, 10000000,
       "Series kept; events of further series are refused and counted."},
  }};
  return table;
}

// What one collect produces: here, a line; a real output encodes its payload.
struct Payload {
  std::string summary;
  uint64_t events = 0;  // events folded in up to this (cumulative) collect
};

int64_t unix_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// One per producer process. emit runs on the host's worker thread, the
// delivery loop on its own; close once, after the last emit.
class ExampleSink {
 public:
  ExampleSink(const kit::Settings& settings, const plugin::Host& host)
      : host_(host),
        account_(host),
        aggregator_(aggregation_options(settings)),
        loop_(delivery_options(settings), callbacks()) {
    loop_.start();  // last: the thread uses the members above
  }

  void emit(const tsm_metric_event& event) {
    if (aggregator_.add(event) == kit::Aggregator::Added::kBatchFull) loop_.request_export();
  }

  void close(std::chrono::nanoseconds timeout) {
    if (!loop_.close(timeout)) host_.log(TSM_LOG_WARNING, "example_output: data dropped at close");
    // The loop's thread has ended: what was never sent is lost.
    const kit::AggregationFigures stats = aggregator_.figures();
    account_.figures().lost = stats.accepted - account_.figures().sent;
    report_figures();
    const std::string summary =
        account_.close_summary("the log", "over max_series or invalid", "not sent in time");
    if (!summary.empty()) host_.log(TSM_LOG_WARNING, "example_output: " + summary);
  }

 private:
  static kit::AggregationOptions aggregation_options(const kit::Settings& settings) {
    kit::AggregationOptions options;
    options.max_series = static_cast<std::size_t>(settings.integer("max_series"));
    return options;
  }
  static kit::DeliveryOptions delivery_options(const kit::Settings& settings) {
    kit::DeliveryOptions options;
    options.interval = std::chrono::milliseconds(settings.integer("interval_ms"));
    return options;
  }
  kit::DeliveryLoop<Payload>::Callbacks callbacks() {
    kit::DeliveryLoop<Payload>::Callbacks c;
    c.collect = [this](std::vector<Payload>& out, bool) {
      const kit::Snapshot snapshot = aggregator_.collect(unix_now_ns());
      if (!snapshot.points.empty())
        out.push_back({std::to_string(snapshot.points.size()) + " series", snapshot.events});
      report_figures();
    };
    c.send = [this](const Payload& payload, kit::DeliveryLoop<Payload>::Clock::time_point,
                    const std::atomic<bool>*) {
      host_.log(TSM_LOG_INFO, "example_output: " + payload.summary);  // your protocol here
      // Cumulative data: once a collect arrived, every event before it did.
      account_.figures().sent = std::max(account_.figures().sent, payload.events);
      report_figures();
      return kit::SendResult::delivered();
    };
    c.retrying = [this](const std::string&, std::chrono::milliseconds) {
      ++account_.figures().retries;
      report_figures();
    };
    return c;
  }

  // Delivery thread (then close): the totals, to the host.
  void report_figures() {
    const kit::AggregationFigures stats = aggregator_.figures();
    plugin::DeliveryFigures& figures = account_.figures();
    figures.refused = stats.over_series_limit + stats.invalid;
    figures.pending = stats.accepted - figures.sent - figures.lost;
    account_.report();
  }

  plugin::Host host_;
  kit::DeliveryAccount account_;  // delivery thread, then close
  kit::Aggregator aggregator_;
  kit::DeliveryLoop<Payload> loop_;  // last: destroyed (and joined) first
};

namespace {
std::unique_ptr<ExampleSink> create_sink(const kit::Settings& settings, const plugin::Host& host) {
  return std::make_unique<ExampleSink>(settings, host);
}
}  // namespace

TSM_KIT_REGISTER_OUTPUT(ExampleSink, "example_output", TSM_PLUGIN_VERSION, &settings_table(),
                        nullptr, create_sink)

}  // namespace example
