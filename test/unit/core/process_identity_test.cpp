// process_identity_test.cpp — a process's name gives its role and rank; the C
// view a sink receives points at the same text.
#include <catch2/catch.hpp>

#include <cstring>

#include "core/process_identity.hpp"

using namespace tokenspeed::metrics;

TEST_CASE("a name <role>-<digits> gives the role and the rank") {
  const ProcessIdentity scheduler = make_process_identity("scheduler-3", 42, "gpu-node-7");
  CHECK(scheduler.name == "scheduler-3");
  CHECK(scheduler.role == "scheduler");
  CHECK(scheduler.rank == 3);
  CHECK(scheduler.pid == 42);
  CHECK(scheduler.node == "gpu-node-7");
}

TEST_CASE("any other name is its own role, without a rank") {
  for (const char* name :
       {"frontend", "launcher", "producer-", "-7", "producer-1a", "w-1234567890"}) {
    const ProcessIdentity process = make_process_identity(name, 1, "n");
    CHECK(process.role == name);
    CHECK(process.rank == -1);
  }
  CHECK(make_process_identity("data-parallel-12", 1, "n").role == "data-parallel");
}

TEST_CASE("an empty node means this machine's host name") {
  const ProcessIdentity process = make_process_identity("frontend", 1);
  CHECK(process.node == this_host_name());
  CHECK_FALSE(process.node.empty());
}

TEST_CASE("the C view holds every field and a struct_size that covers them") {
  const ProcessIdentityView view(make_process_identity("scheduler-0", 99, "node-a"));
  const tsm_process_identity& c = *view.get();
  CHECK(c.struct_size == sizeof(tsm_process_identity));
  CHECK(std::strcmp(c.name, "scheduler-0") == 0);
  CHECK(std::strcmp(c.role, "scheduler") == 0);
  CHECK(std::strcmp(c.node, "node-a") == 0);
  CHECK(c.rank == 0);
  CHECK(c.pid == 99);
}

TEST_CASE("the process name of the plugins' log lines is empty until set, then the latest") {
  const std::string before = log_process_name();
  set_log_process_name("scheduler-4");
  CHECK(std::string(log_process_name()) == "scheduler-4");
  set_log_process_name(before);
  CHECK(std::string(log_process_name()) == before);
}
