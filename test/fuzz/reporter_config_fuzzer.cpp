// reporter_config_fuzzer.cpp — fuzzes what parses operator input at startup:
// the metrics and delivery flags (metrics_flags), the selection rules and the
// reporter configuration file (reporter_config) against a registry of three
// outputs. Input: one command-line argument per line, an empty line, then the
// file's contents (any --metrics-reporter-config value names that file).
// Every mistake must be a one-line StartupError; anything else escapes and fails.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>
#include <boost/program_options/options_description.hpp>

#include "config/metrics_flags.hpp"
#include "config/reporter_config.hpp"
#include "plugin/reporter_registry.hpp"
#include "core/startup_error.hpp"
#include "fuzz_support.hpp"

namespace {

namespace tsm = tokenspeed::metrics;

// Accepts any settings as given (an empty normalized buffer).
int accept_as_given(void*, const char*, size_t, tsm_buffer*, tsm_buffer*) { return TSM_OK; }

// Normalizes to a fixed object.
int normalize(void*, const char*, size_t, tsm_buffer* normalized, tsm_buffer*) {
  static constexpr std::string_view kNormalized = R"({"normalized":true})";
  normalized->assign(normalized, kNormalized.data(), kNormalized.size());
  return TSM_OK;
}

// Rejects settings that mention "bad", as a plugin rejects an unknown key.
int reject_bad(void*, const char* config, size_t size, tsm_buffer*, tsm_buffer* error) {
  if (std::string_view(config, size).find("bad") == std::string_view::npos) return TSM_OK;
  static constexpr std::string_view kMessage = "unsupported key 'bad'";
  error->assign(error, kMessage.data(), kMessage.size());
  return TSM_ERROR;
}

int no_sink(void*, const char*, size_t, tsm_sink*, tsm_buffer*) { return TSM_ERROR; }

// Made once: a registration window's host table lives for the process.
const tsm::ReporterRegistry& registry() {
  static tsm::ReporterRegistry* instance = [] {
    auto* made = new tsm::ReporterRegistry();
    made->begin("fuzz", "fuzz.so");
    for (const auto& [name, validate] :
         {std::pair{"echo", &accept_as_given}, std::pair{"normalizes", &normalize},
          std::pair{"strict", &reject_bad}}) {
      tsm_reporter_descriptor descriptor{};
      descriptor.struct_size = sizeof descriptor;
      descriptor.name = name;
      descriptor.validate = validate;
      descriptor.create_sink = &no_sink;
      FUZZ_CHECK(made->add(&descriptor).empty());
    }
    made->commit();
    return made;
  }();
  return *instance;
}

void check_one_line(const tsm::StartupError& error) {
  const std::string_view line = error.what();
  FUZZ_CHECK(!line.empty());
  FUZZ_CHECK(line.find('\n') == std::string_view::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::size_t blank = text.find("\n\n");
  const std::string_view flags = text.substr(0, blank);
  const std::string_view file =
      blank == std::string_view::npos ? std::string_view() : text.substr(blank + 2);
  std::vector<std::string> args;
  if (!flags.empty()) {
    for (const std::string_view arg : tsm::fuzz::split(flags, '\n')) args.emplace_back(arg);
  }
  const std::string config_path = (tsm::fuzz::scratch_dir() / "reporters.json").string();
  tsm::fuzz::write_file(config_path, file);

  boost::program_options::options_description description;
  constexpr tsm::FlagGroup kGroups[] = {tsm::FlagGroup::selection, tsm::FlagGroup::plugin_search,
                                        tsm::FlagGroup::delivery};
  tsm::add_metrics_flags(description, kGroups);
  try {
    const tsm::ExtractedFlags extracted = tsm::extract_flags(args, description);
    const tsm::MetricsSettings settings =
        tsm::check_options(tsm::options_from_flags(extracted.values));
    FUZZ_CHECK(settings.queue_size >= 2 && settings.queue_size <= (std::size_t{1} << 24));
    tsm::Options options = settings.given;
    // Whatever file was named, the one read is the input's (never a device).
    if (!options.reporter_config.empty()) options.reporter_config = config_path;
    const std::vector<std::string> warnings = tsm::ignored_flag_warnings(options);
    FUZZ_CHECK(!options.enable_metrics || warnings.empty());
    const tsm::ReporterSelection selection = tsm::resolve_reporters(options, registry(), nullptr);
    FUZZ_CHECK(selection.enabled == options.enable_metrics);
    if (selection.enabled) {
      FUZZ_CHECK(!selection.order.empty());
      const std::set<std::string> unique(selection.order.begin(), selection.order.end());
      FUZZ_CHECK(unique.size() == selection.order.size());
      FUZZ_CHECK(selection.prometheus == (unique.count("prometheus") == 1));
      for (const tsm::SelectedOutput& output : selection.outputs) {
        FUZZ_CHECK(output.reporter != nullptr && output.reporter->name() == output.name);
        FUZZ_CHECK(unique.count(output.name) == 1);
      }
    }
  } catch (const tsm::StartupError& error) {
    check_one_line(error);
  }
  // The file on its own, as read_reporter_config_file sees it.
  try {
    const boost::json::object object = tsm::read_reporter_config_file(config_path);
    static_cast<void>(object);
  } catch (const tsm::StartupError& error) {
    check_one_line(error);
    FUZZ_CHECK(error.file() == config_path);
  }
  return 0;
}
