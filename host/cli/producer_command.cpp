// producer_command.cpp — `tokenspeed-metrics producer`: one producer process of
// the simulated engine, started by `simulate`, over the host's ProducerRuntime (the
// launcher's handoff, the plugins again, never validate or start_node). It
// records its role's metrics, follows its launcher, and on SIGTERM drains its
// sinks within its budget and exits.
// Tested in test/cli/test_launcher.py (every producer the launcher spawns).
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <thread>
#include <utility>

#include <boost/program_options/options_description.hpp>

#include "config/metrics_flags.hpp"
#include "cli/simulation_options.hpp"
#include "process/fatal_signal_handler.hpp"
#include "process/producer_runtime.hpp"
#include "process/producer_handoff.hpp"
#include "core/startup_error.hpp"

namespace tokenspeed::metrics::cli {
namespace {

namespace po = boost::program_options;

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

  // The handoff, the plugins again (never validate or start_node), this
  // process's metrics and its figures once a second. A full base directory:
  // the producer records on, its series in memory and counted, as an
  // engine's producer does.
  ProducerOptions options;
  options.name = process_name;
  options.handoff = handoff;
  ProducerRuntime producer(std::move(options));

  std::atomic<bool> stop{false};
  Recorder recorder(&producer.pipeline().collector());
  std::thread workload([&] {
    if (role == "scheduler") {
      SchedulerSimulator(recorder, simulation, dp_rank).run(stop);
    } else {
      FrontendSimulator(recorder, simulation).run(stop);
    }
  });

  // The control thread follows its launcher and waits for SIGTERM; the
  // producer publishes its figures on a thread of its own.
  const timespec tick{1, 0};
  for (;;) {
    if (::getppid() != launcher) break;  // reparented: the launcher is gone
    const int received = ::sigtimedwait(&stop_signals, nullptr, &tick);
    if (received == SIGTERM) break;
  }
  stop.store(true);
  workload.join();
  producer.close();
  // Abandoned plugin threads (a sink that ignored its timeout) must not hold
  // the process: leave without running static destructors.
  std::fflush(nullptr);
  ::_exit(0);
}

}  // namespace tokenspeed::metrics::cli
