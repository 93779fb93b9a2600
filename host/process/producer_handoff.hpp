// producer_handoff.hpp — the plain JSON a launcher hands to each producer
// process: the selected outputs with their copied producer configurations and
// what a producer needs to rebuild its metrics side. It crosses spawn through
// an inherited, sealed memfd named by an environment variable — never argv,
// which other users can read. Startup only.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

namespace tokenspeed::metrics {

// The environment variable that names the inherited descriptor.
inline constexpr const char* kHandoffFdEnv = "TOKENSPEED_METRICS_HANDOFF_FD";

struct ProducerOutput {
  std::string name;                     // the selected output
  boost::json::object producer_config;  // start_node's result, or the normalized config
};

struct ProducerHandoff {
  std::vector<ProducerOutput> outputs;  // external outputs, in selection order
  // Where the producer registers plugins again (the launcher's search, resolved).
  std::vector<std::string> plugin_dirs;
  std::string disabled_plugins;  // TOKENSPEED_DISABLE_PLUGINS as the launcher saw it
  bool allow_insecure_plugins = false;
  std::string run_dir;                          // multi-process metric files; "" when no Prometheus
  std::size_t queue_size = 0;                   // ring capacity per collector thread per output
  std::chrono::nanoseconds shutdown_budget{0};  // the producer's share of the budget
};

boost::json::object handoff_to_json(const ProducerHandoff& handoff);
// Throws StartupError (key named) when a field is missing or of the wrong type.
ProducerHandoff handoff_from_json(const boost::json::object& json);

// Writes the handoff into a new sealed memfd (not close-on-exec) and returns
// the descriptor; the caller passes it to the child and then closes it.
// Throws std::system_error.
int write_handoff_memfd(const ProducerHandoff& handoff);

// Reads the handoff of this producer from the descriptor named by
// TOKENSPEED_METRICS_HANDOFF_FD, closing it. Throws StartupError when the
// variable is missing or the content is not a valid handoff.
ProducerHandoff read_handoff_from_environment();

}  // namespace tokenspeed::metrics
