// startup_error.hpp — the host's name for the public startup error type
// (tokenspeed/metrics/startup_error.hpp), thrown by every startup check.
#pragma once

#include "tokenspeed/metrics/startup_error.hpp"
