// plugin_validate_fuzzer.cpp — fuzzes one shipped plugin's validate through
// its C descriptor, registered through the host's own registry, with
// arbitrary settings objects (the input, when it is a JSON object, written as
// the host writes it). Built once per plugin: TSM_FUZZ_PLUGIN_PATH names the
// .so and TSM_FUZZ_REPORTER its output. validate must answer TSM_OK with a
// JSON object (or nothing) or TSM_ERROR with a one-line message, and what it
// normalized must validate again to the same object.
#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include <boost/json.hpp>

#include "core/abi_buffer.hpp"
#include "plugin/reporter_registry.hpp"
#include "core/strict_json.hpp"
#include "fuzz_support.hpp"

namespace {

namespace tsm = tokenspeed::metrics;

const tsm_reporter_descriptor* descriptor = nullptr;

struct Outcome {
  int status;
  std::string normalized;
  std::string error;
};

Outcome validate(const std::string& settings) {
  tsm::AbiBuffer normalized;
  tsm::AbiBuffer error;
  const int status = descriptor->validate(descriptor->user_data, settings.c_str(), settings.size(),
                                          normalized.get(), error.get());
  return Outcome{status, normalized.str(), error.str()};
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  void* plugin = ::dlopen(TSM_FUZZ_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  if (plugin == nullptr) {
    std::fprintf(stderr, "cannot load %s: %s\n", TSM_FUZZ_PLUGIN_PATH, ::dlerror());
    std::abort();
  }
  auto* entry = reinterpret_cast<tsm_register_fn>(::dlsym(plugin, TSM_REGISTER_SYMBOL));
  FUZZ_CHECK(entry != nullptr);
  // Never destroyed: the plugin keeps its host table for the life of the process.
  static auto* registry = new tsm::ReporterRegistry();
  registry->begin(TSM_FUZZ_REPORTER, TSM_FUZZ_PLUGIN_PATH);
  tsm::AbiBuffer error;
  FUZZ_CHECK(entry(registry->host_api(), error.get()) == TSM_OK);
  registry->commit();
  const tsm::Reporter* reporter = registry->find(TSM_FUZZ_REPORTER);
  FUZZ_CHECK(reporter != nullptr);
  descriptor = &reporter->descriptor();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  boost::json::value parsed;
  try {
    parsed = tsm::parse_strict_json(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const tsm::StrictJsonError&) {
    return 0;  // the host hands a plugin JSON objects only
  }
  if (!parsed.is_object()) return 0;
  const std::string settings = boost::json::serialize(parsed);

  const Outcome first = validate(settings);
  FUZZ_CHECK(first.status == TSM_OK || first.status == TSM_ERROR);
  if (first.status == TSM_ERROR) {
    FUZZ_CHECK(!first.error.empty());
    FUZZ_CHECK(first.error.find('\n') == std::string::npos);
    return 0;
  }
  const std::string& normalized = first.normalized.empty() ? settings : first.normalized;
  boost::json::value object;
  try {
    object = tsm::parse_strict_json(normalized);
  } catch (const tsm::StrictJsonError& error) {
    std::fprintf(stderr, "normalized settings are not JSON: %s\n%s\n", error.what(),
                 normalized.c_str());
    std::abort();
  }
  FUZZ_CHECK(object.is_object());
  const Outcome second = validate(boost::json::serialize(object));
  FUZZ_CHECK(second.status == TSM_OK);
  const std::string& renormalized =
      second.normalized.empty() ? boost::json::serialize(object) : second.normalized;
  FUZZ_CHECK(tsm::parse_strict_json(renormalized) == object);
  return 0;
}
