// metric_catalog.hpp — metric definitions as the host sees them (the public
// types of tokenspeed/metrics/metric_definition.hpp, whose first three kinds
// are the ABI's; a summary reaches plugins as a histogram)
// and the TokenSpeed catalog. Pure data: never touched on the hot path.
#pragma once

#include <tokenspeed/metric_reporter.h>

#include "tokenspeed/metrics/metric_definition.hpp"
#include "tokenspeed/metrics/tokenspeed_catalog.hpp"

namespace tokenspeed::metrics {

static_assert(static_cast<int>(MetricKind::counter) == TSM_KIND_COUNTER);
static_assert(static_cast<int>(MetricKind::gauge) == TSM_KIND_GAUGE);
static_assert(static_cast<int>(MetricKind::histogram) == TSM_KIND_HISTOGRAM);

}  // namespace tokenspeed::metrics
