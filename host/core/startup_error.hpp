// startup_error.hpp — the host's name for the public startup error type
// (tokenspeed/metrics/startup_error.hpp), thrown by every startup check.
// Tested in test/unit/prometheus/prometheus_options_test.cpp and
// test/cli/test_config_file.py (exit 2, one line).
#pragma once

#include "tokenspeed/metrics/startup_error.hpp"
