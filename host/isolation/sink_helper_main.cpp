// sink_helper_main.cpp — the sink helper of an isolated output: loads one
// plugin file, creates the output's sink from the producer configuration in
// the shared channel, emits what it reads from the channel and closes the
// sink when asked. A crash or hang here costs only this process; it never
// writes the host's part of the channel.
// Tested in test/unit/isolation/isolated_output_test.cpp and
// test/cli/test_isolation.py.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include <boost/json/parse.hpp>

#include "core/abi_buffer.hpp"
#include "core/process_identity.hpp"
#include "plugin/plugin_loader.hpp"
#include "plugin/reporter.hpp"
#include "plugin/reporter_registry.hpp"
#include "isolation/channel_reader.hpp"
#include "isolation/shared_channel.hpp"

namespace tsm = tokenspeed::metrics;
namespace iso = tokenspeed::metrics::isolation;

namespace {

using Clock = std::chrono::steady_clock;

struct Arguments {
  std::string plugin;
  std::string reporter;
  int channel_fd = -1;
  pid_t parent = 0;
};

bool parse_arguments(int argc, char** argv, Arguments& out) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view key = argv[i];
    const char* value = argv[i + 1];
    if (key == "--plugin") {
      out.plugin = value;
    } else if (key == "--reporter") {
      out.reporter = value;
    } else if (key == "--channel-fd") {
      out.channel_fd = std::atoi(value);
    } else if (key == "--parent-pid") {
      out.parent = static_cast<pid_t>(std::atoi(value));
    } else {
      return false;
    }
  }
  return !out.plugin.empty() && !out.reporter.empty() && out.channel_fd >= 0 && out.parent > 0;
}

void set_state(iso::ControlBlock& control, iso::HelperState state) {
  control.state.store(static_cast<std::uint32_t>(state), std::memory_order_release);
}

[[noreturn]] void fail(iso::ControlBlock& control, iso::HelperState state, int status,
                       const std::string& message) {
  iso::set_message(control, message);
  set_state(control, state);
  std::_Exit(status);
}

// Loads the one plugin file through the PluginLoader (the checks the launcher
// made: a regular ELF file of this architecture, tsm_register once, no thread
// started, nothing rejected) and returns the reporter it declares under the
// output's name, or nullptr with the reason in problem. The file's owner and
// permissions are not checked again: the launcher accepted this path (or
// --metrics-allow-insecure-plugins allowed it), and the helper is not told.
const tsm::Reporter* load_reporter(tsm::ReporterRegistry& registry, const Arguments& args,
                                   std::string& problem) {
  tsm::PluginLoader loader(registry, nullptr);
  const tsm::PluginRecord& record = loader.load_one(args.plugin, /*allow_insecure=*/true);
  if (record.status != tsm::PluginStatus::loaded) {
    problem =
        "plugin file '" + args.plugin + "' " + tsm::to_string(record.status) + ": " + record.reason;
    return nullptr;
  }
  const tsm::Reporter* reporter = registry.find(args.reporter);
  if (reporter == nullptr) {
    problem =
        "plugin file '" + args.plugin + "' does not register reporter '" + args.reporter + "'";
  }
  return reporter;
}

bool orphaned(pid_t parent) noexcept { return ::getppid() != parent; }

void beat(iso::ControlBlock& control) noexcept {
  control.heartbeat.fetch_add(1, std::memory_order_release);
}

// The producer configuration the host wrote into the channel.
boost::json::object read_config(iso::ControlBlock& control) {
  boost::system::error_code parse_error;
  const std::uint32_t size = std::min<std::uint32_t>(control.config_size, iso::kConfigBytes);
  boost::json::value value =
      boost::json::parse(std::string_view(control.config, size), parse_error);
  if (parse_error || !value.is_object()) {
    fail(control, iso::HelperState::create_failed, iso::kHelperExitUsage,
         "the producer configuration in the channel is not a JSON object");
  }
  return std::move(value.as_object());
}

// The producer the sink serves, as the host wrote it into the channel; lives
// for the rest of this process.
const tsm_process_identity* producer_identity(const iso::ControlBlock& control) {
  static const tsm::ProcessIdentityView identity([&] {
    const auto text = [](const char(&field)[iso::kIdentityTextBytes]) {
      return std::string(field, ::strnlen(field, iso::kIdentityTextBytes));
    };
    tsm::ProcessIdentity out;
    out.name = text(control.identity_name);
    out.role = text(control.identity_role);
    out.node = text(control.identity_node);
    out.rank = control.identity_rank;
    out.pid = static_cast<pid_t>(control.identity_pid);
    tsm::set_log_process_name(out.name);  // the plugin's lines name the producer
    return out;
  }());
  return identity.get();
}

// The plugin's figures of this helper, added onto those of the helpers
// before it (a restarted helper's plugin starts again from zero).
struct RestartedFigures {
  tsm::PluginFigures earlier;
  tsm::PluginFiguresCell* cell = nullptr;
};

RestartedFigures& restarted_state() {
  static RestartedFigures state;
  return state;
}

tsm::PluginFiguresCell& restarted_figures(iso::ControlBlock& control) {
  RestartedFigures& state = restarted_state();
  state.cell = &control.plugin_figures;
  state.earlier = control.plugin_figures.load();
  return control.plugin_figures;
}

void report_onto_earlier_helpers(void* /*host_sink_data*/,
                                 const tsm_delivery_figures* figures) noexcept {
  const RestartedFigures& state = restarted_state();
  if (figures == nullptr || state.cell == nullptr || figures->struct_size < sizeof(std::uint32_t))
    return;
  tsm_delivery_figures total{};
  const std::size_t size = std::min<std::size_t>(figures->struct_size, sizeof total);
  std::memcpy(&total, figures, size);
  total.struct_size = static_cast<std::uint32_t>(size);
  total.sent += state.earlier.sent;
  total.refused += state.earlier.refused;
  total.lost += state.earlier.lost;
  total.retries += state.earlier.retries;
  state.cell->store(total);
}

// Loads the plugin and creates the output's sink; exits the process with the
// reason in the channel when either fails.
tsm_sink create_output_sink(iso::ControlBlock& control, const Arguments& args,
                            tsm::ReporterRegistry& registry) {
  std::string problem;
  const tsm::Reporter* reporter = load_reporter(registry, args, problem);
  if (reporter == nullptr) {
    fail(control, iso::HelperState::create_failed, iso::kHelperExitLoadFailed, problem);
  }
  const boost::json::object config = read_config(control);
  beat(control);  // loaded; create_sink next
  tsm_sink prepared{};
  tsm::prepare_sink(prepared, producer_identity(control), &restarted_figures(control));
  prepared.report_figures = &report_onto_earlier_helpers;
  tsm::CreateSinkResult created = reporter->create_sink(config, prepared);
  if (!created.ok) {
    fail(control, iso::HelperState::create_failed, iso::kHelperExitCreateFailed, created.error);
  }
  return created.sink;
}

// The delivery loop's state: the helper's counts, mirrored into the channel.
class Delivery {
 public:
  Delivery(iso::SharedChannel& channel, const tsm_sink& sink, pid_t parent)
      : control_(channel.control()), reader_(channel), sink_(sink), parent_(parent) {
    delivered_ = control_.delivered.load(std::memory_order_relaxed);
    dropped_ = control_.dropped_sink_disabled.load(std::memory_order_relaxed);
    heartbeat_ = control_.heartbeat.load(std::memory_order_relaxed);
  }

  // Emits what the channel holds until the host asks to close and the
  // channel is empty.
  void run() {
    for (;;) {
      const iso::ReadResult result = reader_.next(event_);
      if (result == iso::ReadResult::corrupt) {
        fail(control_, iso::HelperState::starting, iso::kHelperExitCorruptRing,
             "a record in the shared channel failed validation");
      }
      if (result == iso::ReadResult::event) {
        emit_one();
        continue;
      }
      if (close_requested(std::memory_order_seq_cst) && reader_.empty()) return;
      wait_for_work();
    }
  }

 private:
  bool close_requested(std::memory_order order) const noexcept {
    return control_.close_requested.load(order) != 0;
  }

  void emit_one() {
    int rc = TSM_ERROR;
    if (!disabled_) {
      try {
        rc = sink_.vtable->emit(sink_.self, &event_, error_.get());
      } catch (...) {
        rc = TSM_ERROR;  // reported below as the emit failure that disables the sink
        error_.get()->assign(error_.get(), "an exception escaped emit", 25);
      }
    }
    if (rc == TSM_OK) {
      control_.delivered.store(++delivered_, std::memory_order_release);
    } else {
      if (!disabled_) {
        disabled_ = true;
        iso::set_message(control_, error_.empty() ? std::string("emit failed (no message)")
                                                  : "emit failed (" + error_.str() + ")");
        set_state(control_, iso::HelperState::disabled);
      }
      control_.dropped_sink_disabled.store(++dropped_, std::memory_order_release);
    }
    control_.heartbeat.store(++heartbeat_, std::memory_order_release);
  }

  // The channel is empty: spin a little, then park on the shared futex
  // (at most 100 ms) until the host writes or asks to close.
  void wait_for_work() {
    for (int i = 0; i < 64; ++i) {
      if (!reader_.empty() || close_requested(std::memory_order_relaxed)) return;
      ::sched_yield();
    }
    control_.parked.store(1, std::memory_order_seq_cst);
    if (reader_.empty() && !close_requested(std::memory_order_seq_cst)) {
      iso::shared_futex_wait(control_.parked, 1, 100'000'000);
    }
    control_.parked.store(0, std::memory_order_relaxed);
    control_.heartbeat.store(++heartbeat_, std::memory_order_release);
    if (orphaned(parent_)) std::_Exit(iso::kHelperExitOrphaned);
  }

  iso::ControlBlock& control_;
  iso::ChannelReader reader_;
  const tsm_sink sink_;
  const pid_t parent_;
  tsm::AbiBuffer error_;
  tsm_metric_event event_{};
  bool disabled_ = false;
  std::uint64_t delivered_ = 0;
  std::uint64_t dropped_ = 0;
  std::uint64_t heartbeat_ = 0;
};

// Calls the plugin's close with the host's timeout and exits with its outcome.
[[noreturn]] void close_sink_and_exit(iso::ControlBlock& control, const tsm_sink& sink) {
  tsm::AbiBuffer close_error;
  int rc = TSM_ERROR;
  try {
    rc = sink.vtable->close(sink.self, control.close_timeout_ns.load(std::memory_order_relaxed),
                            close_error.get());
  } catch (...) {
    // Reported below through the channel as the close failure.
    close_error.get()->assign(close_error.get(), "an exception escaped close", 26);
  }
  if (rc != TSM_OK) {
    iso::set_message(
        control, "close failed (" +
                     (close_error.empty() ? std::string("no message") : close_error.str()) + ")");
  } else {
    iso::set_message(control, "");
  }
  set_state(control, iso::HelperState::closed);
  std::fflush(nullptr);
  std::_Exit(rc == TSM_OK ? iso::kHelperExitClosed : 1);
}

int usage() {
  static const char text[] =
      "tokenspeed-metrics-sink-helper: started by the tokenspeed-metrics host for an output "
      "with \"isolation\": \"process\"; not a command to run by hand\n";
  if (::write(2, text, sizeof text - 1) < 0) return iso::kHelperExitUsage;
  return iso::kHelperExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  Arguments args;
  if (!parse_arguments(argc, argv, args)) return usage();
  // The helper never outlives the thread that started it (the output's
  // supervisor in the host process).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (orphaned(args.parent)) return iso::kHelperExitOrphaned;
  ::signal(SIGPIPE, SIG_IGN);

  iso::SharedChannel channel = iso::SharedChannel::attach(args.channel_fd);
  if (!channel.valid()) return iso::kHelperExitUsage;
  iso::ControlBlock& control = channel.control();
  // Up and attached: from here the deadlock timeout bounds the plugin's own
  // work (loading, create_sink); the start of this process has its own
  // allowance in the supervisor.
  beat(control);

  tsm::ReporterRegistry registry;
  const tsm_sink sink = create_output_sink(control, args, registry);
  set_state(control, iso::HelperState::ready);
  beat(control);

  Delivery(channel, sink, args.parent).run();
  close_sink_and_exit(control, sink);
}
