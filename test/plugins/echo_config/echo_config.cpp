// echo_config.cpp — a well-behaved output, 'echo_config', whose validate
// accepts the settings keys endpoint, queue_size and labels, rejects any
// other key, and answers the configuration it was given unchanged.
#include <string>
#include <string_view>

#include "test_plugin_common.h"

namespace {

constexpr std::string_view kAllowedKeys[] = {"endpoint", "labels", "queue_size"};

// Skips whitespace, returns the index of the next significant character.
size_t skip_space(std::string_view text, size_t at) {
  while (at < text.size() &&
         (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r')) {
    ++at;
  }
  return at;
}

// text[at] is '"'; returns the index just past the closing quote.
size_t skip_string(std::string_view text, size_t at) {
  for (++at; at < text.size(); ++at) {
    if (text[at] == '\\') {
      ++at;
    } else if (text[at] == '"') {
      return at + 1;
    }
  }
  return text.size();
}

// Skips one JSON value starting at text[at]; returns the index past it.
size_t skip_value(std::string_view text, size_t at) {
  int depth = 0;
  while (at < text.size()) {
    const char c = text[at];
    if (c == '"') {
      at = skip_string(text, at);
      if (depth == 0) return at;
      continue;
    }
    if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (depth == 0) return at;
      --depth;
      if (depth == 0) return at + 1;
    } else if (depth == 0 && c == ',') {
      return at;
    }
    ++at;
  }
  return at;
}

// Returns the first top-level key not in kAllowedKeys, or an empty string.
std::string first_unknown_key(std::string_view text) {
  size_t at = skip_space(text, 0);
  if (at >= text.size() || text[at] != '{') return {};
  at = skip_space(text, at + 1);
  while (at < text.size() && text[at] == '"') {
    const size_t end = skip_string(text, at);
    const std::string_view key = text.substr(at + 1, end - at - 2);
    bool allowed = false;
    for (std::string_view candidate : kAllowedKeys) allowed = allowed || key == candidate;
    if (!allowed) return std::string(key.empty() ? std::string_view("\"\"") : key);
    at = skip_space(text, end);
    if (at < text.size() && text[at] == ':') at = skip_space(text, at + 1);
    at = skip_space(text, skip_value(text, at));
    if (at < text.size() && text[at] == ',') at = skip_space(text, at + 1);
  }
  return {};
}

int validate(void*, const char* config, size_t size, tsm_buffer* normalized, tsm_buffer* error) {
  const std::string unknown = first_unknown_key(std::string_view(config, size));
  if (!unknown.empty()) {
    const std::string message =
        "unknown key '" + unknown + "' (allowed keys: endpoint, labels, queue_size)";
    error->assign(error, message.data(), message.size());
    return TSM_ERROR;
  }
  normalized->assign(normalized, config, size);
  return TSM_OK;
}

}  // namespace

extern "C" TSM_EXPORT int tsm_register(const tsm_host_api* host, tsm_buffer* error) {
  return test_plugin_register(host, "echo_config", validate, error);
}
