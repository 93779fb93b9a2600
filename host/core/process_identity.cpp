// process_identity.cpp — names, roles and ranks of processes, and their C view.
#include "core/process_identity.hpp"

#include <tokenspeed/metric_reporter.hpp>

#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "core/thread_safety.hpp"

namespace tokenspeed::metrics {

// The kit's, so that the host and its plugins name a machine alike.
std::string this_host_name() { return plugin::this_host_name(); }

namespace {
// Every name ever set stays allocated and reachable: a plugin thread may be
// reading the previous one.
std::atomic<const char*> g_log_process_name{""};
Mutex g_names_mutex;
std::vector<std::unique_ptr<char[]>>* const g_names TSM_PT_GUARDED_BY(g_names_mutex) =
    new std::vector<std::unique_ptr<char[]>>();
}  // namespace

void set_log_process_name(const std::string& name) {
  auto copy = std::make_unique<char[]>(name.size() + 1);
  std::memcpy(copy.get(), name.c_str(), name.size() + 1);
  MutexLock lock(g_names_mutex);
  g_names->push_back(std::move(copy));
  g_log_process_name.store(g_names->back().get(), std::memory_order_release);
}

const char* log_process_name() noexcept {
  return g_log_process_name.load(std::memory_order_acquire);
}

ProcessIdentity make_process_identity(const std::string& name, pid_t pid, const std::string& node) {
  ProcessIdentity identity;
  identity.name = name;
  identity.role = name;
  identity.pid = pid;
  identity.node = node.empty() ? this_host_name() : node;
  const std::size_t dash = name.rfind('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 == name.size()) return identity;
  const std::string digits = name.substr(dash + 1);
  // At most 9 digits: the rank fits an int32 of the C view.
  if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
    return identity;
  identity.role = name.substr(0, dash);
  identity.rank = std::stoi(digits);
  return identity;
}

ProcessIdentityView::ProcessIdentityView(ProcessIdentity identity)
    : identity_(std::move(identity)) {
  view_.struct_size = sizeof(tsm_process_identity);
  view_.rank = identity_.rank;
  view_.name = identity_.name.c_str();
  view_.role = identity_.role.c_str();
  view_.node = identity_.node.c_str();
  view_.pid = identity_.pid;
}

}  // namespace tokenspeed::metrics
