// name_suggestion_test.cpp — "did you mean ...?" picks the closest known name,
// ignores letter case, and stays silent when nothing is close.
#include <catch2/catch.hpp>

#include "core/name_suggestion.hpp"

using namespace tokenspeed::metrics;

TEST_CASE("a name in the wrong case suggests the registered spelling") {
  CHECK(closest_name("JSONL", {"otlp", "jsonl", "prometheus"}) == "jsonl");
  CHECK(closest_name("Prometheus", {"jsonl", "prometheus"}) == "prometheus");
}

TEST_CASE("a name one or two edits away suggests the closest name") {
  CHECK(closest_name("jsnol", {"jsonl", "prometheus"}) == "jsonl");  // a transposition
  CHECK(closest_name("jsonll", {"jsonl", "prometheus"}) == "jsonl");
  CHECK(closest_name("promethues", {"jsonl", "prometheus"}) == "prometheus");
  CHECK(closest_name("otl", {"otlp", "statsd"}) == "otlp");
}

TEST_CASE("a name that resembles nothing gets no suggestion") {
  CHECK(closest_name("abc", {"jsonl", "prometheus"}).empty());
  CHECK(closest_name("datadog", {"jsonl", "prometheus"}).empty());
  CHECK(closest_name("x", {}).empty());
}

TEST_CASE("edit distance counts insertions, deletions, substitutions and transpositions") {
  CHECK(edit_distance("jsonl", "jsonl") == 0);
  CHECK(edit_distance("jsonl", "JSONL") == 0);
  CHECK(edit_distance("jsonl", "json") == 1);
  CHECK(edit_distance("jsonl", "jsnol") == 1);
  CHECK(edit_distance("", "abc") == 3);
}
