// view_renames.hpp — a view's new name that another family of the process
// already holds (two views renaming two families to one name, or a family
// renamed to an engine family's name). An operator's views file must never
// make an engine's call fail, so the collector defines the renamed family
// under the engine's own name instead, and an engine family whose name a view
// gave to another records nothing. Either is counted in
// tokenspeed_metrics_view_renames_refused_total{family} and written in one
// line, once per family and process. Startup path only (definitions).
#pragma once

#include <string>
#include <string_view>

#include "core/metric_catalog.hpp"

namespace tokenspeed::metrics {

// tokenspeed_metrics_view_renames_refused_total{family}: engine families of
// the process (family: the engine's name) that a view's rename could not
// apply to, or whose own name a view gave to another family.
const MetricDefinition& view_renames_refused_definition();

// The line of a family defined under its engine name because another family
// holds the name a view gives it (clash: why the collector refuses that).
std::string rename_refused_line(std::string_view views_file, const MetricDefinition& engine,
                                std::string_view view_name, std::string_view clash);

// The line of an engine family that records nothing because a view gave its
// name to another family of the process.
std::string name_given_away_line(std::string_view views_file, const MetricDefinition& engine,
                                 std::string_view clash);

}  // namespace tokenspeed::metrics
