// output_definition.hpp — one external output as the router is given it: its
// name and the factory of its process-local sink. What isolation/ and
// process/ hand the pipeline, without the delivery thread that runs it.
// Tested in test/unit/pipeline/event_router_test.cpp.
#pragma once

#include <functional>
#include <string>

#include <tokenspeed/metric_reporter.h>

#include "pipeline/sink_figures.hpp"

namespace tokenspeed::metrics {

// One external output as the router sees it: a name and the factory of its
// process-local sink. create_sink fills out (vtable, self) and returns TSM_OK,
// or returns nonzero with a message in error, having released what it
// allocated. It is called at most once, on the output's delivery thread.
struct OutputDefinition {
  std::string name;
  std::function<int(tsm_sink& out, std::string& error)> create_sink;
  std::string plugin_path;  // the plugin file, for crash and stall lines ("" unknown)
  std::function<void(SinkFigures&)> adjust_figures{};  // an isolated sink's own fates, or empty
};

}  // namespace tokenspeed::metrics
