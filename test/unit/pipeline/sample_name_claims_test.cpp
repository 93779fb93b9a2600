// sample_name_claims_test.cpp — the names a family claims in the exposition
// are prometheus_client's: its name and its kind's suffixes; two families
// claiming one name are found, by name or by a suffix of the other's kind.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/sample_name_claims.hpp"

using namespace tokenspeed::metrics;

namespace {

MetricDefinition family(std::string name, MetricKind kind) {
  MetricDefinition metric;
  metric.name = std::move(name);
  metric.kind = kind;
  return metric;
}

// find_colliding_family over a table of families kept by name.
const MetricDefinition* colliding(
    const MetricDefinition& metric,
    const std::map<std::string, MetricDefinition, std::less<>>& by_name) {
  return find_colliding_family(metric, [&](std::string_view name) -> const MetricDefinition* {
    const auto it = by_name.find(name);
    return it == by_name.end() ? nullptr : &it->second;
  });
}

}  // namespace

TEST_CASE("each kind claims prometheus_client's suffixes after its name") {
  using Names = std::vector<std::string>;
  CHECK(claimed_names(family("c", MetricKind::counter)) == Names{"c", "c_total", "c_created"});
  CHECK(claimed_names(family("g", MetricKind::gauge)) == Names{"g"});
  CHECK(claimed_names(family("h", MetricKind::histogram)) ==
        Names{"h", "h_bucket", "h_sum", "h_count", "h_created"});
  CHECK(claimed_names(family("s", MetricKind::summary)) ==
        Names{"s", "s_sum", "s_count", "s_created"});
}

TEST_CASE("two families share a claimed name when a suffix of one is the other's name") {
  CHECK(shared_claimed_name(family("h:c", MetricKind::counter),
                            family("h:c_total", MetricKind::gauge)) == "h:c_total");
  CHECK(shared_claimed_name(family("x", MetricKind::histogram),
                            family("x_count", MetricKind::counter)) == "x_count");
  CHECK(shared_claimed_name(family("x", MetricKind::gauge), family("x", MetricKind::counter)) ==
        "x");
  CHECK(shared_claimed_name(family("a", MetricKind::counter), family("b", MetricKind::counter))
            .empty());
}

TEST_CASE("a family whose name another family claims as a suffixed name collides with it") {
  const std::map<std::string, MetricDefinition, std::less<>> by_name{
      {"h:c", family("h:c", MetricKind::counter)},
      {"lat", family("lat", MetricKind::histogram)},
  };
  const MetricDefinition* other = colliding(family("h:c_total", MetricKind::gauge), by_name);
  REQUIRE(other != nullptr);
  CHECK(other->name == "h:c");
  other = colliding(family("lat_sum", MetricKind::gauge), by_name);
  REQUIRE(other != nullptr);
  CHECK(other->name == "lat");
}

TEST_CASE("a family claiming the name of an existing family collides with it") {
  const std::map<std::string, MetricDefinition, std::less<>> by_name{
      {"q_total", family("q_total", MetricKind::gauge)},
  };
  const MetricDefinition* other = colliding(family("q", MetricKind::counter), by_name);
  REQUIRE(other != nullptr);
  CHECK(other->name == "q_total");
}

TEST_CASE("a suffix of another kind, or the family itself, is no collision") {
  const std::map<std::string, MetricDefinition, std::less<>> by_name{
      {"g", family("g", MetricKind::gauge)},
      {"lat", family("lat", MetricKind::gauge)},
  };
  // A gauge claims no suffix: "lat_sum" beside the gauge "lat" is free.
  CHECK(colliding(family("lat_sum", MetricKind::gauge), by_name) == nullptr);
  // A family is never its own collision.
  CHECK(colliding(family("g", MetricKind::gauge), by_name) == nullptr);
}
