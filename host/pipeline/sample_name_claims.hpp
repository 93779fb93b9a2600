// sample_name_claims.hpp — the names a metric family claims in the exposition,
// counted as prometheus_client's registry counts them, so that two families
// whose samples would share a name are caught (in one process at definition,
// across processes at merge). Pure functions; never on the hot path.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/metric_catalog.hpp"

namespace tokenspeed::metrics {

// The suffixes a family of this kind claims after its name: a counter
// "_total" and "_created", a histogram "_bucket", "_sum", "_count" and
// "_created", a gauge none (prometheus_client's CollectorRegistry._get_names).
const std::vector<std::string_view>& claimed_suffixes(MetricKind kind);

// The family's name followed by its name with each claimed suffix.
std::vector<std::string> claimed_names(const MetricDefinition& metric);

// A name both families claim ("h:c_total" for the counter h:c and the gauge
// h:c_total); empty when they claim none in common.
std::string shared_claimed_name(const MetricDefinition& a, const MetricDefinition& b);

// The first family, other than one called metric.name, that claims a name
// metric claims, looked up by family name through find (nullptr: no family of
// that name). Used where families are kept by name and nothing else.
const MetricDefinition* find_colliding_family(
    const MetricDefinition& metric,
    const std::function<const MetricDefinition*(std::string_view name)>& find);

}  // namespace tokenspeed::metrics
