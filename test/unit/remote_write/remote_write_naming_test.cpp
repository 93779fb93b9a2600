// remote_write_naming_test.cpp — the remote_write output writes le as
// /metrics writes it and sends only the label names Prometheus accepts.
#include <catch2/catch.hpp>

#include <limits>

#include "remote_write_naming.hpp"

namespace rw = tokenspeed::metrics::remote_write;

TEST_CASE("le is written as the exposition writes it") {
  CHECK(rw::format_le(0.1) == "0.1");
  CHECK(rw::format_le(1.0) == "1");
  CHECK(rw::format_le(2.5) == "2.5");
  CHECK(rw::format_le(1e6) == "1e+06");
  CHECK(rw::format_le(0.00001) == "1e-05");
  CHECK(rw::format_le(std::numeric_limits<double>::infinity()) == "+Inf");
}

TEST_CASE("a label name is valid when Prometheus accepts it and it is not reserved") {
  CHECK(rw::valid_label_name("model_name"));
  CHECK(rw::valid_label_name("_private"));
  CHECK_FALSE(rw::valid_label_name("__name__"));
  CHECK_FALSE(rw::valid_label_name("a-b"));
  CHECK_FALSE(rw::valid_label_name("1a"));
  CHECK_FALSE(rw::valid_label_name(""));
}
