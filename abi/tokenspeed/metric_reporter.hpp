/*
 * tokenspeed/metric_reporter.hpp — header-only C++17 helper over the C ABI of
 * metric_reporter.h: turns C++ classes into the C callbacks. It never lets an
 * exception or a C++ library object cross the ABI. No Boost, no JSON parser.
 *
 * A plugin author writes a sink class with emit and close, a validate
 * function, a create function, and declares them in tsm_register. The helper
 * generates the static vtables and C trampolines, catches every exception at
 * the boundary and turns it into TSM_ERROR with e.what() as the message, and
 * answers TSM_UNSUPPORTED_API when the host speaks another API version.
 *
 * A complete minimal plugin (print.cpp, built as print.so):
 *
 *   #include <tokenspeed/metric_reporter.hpp>
 *
 *   #include <chrono>
 *   #include <cstdio>
 *   #include <memory>
 *   #include <stdexcept>
 *   #include <string>
 *   #include <string_view>
 *
 *   namespace tsm = tokenspeed::metrics::plugin;
 *
 *   // One per producer process; the host calls emit from one thread at a
 *   // time and close once, after the last emit.
 *   class PrintSink {
 *    public:
 *     void emit(const tsm_metric_event& event) {
 *       std::printf("%s %s %g x%llu\n", event.metric,
 *                   tsm::operation_name(event.operation), event.value,
 *                   static_cast<unsigned long long>(event.weight));
 *     }
 *     void close(std::chrono::nanoseconds) { std::fflush(stdout); }
 *   };
 *
 *   // Accepts only the empty object; returns the normalized settings.
 *   std::string validate(std::string_view config) {
 *     if (config.find_first_not_of(" \t\r\n{}") != std::string_view::npos)
 *       throw std::invalid_argument("print takes no settings");
 *     return "{}";
 *   }
 *
 *   std::unique_ptr<PrintSink> create_sink(std::string_view, const tsm::Host&) {
 *     return std::make_unique<PrintSink>();
 *   }
 *
 *   extern "C" TSM_EXPORT int tsm_register(const tsm_host_api* host,
 *                                          tsm_buffer* error) {
 *     return tsm::register_reporters(host, error, [](tsm::Registrar& registrar) {
 *       tsm::Reporter<PrintSink> print;
 *       print.name = "print";
 *       print.validate = validate;
 *       print.create_sink = create_sink;
 *       registrar.add(std::move(print));    // start_node stays NULL
 *     });
 *   }
 *
 * Build it with `dependency('tokenspeed-metrics-plugin')` as a Meson
 * shared_module with name_prefix '' and gnu_symbol_visibility 'hidden'
 * (see docs/plugin-authors.md).
 */
#ifndef TOKENSPEED_METRIC_REPORTER_HPP
#define TOKENSPEED_METRIC_REPORTER_HPP

#include <tokenspeed/metric_reporter.h>

#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenspeed::metrics::plugin {

/* Writes text into a host-provided buffer (the host copies it at once).
 * Ignores a NULL buffer. Safe from any thread that owns the call. */
inline void assign(tsm_buffer* buffer, std::string_view text) noexcept {
  if (buffer != nullptr && buffer->assign != nullptr) {
    buffer->assign(buffer, text.data(), text.size());
  }
}

/* "inc", "set" or "observe" for a tsm_operation; "unknown" otherwise. */
inline const char* operation_name(uint32_t operation) noexcept {
  switch (operation) {
    case TSM_OP_INC:
      return "inc";
    case TSM_OP_SET:
      return "set";
    case TSM_OP_OBSERVE:
      return "observe";
    default:
      return "unknown";
  }
}

/* The process a sink serves (tsm_process_identity), copied. */
struct ProcessIdentity {
  std::string name;   // unique within the node: "scheduler-0"
  std::string role;   // "scheduler"; "" when the host did not say
  int32_t rank = -1;  // -1: none
  int64_t pid = 0;
  std::string node;        // the node's name
  bool from_host = false;  // false: the host is older than minor 3; the fields
                           // above are this process's pid ("pid-<pid>") and
                           // the host name
};

/* What became of the events a sink accepted (tsm_delivery_figures). */
struct DeliveryFigures {
  uint64_t sent = 0;     // accepted by the back end
  uint64_t refused = 0;  // over a limit of the plugin, or not representable
  uint64_t lost = 0;     // given up: rejected, queue full, close deadline
  uint64_t retries = 0;  // failed attempts tried again
  uint64_t pending = 0;  // held now, not yet sent (not a counter)
};

/* This machine's host name; "localhost" when it has none. */
inline std::string this_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

/* What of the host outlives tsm_register: its log function. Copied from the
 * tsm_host_api during registration and handed to every start_node call; the
 * reference stays valid for the life of the process. The Host handed to
 * create_sink also carries the sink's process and its figures callback
 * (tsm_sink's appended fields); copies keep them. log() and
 * report_figures() may be called from any thread; the plugin rate-limits
 * repeated messages itself. */
class Host {
 public:
  Host() noexcept = default;
  explicit Host(const tsm_host_api& api) noexcept
      : host_data_(api.host_data),
        api_version_(api.api_version),
        // log is read only if the host's table is large enough to hold it.
        log_(api.struct_size >= offsetof(tsm_host_api, log) + sizeof api.log ? api.log : nullptr) {}

  /* This Host with the fields the host set in sink before create_sink
   * (read only when the sink's struct_size covers them). */
  Host for_sink(const tsm_sink& sink) const {
    Host copy = *this;
    auto process = std::make_shared<ProcessIdentity>();
    if (sink.struct_size >= TSM_SINK_SIZE_V2 && sink.process != nullptr &&
        sink.process->struct_size >= offsetof(tsm_process_identity, pid) + sizeof(int64_t)) {
      const tsm_process_identity& p = *sink.process;
      process->name = p.name != nullptr ? p.name : "";
      process->role = p.role != nullptr ? p.role : "";
      process->node = p.node != nullptr ? p.node : "";
      process->rank = p.rank;
      process->pid = p.pid;
      process->from_host = !process->name.empty();
    }
    if (!process->from_host) {
      process->pid = static_cast<int64_t>(::getpid());
      process->name = "pid-" + std::to_string(process->pid);
      process->role.clear();
      process->rank = -1;
    }
    if (process->node.empty()) process->node = this_host_name();
    copy.process_ = std::move(process);
    if (sink.struct_size >= TSM_SINK_SIZE_V2) {
      copy.sink_data_ = sink.host_sink_data;
      copy.report_figures_ = sink.report_figures;
    }
    return copy;
  }

  uint32_t api_version() const noexcept { return api_version_; }

  void log(tsm_log_level level, const std::string& message) const noexcept {
    if (log_ != nullptr) log_(host_data_, static_cast<uint32_t>(level), message.c_str());
  }

  /* The process the sink serves (only in the Host of create_sink; a Host
   * without a sink gives this process's pid and host name). */
  ProcessIdentity process() const {
    if (process_) return *process_;
    ProcessIdentity own;
    own.pid = static_cast<int64_t>(::getpid());
    own.name = "pid-" + std::to_string(own.pid);
    own.node = this_host_name();
    return own;
  }

  /* Whether report_figures reaches the host (a host of minor 3 or later). */
  bool takes_figures() const noexcept { return report_figures_ != nullptr; }

  /* Reports the sink's figures (totals); nothing when the host takes none.
   * From any thread, until the sink's close returns. */
  void report_figures(const DeliveryFigures& figures) const noexcept {
    if (report_figures_ == nullptr) return;
    tsm_delivery_figures out{};
    out.struct_size = sizeof out;
    out.sent = figures.sent;
    out.refused = figures.refused;
    out.lost = figures.lost;
    out.retries = figures.retries;
    out.pending = figures.pending;
    report_figures_(sink_data_, &out);
  }

 private:
  void* host_data_ = nullptr;
  uint32_t api_version_ = 0;
  void (*log_)(void*, uint32_t, const char*) = nullptr;
  std::shared_ptr<const ProcessIdentity> process_;
  void* sink_data_ = nullptr;
  void (*report_figures_)(void*, const tsm_delivery_figures*) = nullptr;
};

/* The node-session type of a reporter without start_node. */
struct NoNodeSession {
  std::string producer_config() const { return "{}"; }
  void close(std::chrono::nanoseconds /*timeout*/) {}
};

/* The factories of one output name, handed to Registrar::add.
 *
 * Sink must have
 *   void emit(const tsm_metric_event& event);   // may throw
 *   void close(std::chrono::nanoseconds timeout);  // may throw
 * The host calls emit on the sink's delivery thread, one call at a
 * time; the event is valid only during the call (copy what you keep). emit
 * must return promptly (queue, deliver in the background); a throw disables
 * the sink. close is called once, after the last emit returned, from a host
 * thread; it flushes within timeout. The helper destroys the object right
 * after close returns (or throws), so the destructor must release whatever
 * close did not.
 *
 * NodeSession (only with start_node) must have
 *   std::string producer_config();               // plain JSON object text
 *   void close(std::chrono::nanoseconds timeout);
 * It lives in the launcher from start_node until its close; the helper
 * destroys it after close, or at once if producer_config() throws. */
template <class Sink, class NodeSession = NoNodeSession>
struct Reporter {
  /* Output name, 1-64 characters of [a-z0-9_.-]; "prometheus" is reserved. */
  std::string name;
  /* Launcher, at startup: check the settings (a JSON object as text) without
   * creating resources; return the normalized JSON object, or throw with a
   * one-line message that names the key at fault. Required. */
  std::function<std::string(std::string_view config)> validate;
  /* Every producer, lazily on its first event: build the process-local sink
   * from the producer configuration. Clean up before throwing. Required. */
  std::function<std::unique_ptr<Sink>(std::string_view producer_config, const Host& host)>
      create_sink;
  /* Launcher, optional (left empty: the descriptor's start_node is NULL and
   * the normalized configuration becomes the producer configuration). */
  std::function<std::unique_ptr<NodeSession>(std::string_view config, const Host& host)> start_node;
  /* Replace an existing reporter of the same name (the later plugin wins). */
  bool override_existing = false;
  /* Optional: the plugin's version, shown by `tokenspeed-metrics plugins`. */
  std::string version;
  /* Optional: the settings as a JSON array, shown by `tokenspeed-metrics
   * plugins` (kit::SettingsTable::describe() writes it; see the descriptor's
   * settings field). Empty: not described. */
  std::string settings;
};

namespace detail {

/* Writes message as the one-line error the ABI asks for (a line break, as
 * in a key quoted from the settings, becomes a space) and returns TSM_ERROR. */
inline int fail(tsm_buffer* error, const char* message) noexcept {
  try {
    std::string line(message);
    for (char& c : line) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    assign(error, line);
  } catch (...) {  // out of memory: the message as it is
    assign(error, message);
  }
  return TSM_ERROR;
}

/* Runs body; any exception becomes TSM_ERROR with its message. */
template <class Body>
int guarded(tsm_buffer* error, Body&& body) noexcept {
  try {
    body();
    return TSM_OK;
  } catch (const std::exception& e) {
    return fail(error, e.what());
  } catch (...) {
    return fail(error, "unknown exception");
  }
}

inline std::chrono::nanoseconds to_timeout(int64_t timeout_ns) noexcept {
  return std::chrono::nanoseconds(timeout_ns > 0 ? timeout_ns : 0);
}

/* Type-erased owner of one registered Reporter; see registered_reporters. */
struct ReporterHolderBase {
  virtual ~ReporterHolderBase() = default;
};

/* Every reporter this plugin registered. The host may call the factories
 * until the process exits and never unloads a plugin, so the holders are
 * never destroyed (the list is reachable, not leaked). Touched only inside
 * tsm_register, which the host calls once, from one thread. */
inline std::vector<std::unique_ptr<ReporterHolderBase>>& registered_reporters() {
  static auto* holders = new std::vector<std::unique_ptr<ReporterHolderBase>>();
  return *holders;
}

template <class Sink>
struct SinkTrampolines {
  static int emit(void* self, const tsm_metric_event* event, tsm_buffer* error) noexcept {
    if (event == nullptr) return fail(error, "emit called without an event");
    return guarded(error, [&] { static_cast<Sink*>(self)->emit(*event); });
  }
  static int close(void* self, int64_t timeout_ns, tsm_buffer* error) noexcept {
    std::unique_ptr<Sink> sink(static_cast<Sink*>(self));  // destroyed on return
    return guarded(error, [&] { sink->close(to_timeout(timeout_ns)); });
  }
  static constexpr tsm_sink_vtable vtable{sizeof(tsm_sink_vtable), &emit, &close};
};

template <class NodeSession>
struct NodeSessionTrampolines {
  static int close(void* self, int64_t timeout_ns, tsm_buffer* error) noexcept {
    std::unique_ptr<NodeSession> session(static_cast<NodeSession*>(self));
    return guarded(error, [&] { session->close(to_timeout(timeout_ns)); });
  }
  static constexpr tsm_node_session_vtable vtable{sizeof(tsm_node_session_vtable), &close};
};

template <class Sink, class NodeSession>
struct ReporterHolder final : ReporterHolderBase {
  ReporterHolder(Reporter<Sink, NodeSession> r, const Host& h) : reporter(std::move(r)), host(h) {}

  static const ReporterHolder& from(void* user_data) noexcept {
    return *static_cast<const ReporterHolder*>(user_data);
  }

  static int validate(void* user_data, const char* config, size_t size, tsm_buffer* normalized,
                      tsm_buffer* error) noexcept {
    return guarded(error, [&] {
      const std::string result = from(user_data).reporter.validate(std::string_view(config, size));
      assign(normalized, result);
    });
  }

  static int create_sink(void* user_data, const char* config, size_t size, tsm_sink* sink,
                         tsm_buffer* error) noexcept {
    return guarded(error, [&] {
      const ReporterHolder& self = from(user_data);
      std::unique_ptr<Sink> created =
          self.reporter.create_sink(std::string_view(config, size), self.host.for_sink(*sink));
      if (!created) throw std::runtime_error("create_sink returned no sink");
      sink->vtable = &SinkTrampolines<Sink>::vtable;
      sink->self = created.release();
    });
  }

  static int start_node(void* user_data, const char* config, size_t size, tsm_node_session* session,
                        tsm_buffer* producer_config, tsm_buffer* error) noexcept {
    return guarded(error, [&] {
      const ReporterHolder& self = from(user_data);
      std::unique_ptr<NodeSession> started =
          self.reporter.start_node(std::string_view(config, size), self.host);
      if (!started) throw std::runtime_error("start_node returned no session");
      assign(producer_config, started->producer_config());  // throws: session destroyed
      session->vtable = &NodeSessionTrampolines<NodeSession>::vtable;
      session->self = started.release();
    });
  }

  Reporter<Sink, NodeSession> reporter;
  Host host;
};

/* A tsm_buffer the plugin owns, to receive the host's messages. */
class MessageBuffer {
 public:
  MessageBuffer() noexcept : buffer_{sizeof(tsm_buffer), this, &MessageBuffer::assign_to} {}
  MessageBuffer(const MessageBuffer&) = delete;
  MessageBuffer& operator=(const MessageBuffer&) = delete;
  tsm_buffer* get() noexcept { return &buffer_; }
  const std::string& str() const noexcept { return text_; }

 private:
  static void assign_to(tsm_buffer* buffer, const char* data, size_t size) noexcept {
    try {
      auto& text = static_cast<MessageBuffer*>(buffer->host_data)->text_;
      if (data == nullptr)
        text.clear();
      else
        text.assign(data, size);
    } catch (...) {  // out of memory in a C callback: the message stays as it was
    }
  }
  tsm_buffer buffer_;
  std::string text_;
};

}  // namespace detail

/* Handed to the declare function of register_reporters; declares outputs.
 * Lives during tsm_register only; used from that thread only. */
class Registrar {
 public:
  explicit Registrar(const tsm_host_api& api) noexcept : api_(api), host_(api) {}
  Registrar(const Registrar&) = delete;
  Registrar& operator=(const Registrar&) = delete;

  const Host& host() const noexcept { return host_; }

  /* Declares one output to the host. Throws std::invalid_argument when a
   * required function is missing, std::runtime_error with the host's message
   * when the host refuses the name (invalid, reserved, taken). */
  template <class Sink, class NodeSession>
  void add(Reporter<Sink, NodeSession> reporter) {
    if (!reporter.validate || !reporter.create_sink) {
      throw std::invalid_argument("reporter '" + reporter.name +
                                  "' needs validate and create_sink");
    }
    using Holder = detail::ReporterHolder<Sink, NodeSession>;
    auto holder = std::make_unique<Holder>(std::move(reporter), host_);

    tsm_reporter_descriptor descriptor{};
    descriptor.struct_size = sizeof descriptor;
    descriptor.name = holder->reporter.name.c_str();
    descriptor.validate = &Holder::validate;
    descriptor.create_sink = &Holder::create_sink;
    descriptor.start_node = holder->reporter.start_node ? &Holder::start_node : nullptr;
    descriptor.override = holder->reporter.override_existing ? 1u : 0u;
    descriptor.user_data = holder.get();
    descriptor.version =
        holder->reporter.version.empty() ? nullptr : holder->reporter.version.c_str();
    descriptor.settings =
        holder->reporter.settings.empty() ? nullptr : holder->reporter.settings.c_str();

    detail::MessageBuffer message;
    if (api_.register_metric_reporter(api_.host_data, &descriptor, message.get()) != TSM_OK) {
      throw std::runtime_error(message.str().empty()
                                   ? "the host refused reporter '" + holder->reporter.name + "'"
                                   : message.str());
    }
    detail::registered_reporters().push_back(std::move(holder));
  }

 private:
  const tsm_host_api& api_;
  Host host_;
};

/* Call from tsm_register. Checks host->api_version (TSM_UNSUPPORTED_API with
 * a message when it is not TSM_METRIC_REPORTER_API_VERSION), then calls
 * declare(Registrar&) to add the reporters. Any exception from declare
 * becomes TSM_ERROR with its message; the host then rolls back every name
 * this call registered. Must not start threads or acquire resources. */
template <class Declare>
int register_reporters(const tsm_host_api* host, tsm_buffer* error, Declare&& declare) noexcept {
  if (host == nullptr) return detail::fail(error, "no host API table");
  if (host->struct_size < offsetof(tsm_host_api, api_version) + sizeof host->api_version ||
      host->api_version != TSM_METRIC_REPORTER_API_VERSION) {
    const bool known =
        host->struct_size >= offsetof(tsm_host_api, api_version) + sizeof host->api_version;
    detail::guarded(error, [&] {
      assign(error, "host metric reporter API version " +
                        (known ? std::to_string(host->api_version) : std::string("unknown")) +
                        " is not supported; this plugin supports version " +
                        std::to_string(TSM_METRIC_REPORTER_API_VERSION));
    });
    return TSM_UNSUPPORTED_API;
  }
  return detail::guarded(error, [&] {
    Registrar registrar(*host);
    declare(registrar);
  });
}

}  // namespace tokenspeed::metrics::plugin

#endif  // TOKENSPEED_METRIC_REPORTER_HPP
