// plugin_call_context.hpp — which plugin code the calling thread is running,
// as a line preformatted before the call ("output 'x' (plugin file '/p/x.so')
// in emit"), for the fatal-signal handler to print. Two plain stores per
// plugin call; never allocates, locks or makes a system call.
#pragma once

#include <atomic>

namespace tokenspeed::metrics {

namespace detail {
// The running call's text on this thread, nullptr outside plugin code.
inline thread_local const char* tl_plugin_call __attribute__((tls_model("initial-exec"))) = nullptr;
}  // namespace detail

// The text of the plugin call the calling thread is in, or nullptr.
// Async-signal-safe: the fatal-signal handler reads it on the crashing thread.
inline const char* current_plugin_call() noexcept {
  std::atomic_signal_fence(std::memory_order_acquire);
  return detail::tl_plugin_call;
}

// Marks the calling thread as running plugin code for its lifetime. The text
// must outlive the scope. Threading: the scope belongs to the thread that
// made it; nested scopes restore the outer text.
class PluginCallScope {
 public:
  explicit PluginCallScope(const char* text) noexcept : outer_(detail::tl_plugin_call) {
    detail::tl_plugin_call = text;
    std::atomic_signal_fence(std::memory_order_seq_cst);  // set before the call starts
  }
  ~PluginCallScope() {
    std::atomic_signal_fence(std::memory_order_seq_cst);  // cleared after it returned
    detail::tl_plugin_call = outer_;
  }
  PluginCallScope(const PluginCallScope&) = delete;
  PluginCallScope& operator=(const PluginCallScope&) = delete;

 private:
  const char* outer_;
};

}  // namespace tokenspeed::metrics
