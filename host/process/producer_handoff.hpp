// producer_handoff.hpp — the plain JSON a launcher hands to each producer
// process: the selected outputs with their copied producer configurations and
// what a producer needs to rebuild its metrics side. It crosses spawn through
// an inherited, sealed memfd named by an environment variable — never argv,
// which other users can read. Startup only.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

#include <boost/json/object.hpp>

#include "config/isolation_settings.hpp"
#include "config/metric_views.hpp"
#include "core/series_bound.hpp"

namespace tokenspeed::metrics {

// The environment variable that names the inherited descriptor (producers
// the launcher spawns itself).
inline constexpr const char* kHandoffFdEnv = "TOKENSPEED_METRICS_HANDOFF_FD";
// The environment variable that names the handoff file in the run directory
// (0600 in the 0700 directory), for producers an engine starts itself.
inline constexpr const char* kHandoffFileEnv = "TOKENSPEED_METRICS_HANDOFF_FILE";
// Set to "1" for the producers of a launcher whose metrics are disabled.
inline constexpr const char* kMetricsDisabledEnv = "TOKENSPEED_METRICS_DISABLED";

struct ProducerOutput {
  std::string name;                     // the selected output
  boost::json::object producer_config;  // start_node's result, or the normalized config
  IsolationSettings isolation{};        // where its sink runs
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
  // --metrics-max-series-per-family: series one family may hold in a process.
  std::size_t max_series_per_family = kDefaultMaxSeriesPerFamily;
  // --metrics-node-name ("" the host name): the node of every process's identity.
  std::string node_name;
  // The launcher as its producers see it (its pid in the PID namespace they
  // share with it): a producer follows this process, not "parent is 1",
  // which is a live launcher in a container without an init process. 0 in
  // a handoff being built: the process that writes it, the launcher, fills
  // in its own pid. 0 when read: unknown (a handoff without the field).
  pid_t launcher_pid = 0;
  // --metrics-views: the launcher's views as it read them, so every process
  // applies the same; null when none.
  std::shared_ptr<const MetricViews> views;
};

boost::json::object handoff_to_json(const ProducerHandoff& handoff);
// Throws StartupError (key named) when a field is missing or of the wrong type.
ProducerHandoff handoff_from_json(const boost::json::object& json);

// Both writers record the writing process (the launcher) as launcher_pid
// when that is 0.
//
// Writes the handoff into a new sealed memfd (not close-on-exec) and returns
// the descriptor; the caller passes it to the child and then closes it.
// Throws std::system_error.
int write_handoff_memfd(const ProducerHandoff& handoff);

// Writes the handoff into a new file (0600, never an existing one or a
// link). Throws std::system_error.
void write_handoff_file(const std::filesystem::path& path, const ProducerHandoff& handoff);

// Reads the handoff of this process from the descriptor named by
// TOKENSPEED_METRICS_HANDOFF_FD (closing it), or else from the file named by
// TOKENSPEED_METRICS_HANDOFF_FILE. Throws StartupError when neither is set,
// the file is not this user's private file, or the content is not a valid
// handoff.
ProducerHandoff read_handoff_from_environment();

// True when the launcher's metrics are disabled (TOKENSPEED_METRICS_DISABLED=1
// and no handoff): a producer then records nothing.
bool metrics_disabled_in_environment() noexcept;

}  // namespace tokenspeed::metrics
