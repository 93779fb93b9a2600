// plugin_figures.cpp — a plugin's delivery figures, stored and read lock-free.
#include "pipeline/plugin_figures.hpp"

#include <cstddef>

namespace tokenspeed::metrics {
namespace {

void keep_largest(std::atomic<std::uint64_t>& counter, std::uint64_t value) noexcept {
  std::uint64_t seen = counter.load(std::memory_order_relaxed);
  while (seen < value && !counter.compare_exchange_weak(seen, value, std::memory_order_release,
                                                        std::memory_order_relaxed)) {
  }
}

// Whether the plugin's struct holds the uint64_t field at offset: a plugin
// built against a header with fewer fields fills fewer; the rest stay.
bool covers(const tsm_delivery_figures& figures, std::size_t offset) noexcept {
  return figures.struct_size >= offset + sizeof(std::uint64_t);
}

}  // namespace

void PluginFigures::add(const PluginFigures& other) noexcept {
  reported = reported || other.reported;
  sent += other.sent;
  refused += other.refused;
  lost += other.lost;
  retries += other.retries;
  pending = other.pending;
}

void PluginFiguresCell::store(const tsm_delivery_figures& figures) noexcept {
  if (covers(figures, offsetof(tsm_delivery_figures, sent))) keep_largest(sent, figures.sent);
  if (covers(figures, offsetof(tsm_delivery_figures, refused)))
    keep_largest(refused, figures.refused);
  if (covers(figures, offsetof(tsm_delivery_figures, lost))) keep_largest(lost, figures.lost);
  if (covers(figures, offsetof(tsm_delivery_figures, retries)))
    keep_largest(retries, figures.retries);
  if (covers(figures, offsetof(tsm_delivery_figures, pending)))
    pending.store(figures.pending, std::memory_order_release);
  reported.store(1, std::memory_order_release);
}

PluginFigures PluginFiguresCell::load() const noexcept {
  PluginFigures figures;
  figures.reported = reported.load(std::memory_order_acquire) != 0;
  figures.sent = sent.load(std::memory_order_acquire);
  figures.refused = refused.load(std::memory_order_acquire);
  figures.lost = lost.load(std::memory_order_acquire);
  figures.retries = retries.load(std::memory_order_acquire);
  figures.pending = pending.load(std::memory_order_acquire);
  return figures;
}

void PluginFiguresCell::reset() noexcept {
  for (auto* counter : {&sent, &refused, &lost, &retries, &pending})
    counter->store(0, std::memory_order_relaxed);
  reported.store(0, std::memory_order_release);
}

void PluginFiguresCell::report(void* host_sink_data, const tsm_delivery_figures* figures) noexcept {
  if (host_sink_data == nullptr || figures == nullptr) return;
  // A struct too small to hold even its own size field is ignored.
  if (figures->struct_size < sizeof(std::uint32_t)) return;
  static_cast<PluginFiguresCell*>(host_sink_data)->store(*figures);
}

void prepare_sink(tsm_sink& sink, const tsm_process_identity* process,
                  PluginFiguresCell* cell) noexcept {
  sink.struct_size = sizeof(tsm_sink);
  sink.process = process;
  sink.host_sink_data = cell;
  sink.report_figures = cell != nullptr ? &PluginFiguresCell::report : nullptr;
}

}  // namespace tokenspeed::metrics
