// channel_reader.cpp — validating reads of events and descriptions from the
// shared channel, in the helper. Never calls a plugin.
#include "isolation/channel_reader.hpp"

#include <cstring>

namespace tokenspeed::metrics::isolation {
namespace {

constexpr std::uint64_t kRingMask = kRingBytes - 1;

// The NUL-terminated string at *at, within [*at, end); advances *at.
bool take_string(const char*& at, const char* end, std::string* out) {
  const void* nul = std::memchr(at, 0, static_cast<std::size_t>(end - at));
  if (nul == nullptr) return false;
  const char* stop = static_cast<const char*>(nul);
  if (out != nullptr) out->assign(at, stop);
  at = stop + 1;
  return true;
}

}  // namespace

ChannelReader::ChannelReader(const SharedChannel& channel)
    : channel_(channel),
      control_(channel.control()),
      read_pos_(control_.read_pos.load(std::memory_order_relaxed)),
      events_read_(control_.events_read.load(std::memory_order_relaxed)),
      copy_(kMaxEventRecord) {
  label_values_.reserve(64);
}

bool ChannelReader::empty() const noexcept {
  return control_.write_pos.load(std::memory_order_seq_cst) == read_pos_;
}

bool ChannelReader::load_definitions(std::uint32_t wanted) noexcept {
  try {
    const std::uint32_t published = control_.definitions.load(std::memory_order_acquire);
    const std::uint64_t bytes = control_.definition_bytes.load(std::memory_order_acquire);
    if (wanted >= published || bytes > kDefinitionBytes) return false;
    const char* const table = reinterpret_cast<const char*>(channel_.definitions());
    while (definitions_.size() < published) {
      if (definition_bytes_ + sizeof(DefinitionHeader) > bytes) return false;
      DefinitionHeader header{};
      std::memcpy(&header, table + definition_bytes_, sizeof header);
      if (header.size % 8 != 0 || header.size < sizeof header ||
          header.size > bytes - definition_bytes_ || header.label_count > 4096 ||
          header.bucket_count > 4096) {
        return false;
      }
      const char* const start = table + definition_bytes_;
      const char* const end = start + header.size - sizeof(double) * header.bucket_count;
      if (end < start + sizeof header) return false;
      auto definition = std::make_unique<Definition>();
      const char* at = start + sizeof header;
      if (!take_string(at, end, &definition->name) || !take_string(at, end, &definition->help) ||
          !take_string(at, end, &definition->unit)) {
        return false;
      }
      definition->labels.resize(header.label_count);
      for (std::string& label : definition->labels) {
        if (!take_string(at, end, &label)) return false;
      }
      definition->buckets.resize(header.bucket_count);
      if (header.bucket_count != 0) {
        std::memcpy(definition->buckets.data(), end, sizeof(double) * header.bucket_count);
      }
      for (const std::string& label : definition->labels) {
        definition->label_ptrs.push_back(label.c_str());
      }
      tsm_metric_info& info = definition->info;
      info.struct_size = sizeof(tsm_metric_info);
      info.kind = header.kind;
      info.name = definition->name.c_str();
      info.help = definition->help.c_str();
      info.unit = definition->unit.c_str();
      info.label_count = header.label_count;
      info.label_names = definition->label_ptrs.empty() ? nullptr : definition->label_ptrs.data();
      info.bucket_count = header.bucket_count;
      info.bucket_bounds = definition->buckets.empty() ? nullptr : definition->buckets.data();
      info.histogram_layout = header.histogram_layout;
      info.max_buckets = header.max_buckets;
      info.zero_threshold = header.zero_threshold;
      info.max_scale = header.max_scale;
      definition_bytes_ += header.size;
      definitions_.push_back(std::move(definition));
    }
    return wanted < definitions_.size();
  } catch (...) {
    return false;  // no memory: read as corrupt; the helper exits and the host reports it
  }
}

ReadResult ChannelReader::next(tsm_metric_event& event) noexcept {
  const std::uint64_t write_pos = control_.write_pos.load(std::memory_order_acquire);
  if (write_pos == read_pos_) return ReadResult::empty;
  if (write_pos - read_pos_ > kRingBytes) return ReadResult::corrupt;
  const std::byte* const ring = channel_.ring();
  std::uint64_t offset = read_pos_ & kRingMask;
  std::uint32_t size = 0;
  std::memcpy(&size, ring + offset, sizeof size);
  if (size == kPaddingRecord) {
    read_pos_ += kRingBytes - offset;
    offset = 0;
    if (write_pos == read_pos_) return ReadResult::corrupt;  // padding is never last
    std::memcpy(&size, ring, sizeof size);
  }
  if (size < sizeof(EventHeader) || size % 8 != 0 || size > kMaxEventRecord ||
      size > write_pos - read_pos_ || size > kRingBytes - offset) {
    return ReadResult::corrupt;
  }
  std::memcpy(copy_.data(), ring + offset, size);
  EventHeader header{};
  std::memcpy(&header, copy_.data(), sizeof header);
  if (header.size != size) return ReadResult::corrupt;  // changed under us: not the host's ring
  if (header.definition >= definitions_.size() && !load_definitions(header.definition)) {
    return ReadResult::corrupt;
  }
  const tsm_metric_info& info = definitions_[header.definition]->info;
  if (header.label_count != info.label_count) return ReadResult::corrupt;
  try {
    label_values_.resize(header.label_count);
  } catch (...) {
    return ReadResult::corrupt;  // as above: the helper exits, the host reports it
  }
  const char* at = reinterpret_cast<const char*>(copy_.data()) + sizeof header;
  const char* const end = reinterpret_cast<const char*>(copy_.data()) + size;
  for (std::uint32_t i = 0; i < header.label_count; ++i) {
    label_values_[i] = at;
    if (!take_string(at, end, nullptr)) return ReadResult::corrupt;
  }
  read_pos_ += size;
  // Taken: the host may reuse the bytes; the event is in flight until its
  // fate (delivered or dropped) is counted.
  control_.events_read.store(++events_read_, std::memory_order_release);
  control_.read_pos.store(read_pos_, std::memory_order_release);

  event.struct_size = sizeof(tsm_metric_event);
  event.operation = header.operation;
  event.timestamp_ns = header.timestamp_ns;
  event.metric = info.name;
  event.value = header.value;
  event.weight = header.weight;
  event.label_count = header.label_count;
  event.label_names = info.label_names;
  event.label_values = label_values_.empty() ? nullptr : label_values_.data();
  event.info = &info;
  return ReadResult::event;
}

}  // namespace tokenspeed::metrics::isolation
