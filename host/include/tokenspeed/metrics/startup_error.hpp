// startup_error.hpp — the one exception type of startup validation. It carries
// the reporter, file and key at fault; a command line tool prints it as one
// line on stderr and exits with status 2. Never thrown after startup.
#pragma once

#include <stdexcept>
#include <string>

namespace tokenspeed::metrics {

struct StartupErrorContext {
  std::string reporter;  // the output name at fault, "" if none
  std::string file;      // the configuration or plugin file, "" if none
  std::string key;       // the JSON key path ("a.b[2].c") or flag, "" if none
};

class StartupError : public std::runtime_error {
 public:
  StartupError(StartupErrorContext context, const std::string& message)
      : std::runtime_error(format(context, message)),
        context_(std::move(context)),
        message_(message) {}

  const StartupErrorContext& context() const noexcept { return context_; }
  const std::string& reporter() const noexcept { return context_.reporter; }
  const std::string& file() const noexcept { return context_.file; }
  const std::string& key() const noexcept { return context_.key; }
  // The message without the context prefix.
  const std::string& message() const noexcept { return message_; }

  // "reporter 'x': file '/etc/m.json': key 'x.port': <message>", omitting the
  // parts that are empty. Always a single line: newlines become spaces.
  static std::string format(const StartupErrorContext& context, const std::string& message) {
    std::string line;
    auto part = [&line](const char* what, const std::string& value) {
      if (value.empty()) return;
      line += what;
      line += " '";
      line += value;
      line += "': ";
    };
    part("reporter", context.reporter);
    part("file", context.file);
    part("key", context.key);
    line += message;
    for (char& c : line) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    return line;
  }

 private:
  StartupErrorContext context_;
  std::string message_;
};

// The exit status of every startup error.
inline constexpr int kStartupErrorExitStatus = 2;

}  // namespace tokenspeed::metrics
