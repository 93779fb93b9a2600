// jsonl_test.cpp — the jsonl plugin, loaded with dlopen and driven only
// through the C ABI with a hand-made host, and the C++ helper of
// metric_reporter.hpp. Built as C++17: the helper must need nothing newer.
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/json.hpp>
#include <tokenspeed/metric_reporter.hpp>

#include "eventually.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using tokenspeed::metrics::test::eventually;
using namespace std::chrono_literals;

constexpr auto kHangGuard = 10s;  // only a guard: no test relies on timing

// ------------------------------------------------------------ test host

struct Buffer {
  Buffer() : buffer{sizeof(tsm_buffer), this, &Buffer::assign} {}
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  static void assign(tsm_buffer* b, const char* data, size_t size) {
    static_cast<Buffer*>(b->host_data)->text.assign(data, size);
  }
  tsm_buffer buffer;
  std::string text;
};

// A host in miniature: records the descriptors and the log lines.
struct TestHost {
  explicit TestHost(uint32_t api_version = TSM_METRIC_REPORTER_API_VERSION) {
    api.struct_size = sizeof api;
    api.api_version = api_version;
    api.host_data = this;
    api.host_version = "test";
    api.register_metric_reporter = &TestHost::register_reporter;
    api.log = &TestHost::log_line;
  }
  TestHost(const TestHost&) = delete;
  TestHost& operator=(const TestHost&) = delete;

  static int register_reporter(void* host_data, const tsm_reporter_descriptor* d,
                               tsm_buffer* error) {
    auto* host = static_cast<TestHost*>(host_data);
    if (std::string(d->name) == "taken") {
      const std::string message = "reporter name 'taken' is already registered";
      error->assign(error, message.data(), message.size());
      return TSM_ERROR;
    }
    host->names.emplace_back(d->name);
    host->reporters.push_back(*d);
    return TSM_OK;
  }
  static void log_line(void* host_data, uint32_t, const char* message) {
    auto* host = static_cast<TestHost*>(host_data);
    const std::lock_guard<std::mutex> lock(host->log_mutex);
    host->logs.emplace_back(message);
  }
  const tsm_reporter_descriptor& reporter(const std::string& name) const {
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) return reporters[i];
    }
    FAIL("reporter " << name << " was not registered");
    throw std::logic_error("unreachable");
  }
  std::vector<std::string> log_lines() {
    const std::lock_guard<std::mutex> lock(log_mutex);
    return logs;
  }

  tsm_host_api api{};
  std::vector<std::string> names;
  std::vector<tsm_reporter_descriptor> reporters;
  std::mutex log_mutex;
  std::vector<std::string> logs;
};

tsm_register_fn jsonl_register() {
  static void* handle = dlopen(TSM_JSONL_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(handle != nullptr);
  auto fn = reinterpret_cast<tsm_register_fn>(dlsym(handle, TSM_REGISTER_SYMBOL));
  REQUIRE(fn != nullptr);
  return fn;
}

// The jsonl plugin registered into a fresh test host.
struct Jsonl {
  Jsonl() {
    Buffer error;
    REQUIRE(jsonl_register()(&host.api, &error.buffer) == TSM_OK);
    descriptor = host.reporter("jsonl");
  }
  // Returns the status; the normalized text or the error lands in out.
  int validate(const std::string& config, std::string& out) {
    Buffer normalized;
    Buffer error;
    const int status = descriptor.validate(descriptor.user_data, config.c_str(), config.size(),
                                           &normalized.buffer, &error.buffer);
    out = status == TSM_OK ? normalized.text : error.text;
    return status;
  }
  std::string normalized(const std::string& config) {
    std::string out;
    INFO(out);
    REQUIRE(validate(config, out) == TSM_OK);
    return out;
  }
  std::string rejection(const std::string& config) {
    std::string out;
    REQUIRE(validate(config, out) == TSM_ERROR);
    return out;
  }
  TestHost host;
  tsm_reporter_descriptor descriptor{};
};

// One event with its own storage for the label arrays.
struct Event {
  Event(std::string metric_name, uint32_t op, double v, uint64_t w = 1,
        std::vector<std::pair<std::string, std::string>> label_pairs = {})
      : metric(std::move(metric_name)),
        operation(op),
        value(v),
        weight(w),
        labels(std::move(label_pairs)) {}
  const tsm_metric_event& view() {
    names.clear();
    values.clear();
    for (const auto& label : labels) {
      names.push_back(label.first.c_str());
      values.push_back(label.second.c_str());
    }
    event = tsm_metric_event{};
    event.struct_size = sizeof event;
    event.operation = operation;
    event.timestamp_ns = timestamp_ns;
    event.metric = metric.c_str();
    event.value = value;
    event.weight = weight;
    event.label_count = static_cast<uint32_t>(labels.size());
    event.label_names = names.data();
    event.label_values = values.data();
    return event;
  }
  std::string metric;
  uint32_t operation;
  double value;
  uint64_t weight;
  std::vector<std::pair<std::string, std::string>> labels;
  int64_t timestamp_ns = 1'764'403'200'123'456'789;
  std::vector<const char*> names;
  std::vector<const char*> values;
  tsm_metric_event event{};
};

// The delivery figures a sink last reported through tsm_sink.report_figures.
struct Figures {
  static void report(void* host_sink_data, const tsm_delivery_figures* figures) {
    auto* self = static_cast<Figures*>(host_sink_data);
    const std::lock_guard<std::mutex> lock(self->mutex);
    self->last = *figures;
    ++self->reports;
  }
  tsm_delivery_figures get() {
    const std::lock_guard<std::mutex> lock(mutex);
    return last;
  }
  std::mutex mutex;
  tsm_delivery_figures last{};
  uint64_t reports = 0;
};

// A sink created through the descriptor, closed at the end if still open.
struct Sink {
  Sink(const tsm_reporter_descriptor& d, const std::string& producer_config) {
    sink.struct_size = sizeof sink;
    sink.host_sink_data = &figures;
    sink.report_figures = &Figures::report;
    Buffer error;
    const int status = d.create_sink(d.user_data, producer_config.c_str(), producer_config.size(),
                                     &sink, &error.buffer);
    INFO(error.text);
    REQUIRE(status == TSM_OK);
  }
  ~Sink() {
    if (open) close(0ns);
  }
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;
  int emit(Event& event, std::string* message = nullptr) {
    Buffer error;
    const int status = sink.vtable->emit(sink.self, &event.view(), &error.buffer);
    if (message != nullptr) *message = error.text;
    return status;
  }
  int close(std::chrono::nanoseconds timeout, std::string* message = nullptr) {
    open = false;
    Buffer error;
    const int status = sink.vtable->close(sink.self, timeout.count(), &error.buffer);
    if (message != nullptr) *message = error.text;
    return status;
  }
  Figures figures;  // before sink: the plugin reports into it until close returns
  tsm_sink sink{};
  bool open = true;
};

struct TempDir {
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "jsonl-test-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  fs::path path;
};

std::string config_for(const fs::path& file, const std::string& extra = "") {
  return "{\"path\":" + json::serialize(json::value(file.string())) + extra + "}";
}

std::vector<std::string> read_lines(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::size_t thread_count() {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& task : fs::directory_iterator("/proc/self/task")) ++count;
  return count;
}

// The raw text of "value": in a line, read with strtod (exact).
double raw_value(const std::string& line) {
  const std::size_t at = line.find("\"value\":");
  REQUIRE(at != std::string::npos);
  return std::strtod(line.c_str() + at + 8, nullptr);
}

}  // namespace

// ================================================================= validate

TEST_CASE("jsonl validate rejects unknown keys and lists the allowed ones", "[jsonl]") {
  Jsonl jsonl;
  const std::string message = jsonl.rejection(R"({"path":"/tmp/x.jsonl","bogus":1})");
  CHECK_THAT(message, Catch::Contains("'bogus'"));
  const std::string list = message.substr(message.find("allowed keys: ") + 14);
  std::vector<std::string> allowed;
  std::stringstream keys(list);
  for (std::string key; std::getline(keys, key, ',');) {
    allowed.push_back(key.substr(key.find_first_not_of(' ')));
  }
  CHECK(allowed == std::vector<std::string>{"path", "flush_interval_ms", "buffer_bytes",
                                            "max_pending_bytes", "append"});

  SECTION("every allowed key is documented in the settings table of docs/plugin-authors.md") {
    std::ifstream doc(fs::path(TSM_SOURCE_ROOT) / "docs" / "plugin-authors.md");
    const std::string text((std::istreambuf_iterator<char>(doc)), std::istreambuf_iterator<char>());
    for (const std::string& key : allowed) {
      INFO(key);
      CHECK_THAT(text, Catch::Contains("| `" + key + "` |"));
    }
  }
}

TEST_CASE("a validate error is one line even when the key it quotes has a line break", "[jsonl]") {
  // Found by the plugin_jsonl fuzzer: the kit quoted the unknown key as
  // given, line break included, where the ABI asks for a one-line message.
  Jsonl jsonl;
  const std::string message = jsonl.rejection("{\"path\":\"/tmp/x.jsonl\",\"bo\\ngus\\r\":1}");
  CHECK_THAT(message, Catch::Contains("'bo gus '"));
  CHECK(message.find_first_of("\r\n") == std::string::npos);
}

TEST_CASE("jsonl validate rejects settings of the wrong type or range, naming the key", "[jsonl]") {
  Jsonl jsonl;
  CHECK_THAT(jsonl.rejection(R"({"path":5})"), Catch::Contains("'path' must be a string"));
  CHECK_THAT(jsonl.rejection(R"({"path":""})"), Catch::Contains("'path'"));
  CHECK_THAT(jsonl.rejection(R"({"path":"/tmp/a","flush_interval_ms":"1000"})"),
             Catch::Contains("'flush_interval_ms' must be an integer"));
  CHECK_THAT(jsonl.rejection(R"({"path":"/tmp/a","flush_interval_ms":1.5})"),
             Catch::Contains("'flush_interval_ms' must be an integer"));
  CHECK_THAT(jsonl.rejection(R"({"path":"/tmp/a","flush_interval_ms":0})"),
             Catch::Contains("'flush_interval_ms' must be an integer from 1"));
  CHECK_THAT(jsonl.rejection(R"({"path":"/tmp/a","buffer_bytes":-1})"),
             Catch::Contains("'buffer_bytes'"));
  CHECK_THAT(jsonl.rejection(R"({"path":"/tmp/a","append":"yes"})"),
             Catch::Contains("'append' must be true or false"));
  CHECK_THAT(jsonl.rejection(R"({"path":"/tmp/a","buffer_bytes":65536,"max_pending_bytes":4096})"),
             Catch::Contains("'max_pending_bytes' must be at least 'buffer_bytes'"));
  CHECK_THAT(jsonl.rejection(R"({})"), Catch::Contains("'path' is required"));
  CHECK_THAT(jsonl.rejection(R"([1])"), Catch::Contains("must be a JSON object"));
  CHECK_THAT(jsonl.rejection(R"({"path":)"), Catch::Contains("not valid JSON"));
}

TEST_CASE("jsonl validate rejects a path whose folder does not exist", "[jsonl]") {
  Jsonl jsonl;
  TempDir dir;
  const std::string message = jsonl.rejection(config_for(dir.path / "missing" / "m.jsonl"));
  CHECK_THAT(message, Catch::Contains((dir.path / "missing").string()));
  CHECK_THAT(message, Catch::Contains("does not exist"));
  // A folder named after the process id cannot be checked in the launcher.
  jsonl.normalized(config_for(dir.path / "{pid}" / "m.jsonl"));
}

TEST_CASE("jsonl validate returns the normalized object with defaults filled in", "[jsonl]") {
  Jsonl jsonl;
  TempDir dir;
  const json::value normalized = json::parse(jsonl.normalized(config_for(dir.path / "m.jsonl")));
  const json::value expected = {
      {"path", (dir.path / "m.jsonl").string()},
      {"flush_interval_ms", 1000},
      {"buffer_bytes", 1048576},
      {"max_pending_bytes", 67108864},
      {"append", true},
  };
  CHECK(normalized == expected);

  SECTION("a relative path is made absolute") {
    const json::value relative = json::parse(jsonl.normalized(R"({"path":"m-{pid}.jsonl"})"));
    CHECK(relative.at("path").as_string() == (fs::current_path() / "m-{pid}.jsonl").string());
  }
  SECTION("normalizing a normalized object changes nothing") {
    CHECK(json::parse(jsonl.normalized(json::serialize(normalized))) == normalized);
  }
  SECTION("validate creates no file") { CHECK_FALSE(fs::exists(dir.path / "m.jsonl")); }
}

TEST_CASE("jsonl registration only declares factories: no thread, no file", "[jsonl]") {
  const std::size_t before = thread_count();
  Jsonl jsonl;
  CHECK(jsonl.host.names == std::vector<std::string>{"jsonl"});
  CHECK(jsonl.descriptor.start_node == nullptr);
  CHECK(thread_count() == before);
}

// ================================================================== output

TEST_CASE("jsonl replaces {pid} in path with the process id", "[jsonl]") {
  Jsonl jsonl;
  TempDir dir;
  Sink sink(jsonl.descriptor, jsonl.normalized(config_for(dir.path / "m-{pid}.jsonl")));
  CHECK(fs::exists(dir.path / ("m-" + std::to_string(getpid()) + ".jsonl")));
  CHECK_FALSE(fs::exists(dir.path / "m-{pid}.jsonl"));
}

TEST_CASE("jsonl writes every event as one JSON object per line with exactly the spec's fields",
          "[jsonl]") {
  Jsonl jsonl;
  TempDir dir;
  const fs::path file = dir.path / "m.jsonl";
  Sink sink(jsonl.descriptor, jsonl.normalized(config_for(file)));

  Event inc("tokenspeed:prompt_tokens_total", TSM_OP_INC, 5, 1,
            {{"model", "llama"}, {"dp_rank", "0"}});
  Event set("tokenspeed:num_running_reqs", TSM_OP_SET, 7, 1, {{"model", "llama"}});
  Event observe("tokenspeed:time_to_first_token_seconds", TSM_OP_OBSERVE, 0.25, 1);
  REQUIRE(sink.emit(inc) == TSM_OK);
  REQUIRE(sink.emit(set) == TSM_OK);
  REQUIRE(sink.emit(observe) == TSM_OK);
  REQUIRE(sink.close(5s) == TSM_OK);

  const std::vector<std::string> lines = read_lines(file);
  REQUIRE(lines.size() == 3);
  const std::set<std::string> spec_fields{"timestamp_ns", "metric", "operation",
                                          "value",        "labels", "weight"};
  const char* operations[] = {"inc", "set", "observe"};
  Event* events[] = {&inc, &set, &observe};
  for (std::size_t i = 0; i < lines.size(); ++i) {
    INFO(lines[i]);
    const json::object line = json::parse(lines[i]).as_object();
    std::set<std::string> fields;
    for (const auto& entry : line) fields.emplace(entry.key());
    CHECK(fields == spec_fields);
    CHECK(line.at("timestamp_ns").to_number<int64_t>() == events[i]->timestamp_ns);
    CHECK(line.at("metric").as_string() == events[i]->metric.c_str());
    CHECK(line.at("operation").as_string() == operations[i]);
    CHECK(raw_value(lines[i]) == events[i]->value);
    CHECK(line.at("weight").to_number<uint64_t>() == 1);
    json::object labels;
    for (const auto& label : events[i]->labels) labels[label.first] = label.second;
    CHECK(line.at("labels") == labels);
  }
}

TEST_CASE("jsonl preserves the weight: observe 0.01 with weight 3", "[jsonl]") {
  Jsonl jsonl;
  TempDir dir;
  const fs::path file = dir.path / "m.jsonl";
  Sink sink(jsonl.descriptor, jsonl.normalized(config_for(file)));
  Event observe("tokenspeed:inter_token_latency_seconds", TSM_OP_OBSERVE, 0.01, 3);
  REQUIRE(sink.emit(observe) == TSM_OK);
  REQUIRE(sink.close(5s) == TSM_OK);
  const std::vector<std::string> lines = read_lines(file);
  REQUIRE(lines.size() == 1);
  CHECK(json::parse(lines[0]).at("weight").to_number<uint64_t>() == 3);
  CHECK(raw_value(lines[0]) == 0.01);
}

TEST_CASE("jsonl escapes label strings so every line stays valid JSON", "[jsonl]") {
  Jsonl jsonl;
  TempDir dir;
  const fs::path file = dir.path / "m.jsonl";
  Sink sink(jsonl.descriptor, jsonl.normalized(config_for(file)));
  Event event("m\"etric", TSM_OP_SET, 1, 1,
              {{"quote", "a\"b"},
               {"backslash", "a\\b"},
               {"control", "line\nnext\ttab\x01"},
               {"utf8", "caf\xc3\xa9 \xe2\x82\xac"},
               {"invalid",
                "a\xff"
                "b\xc3"},
               {"na\"me", ""}});
  REQUIRE(sink.emit(event) == TSM_OK);
  REQUIRE(sink.close(5s) == TSM_OK);
  const std::vector<std::string> lines = read_lines(file);
  REQUIRE(lines.size() == 1);
  const json::value line = json::parse(lines[0]);
  CHECK(line.at("metric").as_string() == "m\"etric");
  const json::object& labels = line.at("labels").as_object();
  CHECK(labels.at("quote").as_string() == "a\"b");
  CHECK(labels.at("backslash").as_string() == "a\\b");
  CHECK(labels.at("control").as_string() == "line\nnext\ttab\x01");
  CHECK(labels.at("utf8").as_string() == "caf\xc3\xa9 \xe2\x82\xac");
  CHECK(labels.at("invalid").as_string() ==
        "a\xef\xbf\xbd"
        "b\xef\xbf\xbd");
  CHECK(labels.at("na\"me").as_string() == "");
}

TEST_CASE("jsonl writes values that read back exactly; NaN and infinities as strings", "[jsonl]") {
  Jsonl jsonl;
  TempDir dir;
  const fs::path file = dir.path / "m.jsonl";
  Sink sink(jsonl.descriptor, jsonl.normalized(config_for(file)));
  const double values[] = {0.1, 1.0 / 3.0, 1e300, 5e-324, 123456789012345678.0, -2.5, 0.0};
  for (double value : values) {
    Event event("g", TSM_OP_SET, value);
    REQUIRE(sink.emit(event) == TSM_OK);
  }
  for (double value :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
        -std::numeric_limits<double>::infinity()}) {
    Event event("g", TSM_OP_SET, value);
    REQUIRE(sink.emit(event) == TSM_OK);
  }
  REQUIRE(sink.close(5s) == TSM_OK);
  const std::vector<std::string> lines = read_lines(file);
  REQUIRE(lines.size() == 10);
  for (std::size_t i = 0; i < 7; ++i) {
    INFO(lines[i]);
    CHECK(json::parse(lines[i]).at("value").is_number());
    CHECK(raw_value(lines[i]) == values[i]);
  }
  CHECK(json::parse(lines[7]).at("value").as_string() == "NaN");
  CHECK(json::parse(lines[8]).at("value").as_string() == "+Inf");
  CHECK(json::parse(lines[9]).at("value").as_string() == "-Inf");
}

// ================================================================ flushing

TEST_CASE("jsonl keeps events in memory until close, which writes them all", "[jsonl]") {
  Jsonl jsonl;
  TempDir dir;
  const fs::path file = dir.path / "m.jsonl";
  Sink sink(jsonl.descriptor,
            jsonl.normalized(config_for(file, R"(,"flush_interval_ms":3600000)")));
  for (int i = 0; i < 100; ++i) {
    Event event("c_total", TSM_OP_INC, i);
    REQUIRE(sink.emit(event) == TSM_OK);
  }
  CHECK(fs::file_size(file) == 0);  // neither the interval nor the buffer was reached
  REQUIRE(sink.close(5s) == TSM_OK);
  CHECK(read_lines(file).size() == 100);
  // Every event is in the file: all sent, nothing else.
  const tsm_delivery_figures figures = sink.figures.get();
  CHECK(figures.sent == 100);
  CHECK(figures.refused + figures.lost + figures.pending + figures.retries == 0);
}

TEST_CASE("jsonl reports events held as pending and written ones as sent while it runs",
          "[jsonl]") {
  Jsonl jsonl;
  TempDir dir;
  const fs::path file = dir.path / "m.jsonl";
  Sink sink(jsonl.descriptor, jsonl.normalized(config_for(file, R"(,"flush_interval_ms":20)")));
  Event event("c_total", TSM_OP_INC, 1);
  for (int i = 0; i < 3; ++i) REQUIRE(sink.emit(event) == TSM_OK);
  CHECK(eventually([&] { return sink.figures.get().sent == 3; }));
  CHECK(read_lines(file).size() == 3);
  CHECK(sink.figures.get().pending == 0);
}

TEST_CASE("jsonl flushes pending events on the interval without close", "[jsonl]") {
  Jsonl jsonl;
  TempDir dir;
  const fs::path file = dir.path / "m.jsonl";
  Sink sink(jsonl.descriptor, jsonl.normalized(config_for(file, R"(,"flush_interval_ms":20)")));
  Event event("c_total", TSM_OP_INC, 1);
  REQUIRE(sink.emit(event) == TSM_OK);
  CHECK(eventually([&] { return read_lines(file).size() == 1; }));
  REQUIRE(sink.emit(event) == TSM_OK);  // the writer went idle and wakes again
  CHECK(eventually([&] { return read_lines(file).size() == 2; }));
}

TEST_CASE("jsonl writes before the interval when the buffer is full", "[jsonl]") {
  Jsonl jsonl;
  TempDir dir;
  const fs::path file = dir.path / "m.jsonl";
  Sink sink(jsonl.descriptor, jsonl.normalized(config_for(
                                  file, R"(,"flush_interval_ms":3600000,"buffer_bytes":4096)")));
  for (int i = 0; i < 200; ++i) {  // well over 4096 bytes of event data
    Event event("tokenspeed:generation_tokens_total", TSM_OP_INC, 1, 1, {{"model", "llama"}});
    REQUIRE(sink.emit(event) == TSM_OK);
  }
  CHECK(eventually([&] { return fs::file_size(file) > 0; }));
}

TEST_CASE("jsonl appends to an existing file, or truncates it when append is false", "[jsonl]") {
  Jsonl jsonl;
  TempDir dir;
  const fs::path file = dir.path / "m.jsonl";
  std::ofstream(file) << "{\"earlier\":1}\n";
  const bool append = GENERATE(true, false);
  Sink sink(jsonl.descriptor, jsonl.normalized(config_for(
                                  file, append ? R"(,"append":true)" : R"(,"append":false)")));
  Event event("c_total", TSM_OP_INC, 1);
  REQUIRE(sink.emit(event) == TSM_OK);
  REQUIRE(sink.close(5s) == TSM_OK);
  CHECK(read_lines(file).size() == (append ? 2u : 1u));
}

// ================================================================== faults

TEST_CASE("jsonl: a write error makes the next emit fail with a message naming the file",
          "[jsonl]") {
  Jsonl jsonl;
  Sink sink(jsonl.descriptor, jsonl.normalized(R"({"path":"/dev/full","flush_interval_ms":1})"));
  Event event("c_total", TSM_OP_INC, 1);
  std::string message;
  CHECK(eventually([&] { return sink.emit(event, &message) == TSM_ERROR; }));
  CHECK_THAT(message, Catch::Contains("/dev/full"));
  CHECK_THAT(message, Catch::Contains("cannot write"));
  std::string close_message;
  CHECK(sink.close(5s, &close_message) == TSM_ERROR);
  CHECK_THAT(close_message, Catch::Contains("/dev/full"));
  // Nothing reached the file: every accepted event is lost, none sent.
  const tsm_delivery_figures figures = sink.figures.get();
  CHECK(figures.sent == 0);
  CHECK(figures.lost >= 1);
  CHECK(figures.pending == 0);
  CHECK_THAT(jsonl.host.log_lines().back(), Catch::Contains("events did not reach /dev/full"));
}

TEST_CASE(
    "jsonl on a full filesystem: sent equals the complete lines in the file, which never ends "
    "in a partial line",
    "[jsonl]") {
  if (geteuid() != 0) {
    WARN("skipped: needs root to mount a small tmpfs");
    return;
  }
  TempDir dir;
  const fs::path disk = dir.path / "disk";
  fs::create_directory(disk);
  if (mount("tmpfs", disk.c_str(), "tmpfs", 0, "size=64k") != 0) {
    WARN("skipped: cannot mount a tmpfs here: " << std::strerror(errno));
    return;
  }
  struct Unmount {
    const fs::path& path;
    ~Unmount() { umount2(path.c_str(), MNT_DETACH); }
  } unmount{disk};

  Jsonl jsonl;
  const fs::path file = disk / "m.jsonl";
  Sink sink(jsonl.descriptor,
            jsonl.normalized(config_for(file, R"(,"flush_interval_ms":1,"buffer_bytes":4096)")));
  // Lines of different lengths, so that the disk fills in the middle of one.
  Event event("tokenspeed:generation_tokens_total", TSM_OP_INC, 1, 1, {{"model", "llama"}});
  uint64_t accepted = 0;
  const auto give_up = std::chrono::steady_clock::now() + kHangGuard;
  while (std::chrono::steady_clock::now() < give_up) {
    event.labels[0].second = "llama-" + std::to_string(accepted % 977);
    if (sink.emit(event) != TSM_OK) break;
    ++accepted;
  }
  std::string message;
  CHECK(sink.close(5s, &message) == TSM_ERROR);
  CHECK_THAT(message, Catch::Contains("No space left on device"));

  std::ifstream in(file, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE_FALSE(text.empty());
  CHECK(text.back() == '\n');
  const std::vector<std::string> lines = read_lines(file);
  for (const std::string& line : lines) {
    boost::system::error_code error;
    json::parse(line, error);
    CHECK_FALSE(error);
  }
  const tsm_delivery_figures figures = sink.figures.get();
  CHECK(figures.sent == lines.size());
  CHECK(figures.lost > 0);
  CHECK(figures.sent + figures.refused + figures.lost == accepted);
  CHECK(figures.pending == 0);
}

TEST_CASE("jsonl: a file that cannot be opened fails create_sink, naming the file", "[jsonl]") {
  Jsonl jsonl;
  TempDir dir;
  const std::string config = jsonl.normalized(config_for(dir.path / "{pid}" / "m.jsonl"));
  tsm_sink sink{};
  sink.struct_size = sizeof sink;
  Buffer error;
  CHECK(jsonl.descriptor.create_sink(jsonl.descriptor.user_data, config.c_str(), config.size(),
                                     &sink, &error.buffer) == TSM_ERROR);
  CHECK_THAT(error.text,
             Catch::Contains("cannot open " + (dir.path / std::to_string(getpid())).string()));
}

TEST_CASE(
    "jsonl emit never waits for the disk: beyond max_pending_bytes events are dropped, "
    "counted and logged; close keeps to its timeout",
    "[jsonl]") {
  Jsonl jsonl;
  TempDir dir;
  const fs::path fifo = dir.path / "stuck.fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  // A reader that does not read, and a pipe filled to the brim beforehand:
  // the sink's writer thread blocks in its first write.
  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(reader >= 0);
  const int filler = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
  REQUIRE(filler >= 0);
  const std::string page(static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), '\n');
  while (write(filler, page.data(), page.size()) > 0) {
  }
  REQUIRE(errno == EAGAIN);
  ::close(filler);

  Sink sink(jsonl.descriptor,
            jsonl.normalized(config_for(fifo, R"(,"flush_interval_ms":1,"buffer_bytes":4096,)"
                                              R"("max_pending_bytes":8192)")));
  Event event("tokenspeed:generation_tokens_total", TSM_OP_INC, 1, 1, {{"model", "llama"}});
  // Far more than max_pending_bytes: emit keeps returning at once, dropping.
  for (int i = 0; i < 50'000; ++i) REQUIRE(sink.emit(event) == TSM_OK);

  const std::vector<std::string> logs = jsonl.host.log_lines();
  REQUIRE_FALSE(logs.empty());
  CHECK_THAT(logs.front(), Catch::Contains("dropped 1 events"));
  CHECK_THAT(logs.front(), Catch::Contains(fifo.string()));
  CHECK(logs.size() <= 2);  // rate-limited: not one line per drop

  std::string message;
  CHECK(sink.close(100ms, &message) == TSM_ERROR);
  CHECK_THAT(message, Catch::Contains("close timed out"));
  CHECK_THAT(message, Catch::Contains(fifo.string()));
  // Every event has its fate: the drops refused, the unwritten ones lost.
  const tsm_delivery_figures figures = sink.figures.get();
  CHECK(figures.sent + figures.refused + figures.lost == 50'000);
  CHECK(figures.refused > 40'000);
  CHECK(figures.lost > 0);
  CHECK(figures.pending == 0);

  // Reading unblocks the abandoned writer, which then closes the file: EOF.
  bool eof = false;
  const auto give_up = std::chrono::steady_clock::now() + kHangGuard;
  char chunk[65536];
  while (!eof && std::chrono::steady_clock::now() < give_up) {
    pollfd ready{reader, POLLIN, 0};
    poll(&ready, 1, 100);
    const ssize_t got = read(reader, chunk, sizeof chunk);
    eof = got == 0;
  }
  CHECK(eof);
  ::close(reader);
}

// ============================================================== C++ helper

namespace {

namespace tsm = tokenspeed::metrics::plugin;

struct ThrowingSink {
  static inline int destroyed = 0;
  ~ThrowingSink() { ++destroyed; }
  void emit(const tsm_metric_event& event) {
    throw std::runtime_error(std::string("emit refused ") + event.metric);
  }
  void close(std::chrono::nanoseconds timeout) {
    throw std::runtime_error("close refused after " + std::to_string(timeout.count()) + " ns");
  }
};

struct Session {
  static inline int destroyed = 0;
  explicit Session(bool fail) : fail_producer_config(fail) {}
  ~Session() { ++destroyed; }
  std::string producer_config() const {
    if (fail_producer_config) throw std::runtime_error("no producer config");
    return R"({"port":9})";
  }
  void close(std::chrono::nanoseconds) {}
  bool fail_producer_config;
};

int register_helper_reporters(const tsm_host_api* host, tsm_buffer* error) {
  return tsm::register_reporters(host, error, [](tsm::Registrar& registrar) {
    tsm::Reporter<ThrowingSink> throwing;
    throwing.name = "throwing";
    throwing.validate = [](std::string_view config) -> std::string {
      if (config == "{}") return R"({"normalized":true})";
      throw std::invalid_argument("key 'x' is not allowed");
    };
    throwing.create_sink = [](std::string_view config, const tsm::Host&) {
      if (config == "{}") return std::make_unique<ThrowingSink>();
      throw std::runtime_error("cannot connect to " + std::string(config));
    };
    registrar.add(std::move(throwing));

    tsm::Reporter<ThrowingSink, Session> node;
    node.name = "node";
    node.validate = [](std::string_view config) { return std::string(config); };
    node.create_sink = [](std::string_view, const tsm::Host&) {
      return std::make_unique<ThrowingSink>();
    };
    node.start_node = [](std::string_view config, const tsm::Host& host) {
      host.log(TSM_LOG_INFO, "starting node");
      return std::make_unique<Session>(config == R"({"fail":true})");
    };
    node.override_existing = true;
    registrar.add(std::move(node));
  });
}

}  // namespace

TEST_CASE(
    "helper: exceptions in validate, create_sink, emit and close become TSM_ERROR "
    "with the message",
    "[helper]") {
  TestHost host;
  Buffer error;
  REQUIRE(register_helper_reporters(&host.api, &error.buffer) == TSM_OK);
  const tsm_reporter_descriptor& d = host.reporter("throwing");
  CHECK(d.struct_size == sizeof(tsm_reporter_descriptor));
  CHECK(d.start_node == nullptr);
  CHECK(d.override == 0);

  Buffer out;
  Buffer message;
  CHECK(d.validate(d.user_data, "{}", 2, &out.buffer, &message.buffer) == TSM_OK);
  CHECK(out.text == R"({"normalized":true})");
  CHECK(d.validate(d.user_data, R"({"x":1})", 7, &out.buffer, &message.buffer) == TSM_ERROR);
  CHECK(message.text == "key 'x' is not allowed");

  tsm_sink sink{};
  sink.struct_size = sizeof sink;
  CHECK(d.create_sink(d.user_data, "[]", 2, &sink, &message.buffer) == TSM_ERROR);
  CHECK(message.text == "cannot connect to []");
  CHECK(sink.vtable == nullptr);

  REQUIRE(d.create_sink(d.user_data, "{}", 2, &sink, &message.buffer) == TSM_OK);
  REQUIRE(sink.vtable != nullptr);
  CHECK(sink.vtable->struct_size == sizeof(tsm_sink_vtable));
  Event event("c_total", TSM_OP_INC, 1);
  CHECK(sink.vtable->emit(sink.self, &event.view(), &message.buffer) == TSM_ERROR);
  CHECK(message.text == "emit refused c_total");
  CHECK(sink.vtable->emit(sink.self, nullptr, &message.buffer) == TSM_ERROR);

  const int destroyed = ThrowingSink::destroyed;
  CHECK(sink.vtable->close(sink.self, 1000, &message.buffer) == TSM_ERROR);
  CHECK(message.text == "close refused after 1000 ns");
  CHECK(ThrowingSink::destroyed == destroyed + 1);  // the sink is released even so
}

TEST_CASE("helper: start_node returns the session's producer config; a failure destroys it",
          "[helper]") {
  TestHost host;
  Buffer error;
  REQUIRE(register_helper_reporters(&host.api, &error.buffer) == TSM_OK);
  const tsm_reporter_descriptor& d = host.reporter("node");
  CHECK(d.override == 1);
  REQUIRE(d.start_node != nullptr);

  tsm_node_session session{sizeof(tsm_node_session), nullptr, nullptr};
  Buffer producer;
  Buffer message;
  const int destroyed = Session::destroyed;
  REQUIRE(d.start_node(d.user_data, "{}", 2, &session, &producer.buffer, &message.buffer) ==
          TSM_OK);
  CHECK(producer.text == R"({"port":9})");
  CHECK(host.log_lines() == std::vector<std::string>{"starting node"});
  REQUIRE(session.vtable != nullptr);
  CHECK(session.vtable->close(session.self, 0, &message.buffer) == TSM_OK);
  CHECK(Session::destroyed == destroyed + 1);

  tsm_node_session failed{sizeof(tsm_node_session), nullptr, nullptr};
  const std::string config = R"({"fail":true})";
  CHECK(d.start_node(d.user_data, config.c_str(), config.size(), &failed, &producer.buffer,
                     &message.buffer) == TSM_ERROR);
  CHECK(message.text == "no producer config");
  CHECK(failed.vtable == nullptr);
  CHECK(Session::destroyed == destroyed + 2);
}

TEST_CASE("helper: a failure while declaring reporters becomes TSM_ERROR with the message",
          "[helper]") {
  TestHost host;
  Buffer error;
  CHECK(tsm::register_reporters(&host.api, &error.buffer, [](tsm::Registrar& registrar) {
          tsm::Reporter<ThrowingSink> taken;
          taken.name = "taken";
          taken.validate = [](std::string_view) { return std::string("{}"); };
          taken.create_sink = [](std::string_view, const tsm::Host&) {
            return std::make_unique<ThrowingSink>();
          };
          registrar.add(std::move(taken));
        }) == TSM_ERROR);
  CHECK(error.text == "reporter name 'taken' is already registered");

  CHECK(tsm::register_reporters(&host.api, &error.buffer, [](tsm::Registrar& registrar) {
          registrar.add(tsm::Reporter<ThrowingSink>{});  // no validate, no create_sink
        }) == TSM_ERROR);
  CHECK_THAT(error.text, Catch::Contains("needs validate and create_sink"));
}

TEST_CASE("an unsupported api_version returns TSM_UNSUPPORTED_API", "[helper][jsonl]") {
  TestHost host(TSM_METRIC_REPORTER_API_VERSION + 1);
  Buffer error;
  CHECK(register_helper_reporters(&host.api, &error.buffer) == TSM_UNSUPPORTED_API);
  CHECK_THAT(error.text, Catch::Contains("version 2 is not supported"));
  CHECK(jsonl_register()(&host.api, &error.buffer) == TSM_UNSUPPORTED_API);
  CHECK(host.names.empty());
}
