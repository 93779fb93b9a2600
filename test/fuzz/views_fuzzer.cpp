// views_fuzzer.cpp — fuzzes the views file (host/config/metric_views) with
// arbitrary text in both forms. Input: one byte that picks the file's name
// (".yaml", ".json", or a name without extension: the form then follows the
// first character), then the file's text. The rules:
//   - the file is read, or refused with one StartupError of one line that
//     names the file; nothing else escapes;
//   - views that were read describe every TokenSpeed catalog family in one
//     line each, and a family they leave valid passes checked_definition;
//   - the handoff reproduces them: the JSON they carry reads back as views
//     that leave every family exactly as the file's views do.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include <tokenspeed/metrics/tokenspeed_catalog.hpp>

#include "config/metric_views.hpp"
#include "core/startup_error.hpp"
#include "fuzz_support.hpp"

namespace {

namespace tsm = tokenspeed::metrics;

std::string file_name(std::uint8_t choice) {
  switch (choice % 3) {
    case 0:
      return "views.yaml";
    case 1:
      return "views.json";
    default:
      return "views";
  }
}

// The catalog's families as views leave them, one line each.
std::string described(const tsm::MetricViews& views) {
  std::string lines;
  for (const tsm::MetricDefinition& definition : tsm::tokenspeed_catalog()) {
    const tsm::ViewedDefinition viewed = tsm::apply_views(views, definition);
    const std::string line = tsm::describe_viewed(viewed);
    FUZZ_CHECK(!line.empty() && line.find('\n') == std::string::npos);
    if (!viewed.dropped && line.find("invalid: ") == std::string::npos) {
      try {
        (void)tsm::checked_definition(viewed.definition);
      } catch (const std::invalid_argument&) {
        FUZZ_CHECK(!"a family check called valid fails checked_definition");
      }
    }
    lines += line + "\n";
  }
  return lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string file = file_name(data[0]);
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  tsm::MetricViews views;
  try {
    views = tsm::metric_views_from_text(text, file);
  } catch (const tsm::StartupError& error) {
    const std::string_view message = error.what();
    FUZZ_CHECK(message.find('\n') == std::string_view::npos);
    FUZZ_CHECK(message.find(file) != std::string_view::npos);
    return 0;
  }
  const std::string from_file = described(views);
  const tsm::MetricViews handed = tsm::metric_views_from_json(views.json, file);
  FUZZ_CHECK(handed.views.size() == views.views.size());
  FUZZ_CHECK(described(handed) == from_file);
  return 0;
}
