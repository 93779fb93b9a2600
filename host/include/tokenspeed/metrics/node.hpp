// node.hpp — the names of the releases before the two roles were called
// launcher and producer: Node is the Launcher and Worker the Producer. New code
// includes launcher.hpp and producer.hpp (or metrics.hpp).
#pragma once

#include "tokenspeed/metrics/launcher.hpp"
#include "tokenspeed/metrics/producer.hpp"

namespace tokenspeed::metrics {

using Node [[deprecated("renamed Launcher (tokenspeed/metrics/launcher.hpp)")]] = Launcher;
using Worker [[deprecated("renamed Producer (tokenspeed/metrics/producer.hpp)")]] = Producer;

}  // namespace tokenspeed::metrics
