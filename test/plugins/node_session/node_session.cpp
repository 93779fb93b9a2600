// node_session.cpp — a well-behaved output, 'node_session', with start_node.
// Settings: {"marker_dir": "<directory>"} (optional). start_node and
// create_sink each create a file named after themselves in marker_dir, so the
// creation of node or sink resources can be observed from outside.
#include <cstdio>
#include <string>
#include <string_view>

#include "test_plugin_common.h"

namespace {

// The string value of "marker_dir" in a JSON object, or "" (no escapes).
std::string marker_dir(std::string_view config) {
  const size_t key = config.find("\"marker_dir\"");
  if (key == std::string_view::npos) return {};
  const size_t open = config.find('"', config.find(':', key) + 1);
  if (open == std::string_view::npos) return {};
  const size_t close = config.find('"', open + 1);
  if (close == std::string_view::npos) return {};
  return std::string(config.substr(open + 1, close - open - 1));
}

void write_marker(std::string_view config, const char* name) {
  const std::string dir = marker_dir(config);
  if (dir.empty()) return;
  const std::string path = dir + "/" + name;
  if (std::FILE* file = std::fopen(path.c_str(), "w")) {
    std::fputs(name, file);
    std::fclose(file);
  }
}

int create_sink(void*, const char* config, size_t size, tsm_sink* sink, tsm_buffer*) {
  write_marker(std::string_view(config, size), "create_sink");
  return test_plugin_create_null_sink(nullptr, config, size, sink, nullptr);
}

int start_node(void*, const char* config, size_t size, tsm_node_session* session,
               tsm_buffer* producer_config, tsm_buffer*) {
  write_marker(std::string_view(config, size), "start_node");
  session->vtable = &test_plugin_null_session_vtable;
  session->self = nullptr;
  producer_config->assign(producer_config, config, size);
  return TSM_OK;
}

}  // namespace

extern "C" TSM_EXPORT int tsm_register(const tsm_host_api* host, tsm_buffer* error) {
  tsm_reporter_descriptor descriptor =
      test_plugin_descriptor("node_session", test_plugin_validate_echo);
  descriptor.create_sink = create_sink;
  descriptor.start_node = start_node;
  return test_plugin_register_descriptor(host, &descriptor, error);
}
