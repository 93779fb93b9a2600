// channel_writer.cpp — event and description records into the shared channel.
// Never calls a plugin; never blocks.
#include "isolation/channel_writer.hpp"

#include <cstring>
#include <string_view>

namespace tokenspeed::metrics::isolation {
namespace {

constexpr std::uint64_t kRingMask = kRingBytes - 1;
static_assert((kRingBytes & kRingMask) == 0, "the ring's capacity is a power of two");

std::size_t string_bytes(const char* text) noexcept {
  return (text == nullptr ? 0 : std::strlen(text)) + 1;
}

std::byte* put_string(std::byte* at, const char* text) noexcept {
  const std::size_t n = string_bytes(text) - 1;
  if (n != 0) std::memcpy(at, text, n);
  at[n] = std::byte{0};
  return at + n + 1;
}

}  // namespace

ChannelWriter::ChannelWriter(SharedChannel& channel) noexcept
    : channel_(channel), control_(channel.control()), ring_(channel.writable_ring()) {
  write_pos_ = control_.write_pos.load(std::memory_order_relaxed);
  read_pos_seen_ = control_.read_pos.load(std::memory_order_acquire);
  events_written_ = control_.events_written.load(std::memory_order_relaxed);
  definitions_ = control_.definitions.load(std::memory_order_relaxed);
  definition_bytes_ = control_.definition_bytes.load(std::memory_order_relaxed);
}

std::int64_t ChannelWriter::definition_of(const tsm_metric_info& info) noexcept {
  if (&info == last_info_) return last_id_;
  try {
    if (const auto found = ids_.find(&info); found != ids_.end()) {
      last_info_ = &info;
      last_id_ = found->second;
      return last_id_;
    }
    std::size_t size = sizeof(DefinitionHeader) + string_bytes(info.name) +
                       string_bytes(info.help) + string_bytes(info.unit);
    for (std::uint32_t i = 0; i < info.label_count; ++i) size += string_bytes(info.label_names[i]);
    size = round_up8(size);
    const std::uint32_t buckets = info.bucket_bounds == nullptr ? 0 : info.bucket_count;
    size += sizeof(double) * buckets;
    if (definition_bytes_ + size > kDefinitionBytes) return -1;
    std::byte* const start = channel_.writable_definitions() + definition_bytes_;
    const DefinitionHeader header{static_cast<std::uint32_t>(size),
                                  info.kind,
                                  info.label_count,
                                  buckets,
                                  info.histogram_layout,
                                  info.max_buckets,
                                  info.zero_threshold,
                                  info.max_scale,
                                  0};
    std::memcpy(start, &header, sizeof header);
    std::byte* at = start + sizeof header;
    at = put_string(at, info.name);
    at = put_string(at, info.help);
    at = put_string(at, info.unit);
    for (std::uint32_t i = 0; i < info.label_count; ++i) at = put_string(at, info.label_names[i]);
    at = start + round_up8(static_cast<std::size_t>(at - start));
    if (buckets != 0) std::memcpy(at, info.bucket_bounds, sizeof(double) * buckets);
    ids_.emplace(&info, definitions_);
    definition_bytes_ += size;
    control_.definition_bytes.store(definition_bytes_, std::memory_order_release);
    control_.definitions.store(definitions_ + 1, std::memory_order_release);
    last_info_ = &info;
    last_id_ = definitions_++;
    return last_id_;
  } catch (...) {
    return -1;  // out of memory for the map: the event is dropped and counted (too large)
  }
}

WriteResult ChannelWriter::write(const tsm_metric_event& event) noexcept {
  if (event.info == nullptr) return WriteResult::too_large;
  std::size_t size = sizeof(EventHeader);
  for (std::uint32_t i = 0; i < event.label_count; ++i) size += string_bytes(event.label_values[i]);
  size = round_up8(size);
  if (size > kMaxEventRecord) return WriteResult::too_large;

  const std::uint64_t offset = write_pos_ & kRingMask;
  const std::uint64_t contiguous = kRingBytes - offset;
  const std::uint64_t needed = contiguous < size ? contiguous + size : size;
  auto room = [&] {
    const std::uint64_t used = write_pos_ - read_pos_seen_;
    return used <= kRingBytes ? kRingBytes - used : 0;  // a helper's nonsense reads as full
  };
  if (room() < needed) {
    read_pos_seen_ = control_.read_pos.load(std::memory_order_acquire);
    if (room() < needed) return WriteResult::ring_full;
  }
  // The description is published before the event that names it.
  const std::int64_t id = definition_of(*event.info);
  if (id < 0) return WriteResult::too_large;

  std::uint64_t pos = write_pos_;
  if (contiguous < size) {
    const std::uint32_t padding = kPaddingRecord;
    std::memcpy(ring_ + offset, &padding, sizeof padding);
    pos += contiguous;
  }
  std::byte* const start = ring_ + (pos & kRingMask);
  const EventHeader header{static_cast<std::uint32_t>(size),
                           static_cast<std::uint32_t>(id),
                           event.operation,
                           event.label_count,
                           event.timestamp_ns,
                           event.value,
                           event.weight};
  std::memcpy(start, &header, sizeof header);
  std::byte* at = start + sizeof header;
  for (std::uint32_t i = 0; i < event.label_count; ++i) at = put_string(at, event.label_values[i]);
  write_pos_ = pos + size;
  control_.events_written.store(++events_written_, std::memory_order_relaxed);
  // Dekker with the helper's park: publish, then look whether it sleeps.
  control_.write_pos.store(write_pos_, std::memory_order_seq_cst);
  if (control_.parked.load(std::memory_order_seq_cst) != 0) wake();
  return WriteResult::written;
}

void ChannelWriter::wake() noexcept {
  control_.parked.store(0, std::memory_order_seq_cst);
  shared_futex_wake(control_.parked);
}

}  // namespace tokenspeed::metrics::isolation
