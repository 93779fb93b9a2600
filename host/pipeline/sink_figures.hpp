// sink_figures.hpp — what one output's delivery did: the fate of every event
// offered to it, its state, and what its plugin reported. Read by the
// summary, /metrics and the isolation layer without the delivery thread itself.
// Tested in test/unit/pipeline/event_router_test.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pipeline/plugin_figures.hpp"

namespace tokenspeed::metrics {

// Per-sink accounting. Every event offered to the sink (accepted) has exactly
// one fate:
//   accepted = delivered + dropped_ring_full + dropped_sink_disabled
//              + dropped_after_close + discarded_at_deadline + lost_in_helper + queue_depth
// queue_depth (in a ring, or inside an emit call that has not returned) is zero
// once close() has returned: what remained then is discarded_at_deadline.
struct SinkFigures {
  std::string name;
  std::uint64_t accepted = 0;               // offered by a collector thread
  std::uint64_t delivered = 0;              // emit returned 0
  std::uint64_t dropped_ring_full = 0;      // the thread's ring was full
  std::uint64_t dropped_sink_disabled = 0;  // sink disabled or never created;
                                            // includes the event whose emit failed
  std::uint64_t dropped_after_close = 0;    // offered after close() began
  std::uint64_t discarded_at_deadline = 0;  // still queued (or in emit) at the deadline
  std::uint64_t queue_depth = 0;            // not yet resolved
  std::uint64_t lost_in_helper = 0;         // isolated: inside a sink helper that crashed or hung
  std::uint64_t helper_restarts = 0;        // isolated: sink helpers restarted
  bool isolated = false;                    // the sink runs in a helper process
  bool created = false;                     // create_sink returned success
  bool create_failed = false;               // create_sink failed (never retried)
  bool disabled = false;                    // emit failed, or create_sink failed
  bool closed = false;                      // the plugin's close returned (or no sink to close)
  bool close_failed = false;                // close returned nonzero or threw
  bool abandoned = false;                   // the delivery thread missed the deadline; left running
  std::string abandoned_in;                 // when abandoned: the plugin call it was in
                                            // ("emit", "create_sink", "close"), or ""
  std::uint64_t wakeups = 0;                // futex wake calls (collector threads; one by close)
  std::uint64_t parks = 0;                  // times the delivery thread went to sleep
  // The delivery thread is parked, or about to be: the next event wakes it
  // (counted in wakeups). A park can also end before it sleeps, when an event
  // comes in between, so parks and wakeups alone do not say it is parked.
  bool parked = false;
  // What the plugin reported of the events it accepted (sent to its back
  // end, refused by its own limits, lost, retries, pending); not part of the
  // host's accounting above, which ends where the plugin's emit returned.
  PluginFigures plugin;
};

// The counts and states of SinkFigures by name, each listed once: the
// summary file writes and reads them under these names.
struct SinkFiguresCount {
  std::string_view name;
  std::uint64_t SinkFigures::*field;
};
inline constexpr SinkFiguresCount kSinkFiguresCounts[] = {
    {"accepted", &SinkFigures::accepted},
    {"delivered", &SinkFigures::delivered},
    {"dropped_ring_full", &SinkFigures::dropped_ring_full},
    {"dropped_sink_disabled", &SinkFigures::dropped_sink_disabled},
    {"dropped_after_close", &SinkFigures::dropped_after_close},
    {"discarded_at_deadline", &SinkFigures::discarded_at_deadline},
    {"lost_in_helper", &SinkFigures::lost_in_helper},
    {"helper_restarts", &SinkFigures::helper_restarts},
};
struct SinkFiguresState {
  std::string_view name;
  bool SinkFigures::*field;
};
inline constexpr SinkFiguresState kSinkFiguresStates[] = {
    {"isolated", &SinkFigures::isolated},           {"disabled", &SinkFigures::disabled},
    {"create_failed", &SinkFigures::create_failed}, {"close_failed", &SinkFigures::close_failed},
    {"abandoned", &SinkFigures::abandoned},
};

}  // namespace tokenspeed::metrics
