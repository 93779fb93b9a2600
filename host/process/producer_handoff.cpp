// producer_handoff.cpp — (de)serializes the handoff with Boost.JSON and moves
// it through a sealed memfd, readable only through the inherited descriptor.
#include "process/producer_handoff.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "core/bounded_file.hpp"
#include "core/startup_error.hpp"

namespace tokenspeed::metrics {
namespace {

[[noreturn]] void bad_handoff(const std::string& key, const std::string& message) {
  throw StartupError({"", "", key}, "invalid producer handoff: " + message);
}

const boost::json::value& member(const boost::json::object& json, const char* key) {
  const boost::json::value* value = json.if_contains(key);
  if (value == nullptr) bad_handoff(key, "missing");
  return *value;
}

std::string string_member(const boost::json::object& json, const char* key) {
  const boost::json::value& value = member(json, key);
  if (!value.is_string()) bad_handoff(key, "not a string");
  return std::string(value.get_string());
}

std::int64_t int_member(const boost::json::object& json, const char* key) {
  const boost::json::value& value = member(json, key);
  if (!value.is_int64() && !value.is_uint64()) bad_handoff(key, "not an integer");
  return value.to_number<std::int64_t>();
}

}  // namespace

boost::json::object handoff_to_json(const ProducerHandoff& handoff) {
  boost::json::array outputs;
  for (const ProducerOutput& output : handoff.outputs) {
    outputs.push_back(boost::json::object{{"name", output.name},
                                          {"producer_config", output.producer_config},
                                          {"isolation", output.isolation.to_json()}});
  }
  boost::json::array dirs;
  for (const std::string& dir : handoff.plugin_dirs) dirs.push_back(boost::json::string(dir));
  boost::json::object json{
      {"outputs", std::move(outputs)},
      {"plugin_dirs", std::move(dirs)},
      {"disabled_plugins", handoff.disabled_plugins},
      {"allow_insecure_plugins", handoff.allow_insecure_plugins},
      {"run_dir", handoff.run_dir},
      {"queue_size", static_cast<std::uint64_t>(handoff.queue_size)},
      {"shutdown_budget_ns", static_cast<std::int64_t>(handoff.shutdown_budget.count())},
      {"max_series_per_family", static_cast<std::uint64_t>(handoff.max_series_per_family)},
      {"launcher_pid", static_cast<std::int64_t>(handoff.launcher_pid)},
      {"node_name", handoff.node_name},
  };
  if (handoff.views) json["metric_views"] = handoff.views->json;
  return json;
}

ProducerHandoff handoff_from_json(const boost::json::object& json) {
  ProducerHandoff handoff;
  const boost::json::value& outputs = member(json, "outputs");
  if (!outputs.is_array()) bad_handoff("outputs", "not an array");
  for (const boost::json::value& entry : outputs.get_array()) {
    if (!entry.is_object()) bad_handoff("outputs", "entry is not an object");
    const boost::json::value& config = member(entry.get_object(), "producer_config");
    if (!config.is_object()) bad_handoff("outputs.producer_config", "not a JSON object");
    IsolationSettings isolation;
    if (const boost::json::value* given = entry.get_object().if_contains("isolation")) {
      if (!given->is_object()) bad_handoff("outputs.isolation", "not a JSON object");
      try {
        isolation = IsolationSettings::from_json(given->get_object());
      } catch (const std::invalid_argument& error) {
        bad_handoff("outputs.isolation", error.what());
      }
    }
    handoff.outputs.push_back(
        {string_member(entry.get_object(), "name"), config.get_object(), isolation});
  }
  const boost::json::value& dirs = member(json, "plugin_dirs");
  if (!dirs.is_array()) bad_handoff("plugin_dirs", "not an array");
  for (const boost::json::value& dir : dirs.get_array()) {
    if (!dir.is_string()) bad_handoff("plugin_dirs", "entry is not a string");
    handoff.plugin_dirs.emplace_back(dir.get_string());
  }
  handoff.disabled_plugins = string_member(json, "disabled_plugins");
  const boost::json::value& insecure = member(json, "allow_insecure_plugins");
  if (!insecure.is_bool()) bad_handoff("allow_insecure_plugins", "not a boolean");
  handoff.allow_insecure_plugins = insecure.get_bool();
  handoff.run_dir = string_member(json, "run_dir");
  const std::int64_t queue_size = int_member(json, "queue_size");
  if (queue_size <= 0) bad_handoff("queue_size", "must be positive");
  handoff.queue_size = static_cast<std::size_t>(queue_size);
  handoff.shutdown_budget = std::chrono::nanoseconds(int_member(json, "shutdown_budget_ns"));
  if (json.contains("max_series_per_family")) {
    const std::int64_t bound = int_member(json, "max_series_per_family");
    if (bound < 1 || bound > static_cast<std::int64_t>(kMaxSeriesPerFamilyLimit)) {
      bad_handoff("max_series_per_family", "outside 1-16777216");
    }
    handoff.max_series_per_family = static_cast<std::size_t>(bound);
  }
  if (json.contains("node_name")) handoff.node_name = string_member(json, "node_name");
  if (const boost::json::value* views = json.if_contains("metric_views")) {
    handoff.views = std::make_shared<const MetricViews>(metric_views_from_json(*views, "handoff"));
  }
  if (json.contains("launcher_pid")) {
    const std::int64_t launcher = int_member(json, "launcher_pid");
    if (launcher < 0 || launcher > std::numeric_limits<pid_t>::max()) {
      bad_handoff("launcher_pid", "not a process id");
    }
    handoff.launcher_pid = static_cast<pid_t>(launcher);
  }
  return handoff;
}

namespace {

// Writes the handoff's JSON to fd; on failure closes fd and throws.
void write_handoff_text(int fd, const ProducerHandoff& handoff, const std::string& what) {
  boost::json::object json = handoff_to_json(handoff);
  // Only the launcher writes a handoff: its readers follow the writer.
  if (handoff.launcher_pid == 0) json["launcher_pid"] = static_cast<std::int64_t>(::getpid());
  const std::string text = boost::json::serialize(json);
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      ::close(fd);
      throw std::system_error(error, std::generic_category(), "write " + what);
    }
    written += static_cast<std::size_t>(n);
  }
}

}  // namespace

int write_handoff_memfd(const ProducerHandoff& handoff) {
  const int fd = ::memfd_create("tokenspeed-metrics-handoff", MFD_ALLOW_SEALING);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "memfd_create");
  write_handoff_text(fd, handoff, "handoff");
  // Sealed: no process that inherits it can change what the others read.
  ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  return fd;
}

void write_handoff_file(const std::filesystem::path& path, const ProducerHandoff& handoff) {
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, S_IRUSR | S_IWUSR);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "create " + path.string());
  write_handoff_text(fd, handoff, path.string());
  ::close(fd);
}

namespace {

// A handoff carries the configuration file's producer settings and a few
// paths: four times the configuration file's bound is room to spare.
constexpr std::size_t kHandoffLimit = 4 * kConfigurationFileLimit;

std::string read_all(int fd, const char* variable) {
  std::string text;
  char chunk[4096];
  for (off_t offset = 0;;) {
    const ssize_t n = ::pread(fd, chunk, sizeof chunk, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) bad_handoff(variable, std::string("cannot be read: ") + std::strerror(errno));
    if (n == 0) break;
    if (text.size() + static_cast<std::size_t>(n) > kHandoffLimit) {
      bad_handoff(variable, "is larger than the limit of " + describe_size(kHandoffLimit));
    }
    text.append(chunk, static_cast<std::size_t>(n));
    offset += n;
  }
  return text;
}

// The inherited descriptor of a producer that the launcher spawned.
std::string read_handoff_descriptor(const char* variable) {
  char* end = nullptr;
  const long fd = std::strtol(variable, &end, 10);
  if (*end != '\0' || fd < 0) bad_handoff(kHandoffFdEnv, "not a descriptor number");
  std::string text = read_all(static_cast<int>(fd), kHandoffFdEnv);
  ::close(static_cast<int>(fd));
  ::unsetenv(kHandoffFdEnv);  // not inherited by anything the producer starts
  return text;
}

// The file of the run directory that a Launcher exported for the producers an
// engine starts itself. It must be this user's own private file: a file
// anyone else could have written would let them choose the plugins we load.
std::string read_handoff_file(const char* path) {
  // O_NONBLOCK: a FIFO in its place must not block the open (fstat refuses it).
  const int fd = ::open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    bad_handoff(kHandoffFileEnv, std::string("'") + path +
                                     "' cannot be opened: " + std::strerror(errno) +
                                     " (did the launcher's metrics node shut down?)");
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) || info.st_uid != ::geteuid() ||
      (info.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    ::close(fd);
    bad_handoff(kHandoffFileEnv,
                std::string("'") + path + "' is not a private (0600) file of this user");
  }
  std::string text = read_all(fd, kHandoffFileEnv);
  ::close(fd);
  return text;
}

}  // namespace

bool metrics_disabled_in_environment() noexcept {
  const char* disabled = std::getenv(kMetricsDisabledEnv);
  return disabled != nullptr && std::string_view(disabled) == "1" &&
         std::getenv(kHandoffFdEnv) == nullptr && std::getenv(kHandoffFileEnv) == nullptr;
}

ProducerHandoff read_handoff_from_environment() {
  std::string text;
  const char* variable = kHandoffFdEnv;
  if (const char* fd = std::getenv(kHandoffFdEnv); fd != nullptr && *fd != '\0') {
    text = read_handoff_descriptor(fd);
  } else if (const char* file = std::getenv(kHandoffFileEnv); file != nullptr && *file != '\0') {
    variable = kHandoffFileEnv;
    text = read_handoff_file(file);
  } else {
    throw StartupError({"", "", kHandoffFileEnv},
                       std::string("not set (nor ") + kHandoffFdEnv +
                           "): a producer attaches to the metrics node that its launcher started, "
                           "from the environment that node exports to the processes it starts");
  }
  boost::system::error_code error;
  boost::json::value json = boost::json::parse(text, error);
  if (error || !json.is_object()) bad_handoff(variable, "not a JSON object");
  return handoff_from_json(json.get_object());
}

}  // namespace tokenspeed::metrics
