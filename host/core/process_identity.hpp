// process_identity.hpp — who a process is in the host's reports and to its
// plugins: its name within the node ("scheduler-0"), role and rank, pid and
// node; and the C view of it a sink receives (tsm_process_identity).
#pragma once

#include <sys/types.h>

#include <string>

#include <tokenspeed/metric_reporter.h>

namespace tokenspeed::metrics {

struct ProcessIdentity {
  std::string name;  // unique within the node: "scheduler-0", "frontend", "launcher"
  std::string role;  // "scheduler", "frontend", "launcher"
  int rank = -1;     // rank within the role; -1: none
  pid_t pid = 0;
  std::string node;  // the node's name
};

// The identity of a process named name: a name "<role>-<digits>" gives the
// role and the rank ("scheduler-0": scheduler, 0); any other name is its own
// role without a rank. node "" means this machine's host name.
ProcessIdentity make_process_identity(const std::string& name, pid_t pid,
                                      const std::string& node = "");

// This machine's host name; "localhost" when it has none.
std::string this_host_name();

// The name of this process in the lines plugins log through the host
// ("scheduler-0: plugin 'otlp': ..."): set once its metrics start; "" until
// then. Readable from any thread; a later call replaces it.
void set_log_process_name(const std::string& name);
const char* log_process_name() noexcept;

// The C view of an identity, pointing into a copy it owns: stable for the
// life of the object (it is neither copied nor moved once a sink holds it).
class ProcessIdentityView {
 public:
  explicit ProcessIdentityView(ProcessIdentity identity);
  ProcessIdentityView(const ProcessIdentityView&) = delete;
  ProcessIdentityView& operator=(const ProcessIdentityView&) = delete;

  const tsm_process_identity* get() const noexcept { return &view_; }
  const ProcessIdentity& identity() const noexcept { return identity_; }

 private:
  const ProcessIdentity identity_;
  tsm_process_identity view_{};
};

}  // namespace tokenspeed::metrics
