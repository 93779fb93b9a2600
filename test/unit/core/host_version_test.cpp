// host_version_test.cpp — the host's version is the one the build stamped:
// the Meson project version, in the form "--version" and the plugin host
// table show.
#include <catch2/catch.hpp>

#include <regex>
#include <string>

#include "core/host_version.hpp"

using namespace tokenspeed::metrics;

TEST_CASE("the host version is the Meson project version of this build") {
  CHECK(std::string(host_version()) == TSM_PROJECT_VERSION);
}

TEST_CASE("the host version is a release number MAJOR.MINOR.PATCH") {
  CHECK(std::regex_match(std::string(host_version()), std::regex("[0-9]+\\.[0-9]+\\.[0-9]+")));
}
