// credential_check_queue.cpp — the checking thread: takes the oldest waiting
// check, skips it when no longer wanted, runs it otherwise.
#include "prometheus/server/credential_check_queue.hpp"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

namespace tokenspeed::metrics {

CredentialCheckQueue::CredentialCheckQueue(std::size_t capacity)
    : capacity_(std::max<std::size_t>(capacity, 1)), thread_([this] { loop(); }) {}

CredentialCheckQueue::~CredentialCheckQueue() {
  stop();
  join();
}

bool CredentialCheckQueue::submit(std::unique_ptr<CredentialCheck> check) {
  // Checks no longer wanted leave a full queue at once, so that evicted
  // connections never hold the places of new ones. Destroyed after the lock.
  std::vector<std::unique_ptr<CredentialCheck>> unwanted;
  {
    MutexLock lock(mutex_);
    if (!stopping_ && waiting_.size() + (running_check_ ? 1 : 0) >= capacity_) {
      for (auto it = waiting_.begin(); it != waiting_.end();) {
        bool wanted = true;
        try {
          wanted = (*it)->wanted();
        } catch (...) {
          // Kept: the checking thread counts it when its turn comes.
        }
        if (wanted) {
          ++it;
        } else {
          unwanted.push_back(std::move(*it));
          it = waiting_.erase(it);
          ++figures_.skipped;
        }
      }
    }
    const std::size_t pending = waiting_.size() + (running_check_ ? 1 : 0);
    if (stopping_ || pending >= capacity_) {
      ++figures_.refused;
      // check is destroyed after the lock, with the unwanted ones.
    } else {
      waiting_.push_back(std::move(check));
    }
  }
  if (check) return false;
  cv_.notify_one();
  return true;
}

void CredentialCheckQueue::loop() {
  for (;;) {
    std::unique_ptr<CredentialCheck> check;
    {
      MutexLock lock(mutex_);
      running_check_ = false;
      while (!stopping_ && waiting_.empty()) cv_.wait(mutex_);
      if (stopping_) return;
      check = std::move(waiting_.front());
      waiting_.pop_front();
      running_check_ = true;
    }
    bool ran = false;
    bool failed = false;
    try {
      if (check->wanted()) {
        ran = true;
        check->run();
      }
    } catch (...) {
      failed = true;  // counted; the thread keeps checking
    }
    check.reset();  // its password wiped before the next check begins
    MutexLock lock(mutex_);
    if (failed)
      ++figures_.failed;
    else if (ran)
      ++figures_.run;
    else
      ++figures_.skipped;
  }
}

void CredentialCheckQueue::stop() noexcept {
  std::deque<std::unique_ptr<CredentialCheck>> dropped;
  {
    MutexLock lock(mutex_);
    stopping_ = true;
    dropped.swap(waiting_);
  }
  cv_.notify_all();
  // dropped (and the requesters it holds) is released here, outside the lock.
}

void CredentialCheckQueue::join() noexcept {
  if (thread_.joinable()) thread_.join();
}

CredentialCheckFigures CredentialCheckQueue::figures() const {
  MutexLock lock(mutex_);
  return figures_;
}

}  // namespace tokenspeed::metrics
