// reporter.cpp — calls into one plugin's factories through AbiBuffer and turns
// every failure (status, bad result, escaped exception) into an error result.
// Never called on the hot path.
#include "plugin/reporter.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <exception>
#include <utility>

#include <boost/json/serialize.hpp>

#include "core/abi_buffer.hpp"
#include "core/startup_error.hpp"
#include "core/strict_json.hpp"
#include "core/plugin_call_context.hpp"

namespace tokenspeed::metrics {
namespace {

const char* kind_name(const boost::json::value& value) {
  switch (value.kind()) {
    case boost::json::kind::null:
      return "null";
    case boost::json::kind::bool_:
      return "a boolean";
    case boost::json::kind::int64:
    case boost::json::kind::uint64:
    case boost::json::kind::double_:
      return "a number";
    case boost::json::kind::string:
      return "a string";
    case boost::json::kind::array:
      return "an array";
    case boost::json::kind::object:
      return "an object";
  }
  return "a value";
}

std::string failure_message(const AbiBuffer& error, int status, const char* function) {
  if (!error.empty()) return error.str();
  return std::string(function) + " returned status " + std::to_string(status) +
         " without a message";
}

// Closes a sink or session the host refuses (it broke the contract), so the
// plugin can free it; returns what to add to the refusal when that close
// failed too, so that neither fault goes unsaid.
template <typename Handle>
std::string close_refused(const Handle& handle, std::chrono::nanoseconds timeout) {
  AbiBuffer error;
  int status = TSM_ERROR;
  try {
    status = handle.vtable->close(handle.self, timeout.count(), error.get());
  } catch (...) {
    return " (closing it, an exception escaped close)";
  }
  if (status == TSM_OK) return "";
  return " (closing it failed too: " + failure_message(error, status, "close") + ")";
}

// Parses a plugin's JSON result; returns an explanation when it is not a
// JSON object, "" otherwise.
std::string parse_object(const std::string& text, boost::json::object& out) {
  try {
    boost::json::value value = parse_strict_json(text);
    if (!value.is_object()) return std::string("got ") + kind_name(value);
    out = std::move(value.as_object());
    return {};
  } catch (const StrictJsonError& error) {
    if (error.kind() == StrictJsonError::Kind::duplicate_key) {
      return std::string(error.what()) + " at '" + error.key_path() + "'";
    }
    return error.what();
  }
}

}  // namespace

std::string Reporter::call_text(const char* function) const {
  return "output '" + name_ + "' (plugin file '" + plugin_path_ + "') during " + function;
}

Reporter::Reporter(const tsm_reporter_descriptor& descriptor, std::string plugin_name,
                   std::string plugin_path)
    : plugin_name_(std::move(plugin_name)), plugin_path_(std::move(plugin_path)) {
  const std::size_t size =
      std::min<std::size_t>(descriptor.struct_size, sizeof(tsm_reporter_descriptor));
  std::memcpy(&descriptor_, &descriptor, size);
  descriptor_.struct_size = sizeof(tsm_reporter_descriptor);
  if (descriptor.name != nullptr) name_ = descriptor.name;
  descriptor_.name = name_.c_str();
  // descriptor_.version is null unless the copy above reached it.
  if (descriptor_.version != nullptr) {
    constexpr std::size_t kMaxVersionBytes = 64;
    const char* version = descriptor_.version;
    for (std::size_t i = 0; i < kMaxVersionBytes && version[i] != '\0'; ++i) {
      const char c = version[i];
      version_.push_back(static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c);
    }
  }
  descriptor_.version = version_.empty() ? nullptr : version_.c_str();
  constexpr std::size_t kSettingsEnd =
      offsetof(tsm_reporter_descriptor, settings) + sizeof(descriptor.settings);
  if (descriptor.struct_size >= kSettingsEnd && descriptor.settings != nullptr) {
    settings_ = descriptor.settings;
  }
  descriptor_.settings = settings_.empty() ? nullptr : settings_.c_str();
}

boost::json::object Reporter::validate(const boost::json::object& config,
                                       const std::string& config_file) const {
  const StartupErrorContext context{name_, config_file, {}};
  const std::string text = boost::json::serialize(config);
  AbiBuffer normalized;
  AbiBuffer error;
  int status = TSM_ERROR;
  const std::string call = call_text("validate");
  try {
    const PluginCallScope scope(call.c_str());
    status = descriptor_.validate(descriptor_.user_data, text.c_str(), text.size(),
                                  normalized.get(), error.get());
  } catch (...) {
    throw StartupError(context, "rejected its configuration: an exception escaped validate");
  }
  if (status != TSM_OK) {
    throw StartupError(context,
                       "rejected its configuration: " + failure_message(error, status, "validate"));
  }
  if (normalized.empty()) return config;
  boost::json::object result;
  const std::string problem = parse_object(normalized.str(), result);
  if (!problem.empty()) {
    throw StartupError(context, "validate did not return a JSON object: " + problem);
  }
  return result;
}

CreateSinkResult Reporter::create_sink(const boost::json::object& producer_config,
                                       tsm_sink prepared) const noexcept {
  CreateSinkResult result;
  try {
    const std::string text = boost::json::serialize(producer_config);
    AbiBuffer error;
    tsm_sink sink = prepared;
    sink.struct_size = sizeof(tsm_sink);
    sink.vtable = nullptr;
    sink.self = nullptr;
    int status = TSM_ERROR;
    const std::string call = call_text("create_sink");
    try {
      const PluginCallScope scope(call.c_str());
      status = descriptor_.create_sink(descriptor_.user_data, text.c_str(), text.size(), &sink,
                                       error.get());
    } catch (...) {
      result.error = "an exception escaped create_sink";
      return result;
    }
    if (status != TSM_OK) {
      result.error = "create_sink failed: " + failure_message(error, status, "create_sink");
      return result;
    }
    if (sink.vtable == nullptr || sink.vtable->close == nullptr) {
      result.error = "create_sink returned a sink without a close function";
      return result;
    }
    if (sink.vtable->emit == nullptr) {
      result.error = "create_sink returned a sink without an emit function" +
                     close_refused(sink, std::chrono::nanoseconds(0));
      return result;
    }
    result.ok = true;
    result.sink = sink;
  } catch (const std::exception& error) {
    result.ok = false;
    result.error = std::string("create_sink: ") + error.what();
  }
  return result;
}

StartNodeResult Reporter::start_node(const boost::json::object& config,
                                     std::chrono::nanoseconds cleanup_timeout) const noexcept {
  StartNodeResult result;
  try {
    if (descriptor_.start_node == nullptr) {
      result.ok = true;
      result.producer_config = config;
      return result;
    }
    const std::string text = boost::json::serialize(config);
    AbiBuffer producer;
    AbiBuffer error;
    tsm_node_session session{};
    session.struct_size = sizeof(tsm_node_session);
    int status = TSM_ERROR;
    const std::string call = call_text("start_node");
    try {
      const PluginCallScope scope(call.c_str());
      status = descriptor_.start_node(descriptor_.user_data, text.c_str(), text.size(), &session,
                                      producer.get(), error.get());
    } catch (...) {
      result.error = "an exception escaped start_node";
      return result;
    }
    if (status != TSM_OK) {
      result.error = "start_node failed: " + failure_message(error, status, "start_node");
      return result;
    }
    std::string problem;
    if (session.vtable == nullptr || session.vtable->close == nullptr) {
      problem = "start_node returned a session without a close function";
    } else if (producer.empty()) {
      problem = "start_node did not return a producer configuration";
    } else {
      problem = parse_object(producer.str(), result.producer_config);
      if (!problem.empty()) problem = "start_node did not return a JSON object: " + problem;
    }
    if (!problem.empty()) {
      if (session.vtable != nullptr && session.vtable->close != nullptr) {
        problem += close_refused(session, cleanup_timeout);
      }
      result.error = problem;
      result.producer_config.clear();
      return result;
    }
    result.ok = true;
    result.session = session;
  } catch (const std::exception& error) {
    result.ok = false;
    result.error = std::string("start_node: ") + error.what();
  }
  return result;
}

}  // namespace tokenspeed::metrics
