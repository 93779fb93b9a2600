// metrics.hpp — the whole engine-facing API of tokenspeed-metrics (see
// docs/embedding.md): definitions, options, roles and recording handles.
#pragma once

#include "tokenspeed/metrics/launcher.hpp"
#include "tokenspeed/metrics/metric_definition.hpp"
#include "tokenspeed/metrics/node.hpp"
#include "tokenspeed/metrics/options.hpp"
#include "tokenspeed/metrics/producer.hpp"
#include "tokenspeed/metrics/recorder.hpp"
#include "tokenspeed/metrics/recording.hpp"
#include "tokenspeed/metrics/shutdown_report.hpp"
#include "tokenspeed/metrics/startup_error.hpp"
#include "tokenspeed/metrics/tokenspeed_catalog.hpp"
