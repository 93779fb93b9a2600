/*
 * tokenspeed/kit/delivery_figures.hpp — what became of the events a sink
 * accepted, as only the plugin sees it: the figures it reports to the host
 * (plugin::Host::report_figures; the host shows them per output and process
 * in its summary table, its shutdown report and on /metrics), the shares of
 * one collect's events among the requests it was split into, and the line
 * close writes about the events that did not reach the back end.
 * Header-only C++17.
 */
#ifndef TOKENSPEED_KIT_DELIVERY_FIGURES_HPP
#define TOKENSPEED_KIT_DELIVERY_FIGURES_HPP

#include <tokenspeed/metric_reporter.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenspeed::metrics::kit {

/* Splits events among parts in proportion to their items (data points,
 * samples, bytes): the shares add up to events exactly, the last part
 * taking the rounding. Parts without items share evenly. */
inline std::vector<uint64_t> share_events(uint64_t events, const std::vector<std::size_t>& items) {
  std::vector<uint64_t> shares(items.size(), 0);
  if (items.empty()) return shares;
  std::size_t total = 0;
  for (const std::size_t n : items) total += n;
  uint64_t given = 0;
  for (std::size_t i = 0; i + 1 < items.size(); ++i) {
    const double part = total == 0 ? 1.0 / static_cast<double>(items.size())
                                   : static_cast<double>(items[i]) / static_cast<double>(total);
    const auto share = static_cast<uint64_t>(part * static_cast<double>(events));
    shares[i] = std::min(share, events - given);  // rounding never gives more than there is
    given += shares[i];
  }
  shares.back() = events - given;
  return shares;
}

/* The figures of one sink and their reporting. Threading: one thread at a
 * time changes and reports them (the delivery thread, then close's, after
 * the delivery thread ended). */
class DeliveryAccount {
 public:
  explicit DeliveryAccount(plugin::Host host) noexcept : host_(std::move(host)) {}

  plugin::DeliveryFigures& figures() noexcept { return figures_; }
  const plugin::DeliveryFigures& figures() const noexcept { return figures_; }

  /* Sends the figures to the host (nothing when it takes none). */
  void report() const noexcept { host_.report_figures(figures_); }

  /* The line close logs when events did not reach the back end (refused
   * or lost), "" otherwise: "at close: 1188 of 5000 events did not reach
   * <destination>: 1188 refused (<refused_because>), 0 lost (<lost_because>);
   * 3812 sent, 2 retries". */
  std::string close_summary(const std::string& destination, std::string_view refused_because,
                            std::string_view lost_because) const {
    const plugin::DeliveryFigures& f = figures_;
    if (f.refused == 0 && f.lost == 0) return {};
    const uint64_t all = f.sent + f.refused + f.lost + f.pending;
    std::string line = "at close: " + std::to_string(f.refused + f.lost) + " of " +
                       std::to_string(all) + " events did not reach " + destination + ": " +
                       std::to_string(f.refused) + " refused (";
    line += refused_because;
    line += "), " + std::to_string(f.lost) + " lost (";
    line += lost_because;
    line += "); " + std::to_string(f.sent) + " sent, " + std::to_string(f.retries) +
            (f.retries == 1 ? " retry" : " retries");
    return line;
  }

 private:
  const plugin::Host host_;
  plugin::DeliveryFigures figures_;
};

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_DELIVERY_FIGURES_HPP
