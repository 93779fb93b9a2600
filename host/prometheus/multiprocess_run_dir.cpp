// multiprocess_run_dir.cpp — creating, cleaning and removing the per-run
// directory; process liveness from /proc. Startup and shutdown only.
#include "prometheus/multiprocess_run_dir.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <signal.h>
#include <sstream>
#include <string>
#include <system_error>
#include <sys/stat.h>
#include <unistd.h>

#include "config/startup_error.hpp"

namespace tokenspeed::metrics {
namespace {

constexpr const char* kRunPrefix = "run-";
constexpr const char* kOwnerFile = "owner";
constexpr auto kOwnerlessGrace = std::chrono::minutes(10);

std::uint64_t read_start_time(pid_t pid) noexcept {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  std::FILE* file = std::fopen(path, "r");
  if (file == nullptr) return 0;
  char buffer[1024];
  const std::size_t n = std::fread(buffer, 1, sizeof buffer - 1, file);
  std::fclose(file);
  buffer[n] = '\0';
  const char* p = std::strrchr(buffer, ')');
  if (p == nullptr) return 0;
  ++p;
  // Fields after the command: state is field 3, starttime field 22.
  for (int field = 3; field < 22; ++field) {
    while (*p == ' ') ++p;
    while (*p != ' ' && *p != '\0') ++p;
    if (*p == '\0') return 0;
  }
  return std::strtoull(p, nullptr, 10);
}

StartupError dir_error(const std::filesystem::path& dir, const std::string& what) {
  return StartupError({"prometheus", dir.string(), "--metrics-multiproc-dir"}, what);
}

}  // namespace

ProcessIdentity current_process_identity() noexcept {
  const pid_t pid = ::getpid();
  return ProcessIdentity{pid, read_start_time(pid)};
}

bool process_alive(const ProcessIdentity& process) noexcept {
  if (process.pid <= 0) return false;
  if (::kill(process.pid, 0) != 0 && errno != EPERM) return false;
  if (process.start_time == 0) return true;
  const std::uint64_t now = read_start_time(process.pid);
  return now == 0 || now == process.start_time;
}

std::filesystem::path default_multiprocess_base_dir() {
  const char* tmp =
      std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): startup, before any thread
  std::filesystem::path base = (tmp != nullptr && *tmp != '\0') ? tmp : "/tmp";
  return base / ("tokenspeed-metrics-" + std::to_string(::getuid()));
}

void check_multiprocess_base_dir(const std::filesystem::path& base_dir) {
  struct stat info {};
  if (::lstat(base_dir.c_str(), &info) != 0) {
    if (errno == ENOENT) return;  // created at startup
    throw dir_error(base_dir, "not a directory");
  }
  if (!S_ISDIR(info.st_mode)) throw dir_error(base_dir, "not a directory");
  if (info.st_uid != ::getuid()) {
    throw dir_error(base_dir, "the directory belongs to another user");
  }
}

MultiprocessRunDir::MultiprocessRunDir(const std::filesystem::path& base_dir) {
  std::error_code ec;
  if (!std::filesystem::exists(base_dir, ec)) {
    std::filesystem::create_directories(base_dir, ec);
    if (ec) throw dir_error(base_dir, "cannot create the directory: " + ec.message());
    ::chmod(base_dir.c_str(), 0700);
  }
  struct stat info {};
  if (::lstat(base_dir.c_str(), &info) != 0) throw dir_error(base_dir, "not a directory");
  check_multiprocess_base_dir(base_dir);
  remove_stale(base_dir);

  std::string templ = (base_dir / (std::string(kRunPrefix) + "XXXXXX")).string();
  if (::mkdtemp(templ.data()) == nullptr) {  // mkdtemp creates it 0700
    throw dir_error(base_dir, "cannot create a run directory: " +
                                  std::error_code(errno, std::generic_category()).message());
  }
  path_ = templ;
  creator_ = ::getpid();
  const ProcessIdentity self = current_process_identity();
  std::ofstream owner(path_ / kOwnerFile);
  owner << self.pid << ' ' << self.start_time << '\n';
  owner.close();
  if (!owner) {
    remove();
    throw dir_error(path_, "cannot write the owner file");
  }
}

MultiprocessRunDir::~MultiprocessRunDir() { remove(); }

void MultiprocessRunDir::remove() noexcept {
  if (removed_ || path_.empty() || ::getpid() != creator_) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  removed_ = true;
}

std::size_t MultiprocessRunDir::remove_stale(const std::filesystem::path& base_dir) noexcept {
  std::size_t removed = 0;
  std::error_code ec;
  std::filesystem::directory_iterator it(base_dir, ec);
  if (ec) return 0;
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kRunPrefix, 0) != 0) continue;
    std::error_code entry_ec;
    if (!entry.is_directory(entry_ec) || entry.is_symlink(entry_ec)) continue;
    bool stale = false;
    std::ifstream owner(entry.path() / kOwnerFile);
    ProcessIdentity process;
    long long pid = 0;
    unsigned long long start = 0;
    if (owner >> pid >> start) {
      process.pid = static_cast<pid_t>(pid);
      process.start_time = start;
      stale = !process_alive(process);
    } else {
      const auto written = std::filesystem::last_write_time(entry.path(), entry_ec);
      stale =
          !entry_ec && std::filesystem::file_time_type::clock::now() - written > kOwnerlessGrace;
    }
    if (!stale) continue;
    std::filesystem::remove_all(entry.path(), entry_ec);
    if (!entry_ec) ++removed;
  }
  return removed;
}

}  // namespace tokenspeed::metrics
