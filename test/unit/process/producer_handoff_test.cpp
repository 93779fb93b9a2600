#include <catch2/catch.hpp>

#include <filesystem>
#include <memory>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <boost/json/parse.hpp>

#include "process/producer_handoff.hpp"
#include "core/startup_error.hpp"
#include "temp_dir.hpp"

using namespace tokenspeed::metrics;

namespace {

ProducerHandoff sample_handoff() {
  ProducerHandoff handoff;
  handoff.outputs.push_back({"jsonl", boost::json::object{{"path", "/tmp/e-{pid}.jsonl"}}});
  handoff.outputs.back().isolation.process = true;  // "isolation": "process" crosses too
  handoff.outputs.back().isolation.deadlock_timeout = std::chrono::milliseconds(1500);
  handoff.outputs.push_back(
      {"otlp", boost::json::object{{"endpoint", "http://127.0.0.1:4318"}, {"session", "node-7"}}});
  handoff.plugin_dirs = {"/opt/a", "/opt/b"};
  handoff.disabled_plugins = "statsd";
  handoff.allow_insecure_plugins = true;
  handoff.run_dir = "/tmp/run-x";
  handoff.queue_size = 4096;
  handoff.shutdown_budget = std::chrono::milliseconds(3750);
  return handoff;
}

void require_equal(const ProducerHandoff& a, const ProducerHandoff& b) {
  REQUIRE(a.outputs.size() == b.outputs.size());
  for (std::size_t i = 0; i < a.outputs.size(); ++i) {
    CHECK(a.outputs[i].name == b.outputs[i].name);
    CHECK(a.outputs[i].producer_config == b.outputs[i].producer_config);
    CHECK(a.outputs[i].isolation.process == b.outputs[i].isolation.process);
    CHECK(a.outputs[i].isolation.deadlock_timeout == b.outputs[i].isolation.deadlock_timeout);
  }
  CHECK(a.plugin_dirs == b.plugin_dirs);
  CHECK(a.disabled_plugins == b.disabled_plugins);
  CHECK(a.allow_insecure_plugins == b.allow_insecure_plugins);
  CHECK(a.run_dir == b.run_dir);
  CHECK(a.queue_size == b.queue_size);
  CHECK(a.shutdown_budget == b.shutdown_budget);
}

}  // namespace

TEST_CASE(
    "the producer configuration crosses spawn as plain JSON through an inherited descriptor") {
  const ProducerHandoff handoff = sample_handoff();
  const int fd = write_handoff_memfd(handoff);
  REQUIRE(fd >= 0);
  ::setenv(kHandoffFdEnv, std::to_string(fd).c_str(), 1);
  const ProducerHandoff received = read_handoff_from_environment();
  require_equal(received, handoff);
  CHECK(std::getenv(kHandoffFdEnv) == nullptr);  // not passed on further
  CHECK(::fcntl(fd, F_GETFD) == -1);             // the descriptor was closed
}

TEST_CASE("the handoff memfd is sealed against writes") {
  const int fd = write_handoff_memfd(sample_handoff());
  REQUIRE(fd >= 0);
  CHECK(::write(fd, "x", 1) == -1);
  ::close(fd);
}

TEST_CASE("a producer without a launcher's handoff fails with an error naming both variables") {
  ::unsetenv(kHandoffFdEnv);
  ::unsetenv(kHandoffFileEnv);
  try {
    read_handoff_from_environment();
    FAIL("no error");
  } catch (const StartupError& error) {
    CHECK(error.context().key == kHandoffFileEnv);
    CHECK_THAT(error.message(), Catch::Contains(kHandoffFdEnv));
  }
}

TEST_CASE("a producer reads the handoff file that the environment names") {
  char dir_template[] = "/tmp/tsm-handoff-XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  const std::filesystem::path file = std::filesystem::path(dir_template) / "handoff.json";
  write_handoff_file(file, sample_handoff());
  CHECK((std::filesystem::status(file).permissions() & std::filesystem::perms::all) ==
        (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write));
  ::unsetenv(kHandoffFdEnv);
  ::setenv(kHandoffFileEnv, file.c_str(), 1);
  const ProducerHandoff read = read_handoff_from_environment();
  CHECK(read.outputs.size() == sample_handoff().outputs.size());
  CHECK(read.run_dir == sample_handoff().run_dir);
  CHECK(read.queue_size == sample_handoff().queue_size);

  // A file other users could have written is refused: it chooses what we load.
  std::filesystem::permissions(file, std::filesystem::perms::group_write,
                               std::filesystem::perm_options::add);
  try {
    read_handoff_from_environment();
    FAIL("no error");
  } catch (const StartupError& error) {
    CHECK(error.context().key == kHandoffFileEnv);
    CHECK_THAT(error.message(), Catch::Contains("private"));
  }
  // The handoff file is never created over an existing one.
  CHECK_THROWS_AS(write_handoff_file(file, sample_handoff()), std::system_error);
  ::unsetenv(kHandoffFileEnv);
  std::filesystem::remove_all(dir_template);
}

TEST_CASE("a producer configuration that is not a JSON object is refused in the handoff") {
  boost::json::object json = handoff_to_json(sample_handoff());
  json["outputs"].as_array()[0].as_object()["producer_config"] = boost::json::array{1, 2};
  try {
    handoff_from_json(json);
    FAIL("no error");
  } catch (const StartupError& error) {
    CHECK(error.context().key == "outputs.producer_config");
  }
  boost::json::object missing = handoff_to_json(sample_handoff());
  missing.erase("run_dir");
  CHECK_THROWS_AS(handoff_from_json(missing), StartupError);
}

TEST_CASE("a handoff without isolation (an older launcher) runs every output in process") {
  boost::json::object json = handoff_to_json(sample_handoff());
  for (boost::json::value& output : json["outputs"].as_array())
    output.as_object().erase("isolation");
  const ProducerHandoff handoff = handoff_from_json(json);
  for (const ProducerOutput& output : handoff.outputs) CHECK_FALSE(output.isolation.process);
}

TEST_CASE("the handoff names the launcher that wrote it, which its producers follow") {
  // The writer's own pid: a launcher that is pid 1 (a container without an
  // init process) is named as 1 like any other.
  const int fd = write_handoff_memfd(sample_handoff());
  REQUIRE(fd >= 0);
  ::setenv(kHandoffFdEnv, std::to_string(fd).c_str(), 1);
  CHECK(read_handoff_from_environment().launcher_pid == ::getpid());

  ProducerHandoff named = sample_handoff();
  named.launcher_pid = 1;
  CHECK(handoff_from_json(handoff_to_json(named)).launcher_pid == 1);

  // --metrics-node-name reaches the producers; a launcher that wrote none: the host name.
  ProducerHandoff node = sample_handoff();
  node.node_name = "gpu-node-7";
  CHECK(handoff_from_json(handoff_to_json(node)).node_name == "gpu-node-7");
  boost::json::object unnamed = handoff_to_json(sample_handoff());
  unnamed.erase("node_name");
  CHECK(handoff_from_json(unnamed).node_name.empty());

  boost::json::object without = handoff_to_json(sample_handoff());
  without.erase("launcher_pid");
  CHECK(handoff_from_json(without).launcher_pid == 0);  // unknown: the parent at start

  boost::json::object negative = handoff_to_json(sample_handoff());
  negative["launcher_pid"] = -4;
  try {
    handoff_from_json(negative);
    FAIL("no error");
  } catch (const StartupError& error) {
    CHECK(error.context().key == "launcher_pid");
  }
}

TEST_CASE("the launcher's views reach its producers through the handoff, checked again") {
  CHECK_FALSE(handoff_from_json(handoff_to_json(sample_handoff())).views);
  ProducerHandoff viewed = sample_handoff();
  const boost::json::value json = boost::json::parse(
      R"({"views": [{"select": {"name": "tokenspeed:*"}, "drop_labels": ["request_id"]}]})");
  viewed.views = std::make_shared<const MetricViews>(metric_views_from_json(json, "views.json"));
  const ProducerHandoff read = handoff_from_json(handoff_to_json(viewed));
  REQUIRE(read.views);
  REQUIRE(read.views->views.size() == 1);
  CHECK(read.views->views[0].select_name == "tokenspeed:*");
  CHECK(read.views->views[0].drop_labels == std::vector<std::string>{"request_id"});

  boost::json::object bad = handoff_to_json(viewed);
  bad["metric_views"] = boost::json::parse(R"({"views": [{"select": {"name": 1}}]})");
  try {
    handoff_from_json(bad);
    FAIL("no error");
  } catch (const StartupError& error) {
    CHECK(error.file() == "handoff");
    CHECK(error.key() == "views[0].select.name");
  }
}

TEST_CASE(
    "a handoff file that is a FIFO is refused without blocking; an oversized one is refused") {
  const test::TempDir dir("tsm-handoff");
  const std::filesystem::path fifo = dir.path() / "handoff.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  ::unsetenv(kHandoffFdEnv);
  ::setenv(kHandoffFileEnv, fifo.c_str(), 1);
  try {
    read_handoff_from_environment();  // a blocking open would never return
    FAIL("no error");
  } catch (const StartupError& error) {
    CHECK(error.context().key == kHandoffFileEnv);
    CHECK_THAT(error.message(), Catch::Contains("private (0600) file"));
  }

  // A private regular file past the bound: read only up to the bound.
  const std::filesystem::path big = dir.path() / "big.json";
  const int fd = ::open(big.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(::ftruncate(fd, off_t{1} << 30) == 0);  // sparse: 1 GiB of zeros, no disk used
  ::close(fd);
  ::setenv(kHandoffFileEnv, big.c_str(), 1);
  try {
    read_handoff_from_environment();
    FAIL("no error");
  } catch (const StartupError& error) {
    CHECK(error.context().key == kHandoffFileEnv);
    CHECK_THAT(error.message(), Catch::Contains("is larger than the limit of 64 MiB"));
  }
  ::unsetenv(kHandoffFileEnv);
}
