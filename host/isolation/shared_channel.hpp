// shared_channel.hpp — the memory an isolated output shares with its sink
// helper process: a control block, an append-only table of metric
// descriptions and a single-producer single-consumer ring of events, in one
// memfd mapping. Plain data and atomics only; it never calls a plugin and the
// producer side never makes a syscall per event (a futex wake only when the
// helper is parked).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <tokenspeed/metric_reporter.h>

#include "pipeline/plugin_figures.hpp"

namespace tokenspeed::metrics::isolation {

inline constexpr std::uint32_t kChannelMagic = 0x54534d49;  // "TSMI"
inline constexpr std::uint32_t kChannelVersion = 3;  // 3: definitions carry the histogram layout

// Sizes of the three regions (bytes). The ring's capacity is a power of two.
inline constexpr std::size_t kControlBytes = 16 * 1024;
inline constexpr std::size_t kDefinitionBytes = 1024 * 1024;
inline constexpr std::size_t kRingBytes = 4 * 1024 * 1024;
inline constexpr std::size_t kChannelBytes = kControlBytes + kDefinitionBytes + kRingBytes;
inline constexpr std::size_t kConfigBytes =
    12 * 1024;                                      // producer configuration, in the control block
inline constexpr std::size_t kMessageBytes = 1024;  // the helper's last error message
inline constexpr std::size_t kIdentityTextBytes = 256;  // each string of the producer's identity

// The helper's lifecycle as it publishes it.
enum class HelperState : std::uint32_t {
  starting = 0,       // loading the plugin, in create_sink
  ready = 1,          // create_sink succeeded; draining the ring
  create_failed = 2,  // create_sink failed: message says why; the helper exits
  disabled = 3,       // emit failed: message says why; later events count as dropped
  closed = 4,         // the plugin's close returned; the helper exits
};

// The exit statuses of the helper (besides a signal).
inline constexpr int kHelperExitClosed = 0;         // closed on request
inline constexpr int kHelperExitUsage = 64;         // bad arguments or mapping
inline constexpr int kHelperExitLoadFailed = 65;    // plugin or reporter not loadable
inline constexpr int kHelperExitCreateFailed = 66;  // create_sink failed
inline constexpr int kHelperExitCorruptRing = 67;   // a record failed validation
inline constexpr int kHelperExitOrphaned = 68;      // the host process went away

// Threading: each field has one writer, named on it. The host writes the
// definition table and the ring; the helper maps both read-only.
struct alignas(64) ControlBlock {
  std::uint32_t magic;
  std::uint32_t version;
  // host, before each helper starts
  std::uint32_t config_size;
  char config[kConfigBytes];
  // host, before each helper starts: the producer the sink serves (its
  // tsm_sink.process), each string NUL-terminated
  std::int32_t identity_rank;
  std::int64_t identity_pid;
  char identity_name[kIdentityTextBytes];
  char identity_role[kIdentityTextBytes];
  char identity_node[kIdentityTextBytes];

  // host (producer): the ring's write position and the table's published extent
  alignas(64) std::atomic<std::uint64_t> write_pos;
  std::atomic<std::uint64_t> events_written;
  std::atomic<std::uint32_t> definitions;       // records published in the table
  std::atomic<std::uint64_t> definition_bytes;  // bytes published in the table
  // host (close): the helper drains, closes its sink within the timeout and exits
  alignas(64) std::atomic<std::uint32_t> close_requested;
  std::atomic<std::int64_t> close_timeout_ns;

  // helper: consumption and the fate of what it consumed
  alignas(64) std::atomic<std::uint64_t> read_pos;
  std::atomic<std::uint64_t> events_read;  // taken from the ring: delivered, dropped or in emit
  std::atomic<std::uint64_t> delivered;
  std::atomic<std::uint64_t> dropped_sink_disabled;
  std::atomic<std::uint64_t> heartbeat;  // grows while the helper makes progress
  // helper: what its plugin reported of its events (tsm_sink.report_figures),
  // added onto what the earlier helpers' plugins had reported
  alignas(64) PluginFiguresCell plugin_figures;
  // helper: the futex word it sleeps on (1 while parked)
  alignas(64) std::atomic<std::uint32_t> parked;
  // helper: rarely written
  alignas(64) std::atomic<std::uint32_t> state;  // a HelperState
  std::atomic<std::uint32_t> message_size;
  char message[kMessageBytes];
};
static_assert(sizeof(ControlBlock) <= kControlBytes);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

// A metric description in the table: header, then name, help, unit and
// label names (each NUL-terminated), padding to 8, then bucket bounds.
struct DefinitionHeader {
  std::uint32_t size;  // whole record, a multiple of 8
  std::uint32_t kind;
  std::uint32_t label_count;
  std::uint32_t bucket_count;
  // tsm_metric_info's histogram layout and exponential options
  std::uint32_t histogram_layout;
  std::uint32_t max_buckets;
  double zero_threshold;
  std::int32_t max_scale;
  std::uint32_t unused;
};
static_assert(sizeof(DefinitionHeader) % 8 == 0);

// An event in the ring: header, then label values (each NUL-terminated),
// padded to 8. A header whose size is kPaddingRecord fills the ring's end.
struct EventHeader {
  std::uint32_t size;  // whole record, a multiple of 8
  std::uint32_t definition;
  std::uint32_t operation;
  std::uint32_t label_count;
  std::int64_t timestamp_ns;
  double value;
  std::uint64_t weight;
};
inline constexpr std::uint32_t kPaddingRecord = 0xffffffffu;
inline constexpr std::size_t kMaxEventRecord = 64 * 1024;  // larger events are dropped

// The mapping itself: one memfd, mapped whole by the host; the helper maps
// the control block writable and the rest read-only.
class SharedChannel {
 public:
  // Host: a new memfd (close-on-exec) of kChannelBytes, mapped read-write.
  // Throws std::system_error.
  static SharedChannel create();
  // Helper: maps the inherited descriptor. Returns an unmapped channel on
  // failure (valid() is false).
  static SharedChannel attach(int fd) noexcept;

  SharedChannel() = default;
  SharedChannel(SharedChannel&& other) noexcept;
  SharedChannel& operator=(SharedChannel&& other) noexcept;
  SharedChannel(const SharedChannel&) = delete;
  SharedChannel& operator=(const SharedChannel&) = delete;
  ~SharedChannel();

  bool valid() const noexcept { return control_ != nullptr; }
  int fd() const noexcept { return fd_; }
  ControlBlock& control() const noexcept { return *control_; }
  const std::byte* definitions() const noexcept { return definitions_; }
  std::byte* writable_definitions() const noexcept { return definitions_; }
  const std::byte* ring() const noexcept { return ring_; }
  std::byte* writable_ring() const noexcept { return ring_; }

 private:
  void release() noexcept;

  int fd_ = -1;
  ControlBlock* control_ = nullptr;
  std::byte* definitions_ = nullptr;
  std::byte* ring_ = nullptr;
  void* rest_ = nullptr;  // the helper's read-only mapping of table and ring
};

// Futex calls on a word of the shared mapping (not process-private).
void shared_futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                       std::int64_t timeout_ns) noexcept;
void shared_futex_wake(std::atomic<std::uint32_t>& word) noexcept;

// Host: writes the helper's message area (used when the host resets state).
// Helper: writes its message (truncated to kMessageBytes).
void set_message(ControlBlock& control, std::string_view text) noexcept;
std::string message_of(const ControlBlock& control);

constexpr std::size_t round_up8(std::size_t n) noexcept { return (n + 7) & ~std::size_t{7}; }

}  // namespace tokenspeed::metrics::isolation
