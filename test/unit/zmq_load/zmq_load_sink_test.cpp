// The zmq_load sink's emit, the engine's side of the feed: it allocates
// nothing, whatever the event (a change, the same value, an fpm commit, a
// family outside the feed, a refused rank), and every event it took is
// accounted for at close as sent, refused or lost. The wire is checked in
// test/integration/zmq_load_*.py.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "allocation_counter.hpp"
#include "zmq_load_sink.hpp"

using namespace tokenspeed::metrics;
using namespace tokenspeed::metrics::zmq_load;

namespace {

plugin::DeliveryFigures g_figures;

void keep(void*, const tsm_delivery_figures* f) {
  g_figures.sent = f->sent;
  g_figures.refused = f->refused;
  g_figures.lost = f->lost;
}

ZmqLoadOptions options(Schema schema) {
  ZmqLoadOptions out;
  out.endpoint = parse_endpoint("tcp://127.0.0.1:47731");  // a bind failure is only logged
  out.schema = schema;
  out.fields = FieldMap::preset(Preset::kTokenspeed);
  out.rank_label = "dp_rank";
  out.heartbeat = std::chrono::milliseconds(1000);
  out.max_ranks = 8;
  return out;
}

struct Event {
  const char* names[2] = {"model_name", "dp_rank"};
  const char* values[2] = {"m", "0"};
  tsm_metric_event event{};

  Event(const char* metric, uint32_t operation, const char* rank) {
    values[1] = rank;
    event.struct_size = sizeof event;
    event.metric = metric;
    event.operation = operation;
    event.weight = 1;
    event.label_count = 2;
    event.label_names = names;
    event.label_values = values;
  }
  // The event points into this object's own arrays: a copy points into its own.
  Event(const Event& other) : Event(other.event.metric, other.event.operation, other.values[1]) {}
  Event& operator=(const Event&) = delete;
};

}  // namespace

TEST_CASE("emit allocates nothing and close accounts for every event", "[zmq_load]") {
  for (const Schema schema : {Schema::kLoadStat, Schema::kForwardPass}) {
    tsm_host_api api{};
    api.struct_size = sizeof api;
    tsm_sink slot{};
    slot.struct_size = sizeof slot;
    slot.report_figures = keep;
    g_figures = {};
    ZmqLoadSink sink(options(schema), plugin::Host(api).for_sink(slot));
    std::vector<Event> events = {
        {"tokenspeed:num_requests_running", TSM_OP_SET, "0"},
        {"tokenspeed:kv_cache_usage_perc", TSM_OP_SET, "1"},
        {"tokenspeed:fpm_scheduled_num_prefill_requests", TSM_OP_SET, "1"},
        {"tokenspeed:fpm_iterations_total", TSM_OP_INC, "1"},
        {"tokenspeed:prompt_tokens_total", TSM_OP_INC, "0"},    // outside the feed
        {"tokenspeed:num_requests_waiting", TSM_OP_SET, "99"},  // beyond max_ranks: refused
    };
    long allocations = 0;
    {
      test::CountAllocations count;
      for (int i = 0; i < 3000; ++i) {
        for (Event& e : events) {
          e.event.value = static_cast<double>(i % 7);
          sink.emit(e.event);
        }
      }
      allocations = count.count();
    }
    CHECK(allocations == 0);
    sink.close(std::chrono::seconds(1));
    const uint64_t emitted = 3000 * events.size();
    CHECK(g_figures.sent + g_figures.refused + g_figures.lost == emitted);
    CHECK(g_figures.refused >= 3000);
  }
}
