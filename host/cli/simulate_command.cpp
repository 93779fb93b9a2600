// simulate_command.cpp — `tokenspeed-metrics simulate`: the simulated engine. A
// launcher with one scheduler producer per data-parallel rank and one
// frontend producer, the metrics flags of a real engine, a live status line
// on a terminal and a summary table per output and process at exit.
// Tested in test/cli/test_launcher.py.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>

#include <boost/program_options/options_description.hpp>

#include "cli/commands.hpp"
#include "cli/simulation_options.hpp"
#include "config/metrics_flags.hpp"
#include "cli/startup_signal_watch.hpp"
#include "process/fatal_signal_handler.hpp"
#include "process/launcher_runtime.hpp"
#include "process/orphan_reaper.hpp"
#include "process/producer_exit.hpp"
#include "prometheus/prometheus_output.hpp"
#include "core/startup_error.hpp"

namespace tokenspeed::metrics::cli {
namespace {

namespace po = boost::program_options;

constexpr const char* kSynopsis =
    "[--ranks N] [--duration SECONDS] [simulation flags] [metrics flags]";

std::string self_executable() {
  char path[4096];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) throw std::runtime_error("cannot find the tokenspeed-metrics executable");
  return std::string(path, static_cast<std::size_t>(n));
}

std::string format_seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", seconds);
  return text;
}

std::vector<ProducerSpec> producer_specs(int ranks, const SimulationOptions& simulation) {
  const std::string exe = self_executable();
  const std::vector<std::string> shared = simulation_arguments(simulation);
  std::vector<ProducerSpec> specs;
  for (int rank = 0; rank < ranks; ++rank) {
    ProducerSpec spec{"scheduler-" + std::to_string(rank),
                      {exe, "producer", "--role", "scheduler", "--dp-rank", std::to_string(rank)}};
    spec.argv.insert(spec.argv.end(), shared.begin(), shared.end());
    specs.push_back(std::move(spec));
  }
  ProducerSpec frontend{"frontend", {exe, "producer", "--role", "frontend"}};
  frontend.argv.insert(frontend.argv.end(), shared.begin(), shared.end());
  specs.push_back(std::move(frontend));
  return specs;
}

// What the node does when a producer ends before it was asked to.
enum class CrashPolicy { stop, keep_running };

CrashPolicy crash_policy_from(const std::string& value) {
  if (value == "stop") return CrashPolicy::stop;
  if (value == "continue") return CrashPolicy::keep_running;
  throw StartupError({"", "", "--on-producer-crash"},
                     "must be stop or continue, not '" + value + "'");
}

void report_producer_exit(const ProducerProcess& process) {
  // "crashed: killed by SIGSEGV (segmentation fault)" or "exited with status 3"
  const std::string how =
      producer_crashed(process) ? producer_row_status(process) : describe_producer_exit(process);
  std::fprintf(stderr, "tokenspeed-metrics: producer '%s' (pid %d) %s\n", process.name.c_str(),
               static_cast<int>(process.pid), how.c_str());
}

// The exit status of the run: a crashed producer first, then any failed
// output or a producer that had to be killed or ended on its own, then an
// output whose plugin lost events.
int run_exit_status(const LauncherShutdownReport& report) {
  bool crashed = false;
  bool failed = false;
  bool degraded = false;
  for (const ProducerProcess& process : report.producers) {
    crashed = crashed || producer_crashed(process);
    failed = failed || process.killed || producer_ended_unexpectedly(process);
  }
  const auto judge = [&](const SinkFigures& output) {
    failed = failed || output_failed(output);
    degraded = degraded || output_degraded(output);
  };
  for (const ProcessSummary& summary : report.summaries) {
    for (const SinkFigures& output : summary.outputs) judge(output);
  }
  for (const SinkFigures& output : report.launcher_sinks) judge(output);
  if (crashed) return kExitProducerCrashed;
  if (failed) return kExitOutputFailed;
  return degraded ? kExitEventsLost : 0;
}

const char* exit_status_reason(int status) {
  if (status == kExitProducerCrashed) return "a producer crashed";
  if (status == kExitEventsLost) return "an output lost events (a degraded row in the table)";
  return "an output or a producer failed (see the table)";
}

// The simulate command's own flags, then the simulation's and the metrics flags.
po::options_description simulate_flags() {
  po::options_description description("options");
  description.add_options()("help,h", "show this help")(
      "ranks", po::value<int>()->default_value(2), "scheduler producers (data-parallel ranks)")(
      "duration", po::value<double>()->default_value(0),
      "seconds to run, at most 31536000 (a year); 0 runs until SIGINT or SIGTERM")(
      "linger", po::value<double>()->default_value(0),
      "after the run: stop the producers, then keep serving /metrics this many seconds "
      "before closing (to scrape final totals); at most 31536000 (a year)")(
      "on-producer-crash", po::value<std::string>()->default_value("stop"),
      "stop: a producer that crashes or exits on its own shuts the node down (exit status 4, "
      "or 3 for an exit); continue: keep the other processes running to --duration");
  add_simulation_options(description);
  add_metrics_flags(description);
  return description;
}

void print_help(const po::options_description& description) {
  std::cout << usage("simulate", kSynopsis, description)
            << "\nRuns a launcher with one scheduler producer per rank and a frontend producer,\n"
               "recording the engine's metric catalog. Ctrl-C stops it; a summary table per\n"
               "output and process is printed at exit.\n\nExit status: 0 clean; 1 runtime "
               "error; 2 startup error; 3 an output failed (or a\nproducer was killed at the "
               "budget or exited on its own); 4 a producer crashed; 5 an output lost events\n"
               "(a degraded row: its plugin gave some up, sending the others).\n";
}

// What the command line asks of one run.
struct SimulateRun {
  int ranks = 0;
  double duration = 0;  // seconds; 0: until a signal
  double linger = 0;    // seconds of /metrics after the producers stopped
  CrashPolicy crash_policy = CrashPolicy::stop;
  SimulationOptions simulation;
  LauncherOptions launcher;  // the checked metrics options and the producers
};

// The longest --duration and --linger: a year. Beyond some 292 years the
// conversion to the clock's nanoseconds overflows, and inf or nan would turn
// a wait into none at all; so such values are refused, naming the flag.
constexpr double kMaxRunSeconds = 365.0 * 24 * 3600;

double checked_seconds(const po::variables_map& values, const std::string& flag) {
  const double seconds = values[flag].as<double>();
  if (!(seconds >= 0 && seconds <= kMaxRunSeconds)) {
    throw StartupError({"", "", "--" + flag}, "must be between 0 and 31536000 seconds (365 days)");
  }
  return seconds;
}

SimulateRun simulate_run_from(const po::variables_map& values) {
  SimulateRun run;
  run.ranks = values["ranks"].as<int>();
  if (run.ranks < 1 || run.ranks > 64)
    throw StartupError({"", "", "--ranks"}, "must be between 1 and 64");
  run.duration = checked_seconds(values, "duration");
  run.linger = checked_seconds(values, "linger");
  run.crash_policy = crash_policy_from(values["on-producer-crash"].as<std::string>());
  run.launcher.settings = check_options(options_from_flags(values));
  run.simulation = simulation_options_from(values);
  run.launcher.producers = producer_specs(run.ranks, run.simulation);
  return run;
}

// The launcher records its own startup, as an engine's entry point does.
void record_startup(LauncherRuntime& launcher, const SimulationOptions& simulation,
                    std::chrono::steady_clock::time_point started) {
  ProcessPipeline* local = launcher.local_metrics();
  if (local == nullptr) return;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  local->collector()
      .histogram(simulated_metric("tokenspeed:func_latency_seconds", simulation))
      .labels(simulation.model_name, simulation.app_key, "launcher_startup")
      .observe(seconds);
}

// The status line on a terminal: each output's delivery rate and drops.
class LiveStatus {
 public:
  LiveStatus(const LauncherRuntime& launcher, std::string url)
      : enabled_(::isatty(STDERR_FILENO) != 0 && !launcher.run_dir().empty()),
        run_dir_(launcher.run_dir()),
        url_(std::move(url)) {}

  bool enabled() const noexcept { return enabled_; }
  // Ends the line, before anything else is written to the terminal.
  void break_line() const {
    if (enabled_) std::fprintf(stderr, "\n");
  }

  // Rewrites the line at most once a second.
  void update(std::chrono::steady_clock::time_point now) {
    if (!enabled_ || now - previous_time_ < std::chrono::seconds(1)) return;
    const double elapsed = std::chrono::duration<double>(now - previous_time_).count();
    const auto totals = delivery_totals(run_dir_);
    std::string line;
    for (const auto& [name, total] : totals) {
      const double rate = (total.delivered - previous_[name].delivered) / elapsed;
      char part[160];
      std::snprintf(part, sizeof part, "%s %.0f ev/s, %.0f dropped | ", name.c_str(), rate,
                    total.dropped);
      line += part;
    }
    line += url_.empty() ? std::string("no Prometheus endpoint") : url_;
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    previous_ = totals;
    previous_time_ = now;
  }

 private:
  bool enabled_;
  std::filesystem::path run_dir_;
  std::string url_;
  std::map<std::string, OutputDeliveryTotals> previous_;
  std::chrono::steady_clock::time_point previous_time_ = std::chrono::steady_clock::now();
};

// How the run loop ended.
struct RunEnd {
  bool stop_requested = false;  // SIGINT or SIGTERM
  bool producer_lost = false;   // a producer ended before it was asked to
};

// Runs until a signal, --duration, or (with --on-producer-crash stop) a lost
// producer; reports each producer that exits meanwhile.
RunEnd run_until_stopped(LauncherRuntime& launcher, const SimulateRun& run, sigset_t& stop_signals,
                         std::chrono::steady_clock::time_point started, LiveStatus& status,
                         bool stop_requested, OrphanReaper* orphans) {
  RunEnd end{stop_requested, false};
  while (!end.stop_requested) {
    const timespec tick{0, 250'000'000};
    const int received = ::sigtimedwait(&stop_signals, nullptr, &tick);
    if (received == SIGINT || received == SIGTERM) {
      end.stop_requested = true;
      break;
    }
    for (const ProducerProcess& exited : launcher.producers().reap()) {
      status.break_line();
      report_producer_exit(exited);
      end.producer_lost = end.producer_lost || producer_ended_unexpectedly(exited);
    }
    if (orphans != nullptr) orphans->reap();
    if (end.producer_lost && run.crash_policy == CrashPolicy::stop) {
      std::fprintf(stderr,
                   "tokenspeed-metrics: shutting the node down: a producer ended unexpectedly "
                   "(--on-producer-crash continue keeps the others running)\n");
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (run.duration > 0 && now - started >= std::chrono::duration<double>(run.duration)) break;
    status.update(now);
  }
  status.break_line();
  return end;
}

// --linger: stop the producers and keep serving /metrics a while (a signal
// ends it early). seconds is at most kMaxRunSeconds.
void linger(LauncherRuntime& launcher, double seconds, sigset_t& stop_signals,
            OrphanReaper* orphans) {
  launcher.stop_producers();
  std::cout << "producers stopped; serving /metrics for " << seconds << " s" << std::endl;
  const auto until =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(seconds));
  while (std::chrono::steady_clock::now() < until) {
    const timespec tick{0, 250'000'000};
    const int received = ::sigtimedwait(&stop_signals, nullptr, &tick);
    if (received == SIGINT || received == SIGTERM) break;
    if (orphans != nullptr) orphans->reap();
  }
}

// Shuts the node down and prints how it went: the producers that crashed
// while closing, then the summary table (or, with metrics disabled, how each
// producer ended). Returns the run's exit status.
int shut_down_and_report(LauncherRuntime& launcher, bool metrics_enabled) {
  std::cout << "shutting down..." << std::endl;
  std::vector<pid_t> reported;
  for (const ProducerProcess& process : launcher.producers().processes()) {
    if (!process.running) reported.push_back(process.pid);
  }
  const LauncherShutdownReport report = launcher.shutdown();
  // Producers that crashed while they were closing.
  for (const ProducerProcess& process : report.producers) {
    if (std::find(reported.begin(), reported.end(), process.pid) == reported.end() &&
        producer_crashed(process))
      report_producer_exit(process);
  }
  std::cout << "stopped in " << std::chrono::duration<double>(report.elapsed).count() << " s\n";
  if (!metrics_enabled) {
    // Nothing recorded, so no producer left a summary: only how each ended.
    std::cout << "metrics disabled (no --enable-metrics): nothing was recorded\n";
    for (const ProducerProcess& process : report.producers) {
      if (process.exit_status != 0)
        std::cout << "producer '" << process.name << "' (pid " << process.pid << ") "
                  << describe_producer_exit(process) << "\n";
    }
  } else if (!report.summaries.empty() || !report.producers.empty()) {
    std::cout << format_summary_table(report.summaries, report.producers);
  }
  const int status = run_exit_status(report);
  if (status != 0) {
    std::fprintf(stderr, "tokenspeed-metrics: exit status %d: %s\n", status,
                 exit_status_reason(status));
  }
  return status;
}

}  // namespace

int run_simulate(int argc, char** argv) {
  install_fatal_signal_handler("launcher");
  // Signals are taken with sigtimedwait on this thread; block them before any
  // thread exists so every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  const po::options_description description = simulate_flags();
  const po::variables_map values = parse_command_line(argc, argv, description);
  if (values.count("help") != 0) {
    print_help(description);
    return 0;
  }
  SimulateRun run = simulate_run_from(values);
  const bool metrics_enabled = run.launcher.settings.given.enable_metrics;

  const auto started = std::chrono::steady_clock::now();
  // SIGINT and SIGTERM stay effective while plugins validate and start.
  StartupSignalWatch startup_signals(stop_signals, run.launcher.settings.shutdown_timeout);
  LauncherRuntime launcher(std::move(run.launcher));
  launcher.start();
  const int startup_signal = startup_signals.finish();
  record_startup(launcher, run.simulation, started);
  const std::string url = launcher.metrics_url();
  if (!url.empty()) std::cout << "Prometheus metrics: " << url << std::endl;
  std::cout << "simulating " << run.ranks << " scheduler rank(s) and a frontend; "
            << (run.duration > 0 ? "for " + format_seconds(run.duration)
                                 : std::string("until Ctrl-C"))
            << std::endl;

  LiveStatus status(launcher, url);
  // PID 1 of a container: the node's orphans (the sink helper of a crashed
  // producer) become this process's children, and only it can reap them.
  std::optional<OrphanReaper> orphans;
  if (OrphanReaper::needed()) {
    orphans.emplace([&launcher](pid_t pid) {
      for (const ProducerProcess& producer : launcher.producers().processes()) {
        if (producer.running && producer.pid == pid) return true;
      }
      return false;
    });
  }
  OrphanReaper* const reaper = orphans ? &*orphans : nullptr;
  const RunEnd end =
      run_until_stopped(launcher, run, stop_signals, started, status, startup_signal != 0, reaper);
  if (run.linger > 0 && !end.stop_requested &&
      !(end.producer_lost && run.crash_policy == CrashPolicy::stop)) {
    linger(launcher, run.linger, stop_signals, reaper);
  }
  const int status_code = shut_down_and_report(launcher, metrics_enabled);
  std::cout.flush();
  std::fflush(nullptr);
  // A plugin thread abandoned at the deadline must not hold the process.
  ::_exit(status_code);
}

}  // namespace tokenspeed::metrics::cli
