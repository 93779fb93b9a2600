// eventually.hpp — the one way a unit test waits for something another thread
// or process brings about: poll a condition until it holds. The deadline is a
// hang guard only, generous for a busy CI machine; no test relies on it as a
// timing. Header-only and C++17, for the kit and plugin tests too. Test code
// only.
#pragma once

#include <chrono>
#include <thread>

namespace tokenspeed::metrics::test {

inline constexpr std::chrono::seconds kEventuallyGuard{60};

// Polls condition until it holds (true) or guard passes (false; the condition
// gets a last look at the deadline).
template <class Condition>
bool eventually(Condition&& condition,
                std::chrono::steady_clock::duration guard = kEventuallyGuard) {
  const auto give_up = std::chrono::steady_clock::now() + guard;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= give_up) return condition();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace tokenspeed::metrics::test
