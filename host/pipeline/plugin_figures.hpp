// plugin_figures.hpp — the delivery figures a plugin reports for its sink
// (sent, refused, lost, retries, pending: tsm_delivery_figures), kept by the
// host in lock-free cells a plugin thread writes and the host's threads read.
// A cell is plain atomics, so it may live in memory shared with a sink
// helper process.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include <tokenspeed/metric_reporter.h>

namespace tokenspeed::metrics {

// What a plugin said last; reported is false while it has said nothing.
struct PluginFigures {
  bool reported = false;
  std::uint64_t sent = 0;
  std::uint64_t refused = 0;
  std::uint64_t lost = 0;
  std::uint64_t retries = 0;
  std::uint64_t pending = 0;

  // The events the plugin accounted for: sent + refused + lost + pending.
  std::uint64_t accounted() const noexcept { return sent + refused + lost + pending; }
  // Adds other's counters to these (a restarted helper's figures onto the
  // earlier helpers'); pending is other's.
  void add(const PluginFigures& other) noexcept;
};

// The counts of PluginFigures by name, each listed once (the summary file's).
struct PluginFiguresCount {
  std::string_view name;
  std::uint64_t PluginFigures::*field;
};
inline constexpr PluginFiguresCount kPluginFiguresCounts[] = {
    {"sent", &PluginFigures::sent},       {"refused", &PluginFigures::refused},
    {"lost", &PluginFigures::lost},       {"retries", &PluginFigures::retries},
    {"pending", &PluginFigures::pending},
};

// Threading: report from any plugin thread (the C callback of tsm_sink),
// read from any host thread. Counters keep their largest reported value, so
// a late report of an older total from another plugin thread changes
// nothing; pending keeps the latest.
struct PluginFiguresCell {
  std::atomic<std::uint64_t> sent{0};
  std::atomic<std::uint64_t> refused{0};
  std::atomic<std::uint64_t> lost{0};
  std::atomic<std::uint64_t> retries{0};
  std::atomic<std::uint64_t> pending{0};
  std::atomic<std::uint32_t> reported{0};

  void store(const tsm_delivery_figures& figures) noexcept;
  PluginFigures load() const noexcept;
  void reset() noexcept;  // before a new sink reports into it

  // tsm_sink.report_figures: host_sink_data is the cell.
  static void report(void* host_sink_data, const tsm_delivery_figures* figures) noexcept;
};

// Sets the host's appended fields of a sink before create_sink: the
// process identity and the figures callback into cell.
void prepare_sink(tsm_sink& sink, const tsm_process_identity* process,
                  PluginFiguresCell* cell) noexcept;

}  // namespace tokenspeed::metrics
