// delivery_figures_test.cpp — what a kit sink says of its events: the Host a
// sink gets carries its process and the figures callback (or neither, from
// an older host), the shares of a collect's events add up exactly, and the
// close line names what did not reach the back end.
#include <catch2/catch.hpp>

#include <numeric>
#include <string>
#include <vector>

#include <tokenspeed/kit/delivery_figures.hpp>

#include "capturing_host.hpp"

namespace kit = tokenspeed::metrics::kit;
namespace plugin = tokenspeed::metrics::plugin;

namespace {

struct Reported {
  int calls = 0;
  tsm_delivery_figures last{};
};

void remember(void* data, const tsm_delivery_figures* figures) {
  auto* reported = static_cast<Reported*>(data);
  ++reported->calls;
  reported->last = *figures;
}

}  // namespace

TEST_CASE("the Host of create_sink carries the sink's process and its figures callback") {
  tsm_process_identity identity{};
  identity.struct_size = sizeof identity;
  identity.name = "scheduler-2";
  identity.role = "scheduler";
  identity.node = "gpu-node-7";
  identity.rank = 2;
  identity.pid = 4321;
  Reported reported;
  tsm_sink sink{};
  sink.struct_size = sizeof sink;
  sink.process = &identity;
  sink.host_sink_data = &reported;
  sink.report_figures = remember;

  const plugin::Host host = kit_test::capturing_host().for_sink(sink);
  const plugin::ProcessIdentity process = host.process();
  CHECK(process.from_host);
  CHECK(process.name == "scheduler-2");
  CHECK(process.role == "scheduler");
  CHECK(process.node == "gpu-node-7");
  CHECK(process.rank == 2);
  CHECK(process.pid == 4321);
  REQUIRE(host.takes_figures());

  kit::DeliveryAccount account(host);
  account.figures().sent = 7;
  account.figures().refused = 2;
  account.figures().pending = 1;
  account.report();
  CHECK(reported.calls == 1);
  CHECK(reported.last.struct_size == sizeof(tsm_delivery_figures));
  CHECK(reported.last.sent == 7);
  CHECK(reported.last.refused == 2);
  CHECK(reported.last.pending == 1);
}

TEST_CASE("from a host older than minor 3 a sink names itself and reports nowhere") {
  tsm_sink sink{};
  sink.struct_size = TSM_SINK_SIZE_V1;  // an older host's struct ends at self
  // Past its end the memory holds anything: never read.
  sink.process = reinterpret_cast<const tsm_process_identity*>(0x1);
  sink.report_figures = reinterpret_cast<void (*)(void*, const tsm_delivery_figures*)>(0x1);
  const plugin::Host host = kit_test::capturing_host().for_sink(sink);
  const plugin::ProcessIdentity process = host.process();
  CHECK_FALSE(process.from_host);
  CHECK(process.pid == static_cast<int64_t>(::getpid()));
  CHECK(process.name == "pid-" + std::to_string(::getpid()));
  CHECK(process.node == plugin::this_host_name());
  CHECK_FALSE(host.takes_figures());
  kit::DeliveryAccount(host).report();  // does nothing, and does not crash
}

TEST_CASE("a collect's events are shared among its requests by their items, exactly") {
  const std::vector<uint64_t> shares = kit::share_events(1000, {10, 30, 60});
  CHECK(shares == std::vector<uint64_t>{100, 300, 600});
  for (const uint64_t events : {0ull, 1ull, 7ull, 999983ull}) {
    for (const std::vector<std::size_t>& items :
         {std::vector<std::size_t>{1}, {3, 3, 3}, {1, 0, 2000}, {0, 0}, {5, 7, 11, 13}}) {
      const std::vector<uint64_t> split = kit::share_events(events, items);
      REQUIRE(split.size() == items.size());
      CHECK(std::accumulate(split.begin(), split.end(), uint64_t{0}) == events);
    }
  }
  CHECK(kit::share_events(5, {}).empty());
}

TEST_CASE("close names the events that did not reach the back end, and nothing when all did") {
  kit::DeliveryAccount account(kit_test::capturing_host());
  account.figures().sent = 3812;
  CHECK(account.close_summary("http://x", "over max_series", "rejected").empty());
  account.figures().refused = 1188;
  account.figures().retries = 2;
  CHECK(account.close_summary("http://x", "over max_series", "rejected") ==
        "at close: 1188 of 5000 events did not reach http://x: 1188 refused (over max_series), "
        "0 lost (rejected); 3812 sent, 2 retries");
}
