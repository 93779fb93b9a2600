// node_session.cpp — a well-behaved output, 'node_session', with start_node.
// Settings: {"marker_dir": "<directory>"} (optional). start_node and
// create_sink each create a file named after themselves in marker_dir, so the
// creation of node or sink resources can be observed from outside.
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include <tokenspeed/metric_reporter.h>

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

int validate(void*, const char* config, size_t size, tsm_buffer* normalized, tsm_buffer*) {
  normalized->assign(normalized, config, size);
  return TSM_OK;
}

int emit(void*, const tsm_metric_event*, tsm_buffer*) { return TSM_OK; }

int close_sink(void*, int64_t, tsm_buffer*) { return TSM_OK; }

const tsm_sink_vtable kSinkVtable = {sizeof(tsm_sink_vtable), emit, close_sink};

int create_sink(void*, const char* config, size_t size, tsm_sink* sink, tsm_buffer*) {
  write_marker(std::string_view(config, size), "create_sink");
  sink->vtable = &kSinkVtable;
  sink->self = nullptr;
  return TSM_OK;
}

int close_session(void*, int64_t, tsm_buffer*) { return TSM_OK; }

const tsm_node_session_vtable kSessionVtable = {sizeof(tsm_node_session_vtable),
                                                close_session};

int start_node(void*, const char* config, size_t size, tsm_node_session* session,
               tsm_buffer* producer_config, tsm_buffer*) {
  write_marker(std::string_view(config, size), "start_node");
  session->vtable = &kSessionVtable;
  session->self = nullptr;
  producer_config->assign(producer_config, config, size);
  return TSM_OK;
}

}  // namespace

extern "C" TSM_EXPORT int tsm_register(const tsm_host_api* host, tsm_buffer* error) {
  if (host->api_version != TSM_METRIC_REPORTER_API_VERSION) return TSM_UNSUPPORTED_API;
  tsm_reporter_descriptor descriptor;
  std::memset(&descriptor, 0, sizeof descriptor);
  descriptor.struct_size = sizeof descriptor;
  descriptor.name = "node_session";
  descriptor.validate = validate;
  descriptor.create_sink = create_sink;
  descriptor.start_node = start_node;
  return host->register_metric_reporter(host->host_data, &descriptor, error);
}
