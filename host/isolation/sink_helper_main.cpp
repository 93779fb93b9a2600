// sink_helper_main.cpp — the sink helper of an isolated output: loads one
// plugin file, creates the output's sink from the producer configuration in
// the shared channel, emits what it reads from the channel and closes the
// sink when asked. A crash or hang here costs only this process; it never
// writes the host's part of the channel.
#include <dlfcn.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include <boost/json/parse.hpp>

#include "core/abi_buffer.hpp"
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

// Registers the one plugin file and returns the reporter it declares under
// the output's name, or nullptr with the reason in problem.
const tsm::Reporter* load_reporter(tsm::ReporterRegistry& registry, const Arguments& args,
                                   std::string& problem) {
  void* library = ::dlopen(args.plugin.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* detail = ::dlerror();
    problem =
        "cannot load plugin file '" + args.plugin + "': " + (detail ? detail : "dlopen failed");
    return nullptr;
  }
  auto* register_fn = reinterpret_cast<tsm_register_fn>(::dlsym(library, TSM_REGISTER_SYMBOL));
  if (register_fn == nullptr) {
    problem = "plugin file '" + args.plugin + "' does not export " TSM_REGISTER_SYMBOL;
    return nullptr;
  }
  const std::string file_name = args.plugin.substr(args.plugin.find_last_of('/') + 1);
  registry.begin(tsm::plugin_name_from_file(file_name), args.plugin);
  tsm::AbiBuffer error;
  int status = TSM_ERROR;
  try {
    status = register_fn(registry.host_api(), error.get());
  } catch (...) {
  }
  if (status != TSM_OK) {
    registry.rollback();
    problem = "plugin file '" + args.plugin + "': " TSM_REGISTER_SYMBOL " failed" +
              (error.empty() ? std::string() : ": " + error.str());
    return nullptr;
  }
  registry.commit();
  const tsm::Reporter* reporter = registry.find(args.reporter);
  if (reporter == nullptr) {
    problem =
        "plugin file '" + args.plugin + "' does not register reporter '" + args.reporter + "'";
  }
  return reporter;
}

bool orphaned(pid_t parent) noexcept { return ::getppid() != parent; }

}  // namespace

int main(int argc, char** argv) {
  Arguments args;
  if (!parse_arguments(argc, argv, args)) {
    static const char usage[] =
        "tokenspeed-metrics-sink-helper: started by the tokenspeed-metrics host for an output "
        "with \"isolation\": \"process\"; not a command to run by hand\n";
    if (::write(2, usage, sizeof usage - 1) < 0) return iso::kHelperExitUsage;
    return iso::kHelperExitUsage;
  }
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
  control.heartbeat.fetch_add(1, std::memory_order_release);

  tsm::ReporterRegistry registry;
  std::string problem;
  const tsm::Reporter* reporter = load_reporter(registry, args, problem);
  if (reporter == nullptr) {
    fail(control, iso::HelperState::create_failed, iso::kHelperExitLoadFailed, problem);
  }
  boost::json::object config;
  {
    boost::system::error_code parse_error;
    const std::uint32_t size = std::min<std::uint32_t>(control.config_size, iso::kConfigBytes);
    boost::json::value value =
        boost::json::parse(std::string_view(control.config, size), parse_error);
    if (parse_error || !value.is_object()) {
      fail(control, iso::HelperState::create_failed, iso::kHelperExitUsage,
           "the producer configuration in the channel is not a JSON object");
    }
    config = std::move(value.as_object());
  }
  control.heartbeat.fetch_add(1, std::memory_order_release);  // loaded; create_sink next
  tsm::CreateSinkResult created = reporter->create_sink(config);
  if (!created.ok) {
    fail(control, iso::HelperState::create_failed, iso::kHelperExitCreateFailed, created.error);
  }
  const tsm_sink sink = created.sink;
  set_state(control, iso::HelperState::ready);
  control.heartbeat.fetch_add(1, std::memory_order_release);

  iso::ChannelReader reader(channel);
  tsm::AbiBuffer error;
  tsm_metric_event event{};
  bool disabled = false;
  std::uint64_t delivered = control.delivered.load(std::memory_order_relaxed);
  std::uint64_t dropped = control.dropped_sink_disabled.load(std::memory_order_relaxed);
  std::uint64_t heartbeat = control.heartbeat.load(std::memory_order_relaxed);
  for (;;) {
    const iso::ReadResult result = reader.next(event);
    if (result == iso::ReadResult::corrupt) {
      fail(control, iso::HelperState::starting, iso::kHelperExitCorruptRing,
           "a record in the shared channel failed validation");
    }
    if (result == iso::ReadResult::event) {
      int rc = TSM_ERROR;
      if (!disabled) {
        try {
          rc = sink.vtable->emit(sink.self, &event, error.get());
        } catch (...) {
          rc = TSM_ERROR;
          error.get()->assign(error.get(), "an exception escaped emit", 25);
        }
      }
      if (rc == TSM_OK) {
        control.delivered.store(++delivered, std::memory_order_release);
      } else {
        if (!disabled) {
          disabled = true;
          iso::set_message(control, error.empty() ? std::string("emit failed (no message)")
                                                  : "emit failed (" + error.str() + ")");
          set_state(control, iso::HelperState::disabled);
        }
        control.dropped_sink_disabled.store(++dropped, std::memory_order_release);
      }
      control.heartbeat.store(++heartbeat, std::memory_order_release);
      continue;
    }
    // Empty.
    if (control.close_requested.load(std::memory_order_seq_cst) != 0 && reader.empty()) break;
    bool woke = false;
    for (int i = 0; i < 64 && !woke; ++i) {
      woke = !reader.empty() || control.close_requested.load(std::memory_order_relaxed) != 0;
      if (!woke) ::sched_yield();
    }
    if (woke) continue;
    control.parked.store(1, std::memory_order_seq_cst);
    if (reader.empty() && control.close_requested.load(std::memory_order_seq_cst) == 0) {
      iso::shared_futex_wait(control.parked, 1, 100'000'000);
    }
    control.parked.store(0, std::memory_order_relaxed);
    control.heartbeat.store(++heartbeat, std::memory_order_release);
    if (orphaned(args.parent)) std::_Exit(iso::kHelperExitOrphaned);
  }

  tsm::AbiBuffer close_error;
  int rc = TSM_ERROR;
  try {
    rc = sink.vtable->close(sink.self, control.close_timeout_ns.load(std::memory_order_relaxed),
                            close_error.get());
  } catch (...) {
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
