// statsd.cpp — the statsd output: its settings table (read by validate, shown
// by `tokenspeed-metrics plugins`, matched by docs/plugins/statsd.md),
// create_sink and registration. Registration only declares factories: no
// thread, no socket before create_sink.
// Tested in test/integration/statsd_agreement.py and
// test/integration/statsd_dogstatsd.py (the output selected in `simulate`).
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include <tokenspeed/kit/registration.hpp>
#include <tokenspeed/kit/settings.hpp>
#include <tokenspeed/metric_reporter.hpp>

#include "statsd_sink.hpp"

namespace tokenspeed::metrics::statsd {
namespace {

namespace kit = tokenspeed::metrics::kit;
using kit::SettingType;

constexpr int64_t kUdpDatagramDefault = 1432;   // fits a 1500-byte Ethernet MTU
constexpr int64_t kUnixDatagramDefault = 8192;  // the DogStatsD agent's default buffer

// The values of flavour's choices, in their order.
constexpr Flavour kFlavourChoices[] = {Flavour::kStatsd, Flavour::kDogstatsd};

const kit::SettingsTable& settings_table() {
  static const kit::SettingsTable table{{
      {"address", SettingType::kString, R"("127.0.0.1:8125")", 0, 0,
       "Where to send: host:port or [v6]:port over UDP, or unix:///path for a Unix datagram "
       "socket."},
      kit::Setting("flavour", SettingType::kChoice, R"("statsd")", 0, 0,
                   "statsd: plain StatsD, labels as name segments, observations as |ms timers; "
                   "dogstatsd: labels as |#name:value tags, observations as |d distributions.",
                   "statsd|dogstatsd")
          .bind_choices<kFlavourChoices, &StatsdOptions::format, &FormatOptions::flavour>(),
      kit::Setting("prefix", SettingType::kString, R"("")", 0, 0,
                   "Prepended to every metric name, followed by a '.' unless it ends in one.")
          .bind<&StatsdOptions::format, &FormatOptions::prefix>(),
      {"max_datagram_bytes", SettingType::kInteger, "0", 0, 65507,
       "Largest datagram; 0 means 1432 over UDP and 8192 over a Unix socket."},
      kit::Setting("flush_interval_ms", SettingType::kInteger, "1000", 10, 3600000,
                   "How often the lines are packed into datagrams and sent.")
          .bind<&StatsdOptions::flush_interval>(),
      kit::Setting("aggregation", SettingType::kBoolean, "true", 0, 0,
                   "Sum counter deltas and keep each gauge's last value per flush; false sends "
                   "every event.")
          .bind<&StatsdOptions::aggregate>(),
      kit::Setting("dns_refresh_interval_ms", SettingType::kInteger, "30000", 1000, 86400000,
                   "How often the host name is resolved again (on the sending thread, never per "
                   "datagram).")
          .bind<&StatsdOptions::dns_refresh>(),
      kit::Setting("max_buffer_bytes", SettingType::kInteger, "4194304", 65536, 1073741824,
                   "Formatted lines held between flushes; events beyond it are dropped and "
                   "counted, and a flush starts early at half of it.")
          .bind<&StatsdOptions::max_buffer_bytes>(),
      kit::Setting("max_series", SettingType::kInteger, "100000", 1, 10000000,
                   "Counter and gauge series aggregated per process; events of further series "
                   "are dropped, counted and logged.")
          .bind<&StatsdOptions::max_series>(),
      {"process_tags", SettingType::kBoolean, "false", 0, 0,
       "dogstatsd only: add the tags process:<name> and node:<node> (as the host names them) "
       "to every line, so that the gauges of several processes stay apart."},
  }};
  return table;
}

// The checks across keys, after the table's.
void check(kit::json::Value& settings) {
  if (settings.at("process_tags").as_bool() && settings.at("flavour").as_string() != "dogstatsd")
    throw std::invalid_argument(
        "'process_tags' needs \"flavour\": \"dogstatsd\" (plain StatsD has no tags)");
  const Address address = parse_address(settings.at("address").as_string());
  const int64_t max_datagram = settings.at("max_datagram_bytes").as_integer();
  if (max_datagram != 0 && max_datagram < 64)
    throw std::invalid_argument(
        "'max_datagram_bytes' must be 0 (automatic) or from 64 to 65507, got " +
        std::to_string(max_datagram));
  for (const char c : settings.at("prefix").as_string()) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok)
      throw std::invalid_argument(
          "'prefix' may hold only letters, digits, '_', '.' and '-', got \"" +
          settings.at("prefix").as_string() + "\"");
  }
}

std::unique_ptr<StatsdSink> create_sink(const kit::Settings& settings, const plugin::Host& host) {
  StatsdOptions options;
  settings_table().fill(settings, options);
  options.address = parse_address(settings.string("address"));
  if (settings.boolean("process_tags")) {
    const plugin::ProcessIdentity process = host.process();
    options.format.constant_tags = identity_tags(process.name, process.node);
  }
  int64_t max_datagram = settings.integer("max_datagram_bytes");
  if (max_datagram == 0)
    max_datagram = options.address.unix_socket ? kUnixDatagramDefault : kUdpDatagramDefault;
  options.max_datagram_bytes = static_cast<std::size_t>(max_datagram);
  return std::make_unique<StatsdSink>(std::move(options), host);
}

}  // namespace

// Registration (start_node NULL: each producer sends itself).
TSM_KIT_REGISTER_OUTPUT(StatsdSink, "statsd", TSM_PLUGIN_VERSION, &settings_table(), check,
                        create_sink)

}  // namespace tokenspeed::metrics::statsd
