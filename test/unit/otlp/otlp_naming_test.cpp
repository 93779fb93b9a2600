// otlp_naming_test.cpp — how the otlp output names metrics and units: a
// counter's "_total" is dropped (a monotonic Sum says it), other names stay;
// units become UCUM.
#include <catch2/catch.hpp>

#include "otlp_naming.hpp"

using tokenspeed::metrics::otlp::otlp_metric_name;
using tokenspeed::metrics::otlp::otlp_unit;

TEST_CASE("a counter's _total suffix is dropped; other kinds keep their names") {
  CHECK(otlp_metric_name("tokenspeed:generation_tokens_total", TSM_KIND_COUNTER) ==
        "tokenspeed:generation_tokens");
  CHECK(otlp_metric_name("tokenspeed:iteration_tokens_total", TSM_KIND_HISTOGRAM) ==
        "tokenspeed:iteration_tokens_total");
  CHECK(otlp_metric_name("tokenspeed:num_requests_running", TSM_KIND_GAUGE) ==
        "tokenspeed:num_requests_running");
  CHECK(otlp_metric_name("requests", TSM_KIND_COUNTER) == "requests");
  CHECK(otlp_metric_name("_total", TSM_KIND_COUNTER) == "_total");
}

TEST_CASE("units become UCUM: SI symbols, 1 for a ratio, {thing} for counts") {
  CHECK(otlp_unit("seconds") == "s");
  CHECK(otlp_unit("milliseconds") == "ms");
  CHECK(otlp_unit("bytes") == "By");
  CHECK(otlp_unit("ratio") == "1");
  CHECK(otlp_unit("tokens") == "{token}");
  CHECK(otlp_unit("requests") == "{request}");
  CHECK(otlp_unit("drafts") == "{draft}");
  CHECK(otlp_unit("{token}") == "{token}");
  CHECK(otlp_unit("") == "");
}
