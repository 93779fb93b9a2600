// multiprocess_run_dir.cpp — creating, cleaning and removing the per-run
// directory; run-directory ownership by lock; process liveness from /proc.
// Startup and shutdown only.
#include "prometheus/store/multiprocess_run_dir.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

#include "config/metrics_flag_table.hpp"
#include "core/startup_error.hpp"

namespace tokenspeed::metrics {
namespace {

constexpr const char* kRunPrefix = "run-";
constexpr const char* kOwnerFile = "owner";
// The owner file is written and locked under this name, then renamed: an
// "owner" file that another launcher finds is always locked already.
constexpr const char* kOwnerStagingFile = "owner.new";
// The owner file reads "<pid> <start time> flock <host>": the pid and start
// time come first as in the format before the lock (for older launchers
// sharing the base directory); "flock" says the live launcher holds a lock
// on the file, and the host is there for whoever looks at a shared volume.
constexpr const char* kLockedOwnerMarker = "flock";
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
  return StartupError(
      {"prometheus", dir.string(), flag_spelling(metrics_flag(&Options::multiproc_dir))}, what);
}

std::string os_error(int error) {
  return std::error_code(error, std::generic_category()).message();
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "unknown";
  return name;
}

// Creates the owner file of a new run directory, locks it and writes who
// owns it; returns the locked descriptor (close-on-exec: programs the
// launcher starts never hold the lock). Throws StartupError with the OS's
// reason.
int create_locked_owner_file(const std::filesystem::path& run_dir) {
  const std::filesystem::path staging = run_dir / kOwnerStagingFile;
  const std::filesystem::path owner = run_dir / kOwnerFile;
  const int fd = ::open(staging.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        S_IRUSR | S_IWUSR);
  if (fd < 0) throw dir_error(owner, "cannot write the owner file: " + os_error(errno));
  auto fail = [fd, &owner](const std::string& what) {
    const int error = errno;
    ::close(fd);
    return dir_error(owner, what + ": " + os_error(error));
  };
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) throw fail("cannot lock the owner file");
  const ProcessInstance self = current_process_instance();
  const std::string text = std::to_string(self.pid) + ' ' + std::to_string(self.start_time) + ' ' +
                           kLockedOwnerMarker + ' ' + host_name() + '\n';
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      throw fail("cannot write the owner file");
    }
    written += static_cast<std::size_t>(n);
  }
  if (::rename(staging.c_str(), owner.c_str()) != 0) throw fail("cannot write the owner file");
  return fd;
}

// The owner file of a run directory when it is one that its launcher keeps
// locked (a regular file in the current format); -1 otherwise. Never blocks:
// a FIFO or a device named "owner" is opened non-blocking and refused.
int open_locked_format_owner_file(const std::filesystem::path& run_dir) noexcept {
  const int fd = ::open((run_dir / kOwnerFile).c_str(),
                        O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return -1;
  struct stat info {};
  char text[512] = {};
  long long pid = 0;
  unsigned long long start = 0;
  char marker[16] = {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) ||
      ::pread(fd, text, sizeof text - 1, 0) <= 0 ||
      std::sscanf(text, "%lld %llu %15s", &pid, &start, marker) != 3 ||
      std::strcmp(marker, kLockedOwnerMarker) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool older_than_grace(const std::filesystem::path& run_dir) noexcept {
  std::error_code ec;
  const auto written = std::filesystem::last_write_time(run_dir, ec);
  return !ec && std::filesystem::file_time_type::clock::now() - written > kOwnerlessGrace;
}

}  // namespace

ProcessInstance current_process_instance() noexcept {
  const pid_t pid = ::getpid();
  return ProcessInstance{pid, read_start_time(pid)};
}

bool process_alive(const ProcessInstance& process) noexcept {
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
    throw dir_error(base_dir, "cannot create a run directory: " + os_error(errno));
  }
  path_ = templ;
  creator_ = ::getpid();
  try {
    owner_lock_ = create_locked_owner_file(path_);
  } catch (...) {
    remove();
    throw;
  }
}

MultiprocessRunDir::~MultiprocessRunDir() {
  remove();
  // In a forked child: closing its copy of the descriptor leaves the
  // launcher's lock in place.
  if (owner_lock_ >= 0) ::close(owner_lock_);
}

void MultiprocessRunDir::remove() noexcept {
  if (removed_ || path_.empty() || ::getpid() != creator_) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  removed_ = true;
  // Unlocked only once the directory is gone (closing, never LOCK_UN: a
  // forked child shares the lock and must not release it for the launcher).
  if (owner_lock_ >= 0) ::close(owner_lock_);
  owner_lock_ = -1;
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
    // Its launcher is gone when its lock can be taken; the lock is kept
    // while the directory is removed. A lock that cannot be tried at all
    // (ENOLCK on a filesystem without locks) keeps the directory.
    const int owner = open_locked_format_owner_file(entry.path());
    const bool stale =
        owner >= 0 ? ::flock(owner, LOCK_EX | LOCK_NB) == 0 : older_than_grace(entry.path());
    if (stale && std::filesystem::remove_all(entry.path(), entry_ec) > 0 && !entry_ec) ++removed;
    if (owner >= 0) ::close(owner);
  }
  return removed;
}

}  // namespace tokenspeed::metrics
