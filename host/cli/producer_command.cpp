// producer_command.cpp — `tokenspeed-metrics producer`: one producer process of
// the simulated engine, started by `simulate`. It reads the launcher's
// handoff, registers the plugins again (once per process), records its role's
// metrics, and on SIGTERM drains its sinks within its budget and exits.
// Never runs validate or start_node.
// Tested in test/cli/test_launcher.py (every producer the launcher spawns).
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <thread>

#include <boost/program_options/options_description.hpp>

#include "config/metrics_flags.hpp"
#include "cli/simulation_options.hpp"
#include "plugin/plugin_loader.hpp"
#include "process/fatal_signal_handler.hpp"
#include "process/process_metrics.hpp"
#include "process/process_summary.hpp"
#include "process/producer_handoff.hpp"
#include "core/startup_error.hpp"

namespace tokenspeed::metrics::cli {
namespace {

namespace po = boost::program_options;

void warn(const std::string& line) {
  std::fprintf(stderr, "tokenspeed-metrics: warning: %s\n", line.c_str());
}

}  // namespace

int run_producer(int argc, char** argv) {
  // SIGTERM is taken with sigwait; Ctrl-C on the terminal reaches the whole
  // process group, but only the launcher decides when producers stop.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGINT, SIG_IGN);
  // A producer never outlives its launcher: the kernel sends SIGTERM when it
  // dies, and a launcher that died before this line is caught below by the
  // parent pid changing (reparented to a reaper).
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  const pid_t parent_at_start = ::getppid();

  po::options_description description("options");
  description.add_options()("help,h", "show this help")("role", po::value<std::string>(),
                                                        "scheduler or frontend (required)")(
      "dp-rank", po::value<int>()->default_value(0), "data-parallel rank of a scheduler");
  add_simulation_options(description);
  const po::variables_map values = parse_command_line(argc, argv, description);
  if (values.count("help") != 0) {
    std::cout << usage("producer", "--role scheduler|frontend [--dp-rank N] [simulation flags]",
                       description)
              << "\nA producer process of `simulate`; it receives the metrics configuration "
                 "from its\nlauncher through the descriptor named by "
              << kHandoffFdEnv << ".\n";
    return 0;
  }
  if (values.count("role") == 0) {
    throw StartupError({"", "", "--role"}, "the option '--role' is required but missing");
  }
  const std::string role = values["role"].as<std::string>();
  const int dp_rank = values["dp-rank"].as<int>();
  if (role != "scheduler" && role != "frontend") {
    throw StartupError({"", "", "--role"}, "must be scheduler or frontend");
  }
  const std::string process_name =
      role == "scheduler" ? "scheduler-" + std::to_string(dp_rank) : role;
  install_fatal_signal_handler(process_name);  // crash lines name this process
  const SimulationOptions simulation = simulation_options_from(values);
  const ProducerHandoff handoff = read_handoff_from_environment();
  // Followed by identity, never by "parent is 1": in a container without an
  // init process the live launcher is pid 1.
  const pid_t launcher = handoff.launcher_pid != 0 ? handoff.launcher_pid : parent_at_start;

  // Register the plugins again in this process; never validate or start_node.
  ReporterRegistry registry;
  std::unique_ptr<PluginLoader> loader;
  if (!handoff.outputs.empty()) {
    PluginSearchOptions search;
    search.plugin_dirs = handoff.plugin_dirs;
    search.disabled_plugins = handoff.disabled_plugins;
    search.allow_insecure = handoff.allow_insecure_plugins;
    search.warn_unmatched_disabled = false;  // the launcher already said so
    loader = std::make_unique<PluginLoader>(registry, warn);
    loader->load(search);
  }
  RouterOptions router;
  router.queue_size = handoff.queue_size;
  // A full base directory: the producer records on, its series in memory
  // and counted, as an engine's worker does (worker.cpp).
  ProcessMetrics metrics(registry, {handoff.outputs, handoff.run_dir, process_name, router,
                                    handoff.max_series_per_family, handoff.node_name,
                                    /*keep_in_memory_without_file=*/true});

  std::atomic<bool> stop{false};
  Recorder recorder(&metrics.collector());
  std::thread workload([&] {
    if (role == "scheduler") {
      SchedulerSimulator(recorder, simulation, dp_rank).run(stop);
    } else {
      FrontendSimulator(recorder, simulation).run(stop);
    }
  });

  const timespec tick{1, 0};
  for (;;) {
    if (::getppid() != launcher) break;  // reparented: the launcher is gone
    const int received = ::sigtimedwait(&stop_signals, nullptr, &tick);
    if (received == SIGTERM) break;
    metrics.publish_self_figures();
  }
  stop.store(true);
  workload.join();
  metrics.close(handoff.shutdown_budget);
  if (!handoff.run_dir.empty()) {
    write_process_summary(handoff.run_dir, {process_name, ::getpid(), metrics.sink_stats()});
  }
  // Abandoned plugin threads (a sink that ignored its timeout) must not hold
  // the process: leave without running static destructors.
  std::fflush(nullptr);
  ::_exit(0);
}

}  // namespace tokenspeed::metrics::cli
