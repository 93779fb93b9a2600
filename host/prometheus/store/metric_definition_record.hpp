// metric_definition_record.hpp — a metric definition as the JSON text that a
// producer's metric file carries, so the launcher's scrape renders families
// it never saw defined. Startup and scrape time only.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/metric_catalog.hpp"

namespace tokenspeed::metrics {

// {"kind":"histogram","help":"...","unit":"seconds","labels":["a"],
//  "buckets":["0x1.999999999999ap-4","0x1p+0"],"gauge_mode":"livemax"}: the
// bounds as hexadecimal floating-point text, so they round-trip exactly.
std::string encode_definition(const MetricDefinition& definition);

// The definition of the family called name, or nothing when payload is not
// a valid record or names what checked_definition rejects (a corrupt or
// foreign file never reaches the exposition).
std::optional<MetricDefinition> decode_definition(std::string_view name, std::string_view payload);

}  // namespace tokenspeed::metrics
