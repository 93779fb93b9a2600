// session_table.hpp — the endpoint's connections counted against its
// connection limit, and which one goes when a new one arrives at the limit.
// Only a connection waiting (for a complete request, in its TLS handshake or
// for its credential check) can go: first those that had a request refused,
// then those that never had one authorized, then the authorized ones (a
// scraper's kept-alive connection between two scrapes), the one waiting
// longest within that standing. Clients flooding wrong passwords or
// connections and reconnecting when evicted then evict their own kind, never
// the scraper. Knows no socket: a session is any type the table hands back to
// be closed. Tested in test/unit/prometheus/server/session_table_test.cpp.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <list>
#include <memory>

#include "core/thread_safety.hpp"

namespace tokenspeed::metrics {

template <class Session>
class SessionTable {
  struct Entry;

 public:
  using Clock = std::chrono::steady_clock;
  // A session's place in the table, from admit until leave.
  using Ticket = typename std::list<Entry>::iterator;
  struct Admission {
    bool admitted = false;  // false: at the limit with no session waiting
    Ticket ticket{};
    // Chosen to make room, to be closed by the caller (outside the table:
    // the last owner's release may end the session, which leaves).
    std::shared_ptr<Session> evicted;
  };

  explicit SessionTable(std::size_t limit) : limit_(limit) {}

  // A new session, waiting since now, until attach names it.
  Admission admit(Clock::time_point now) {
    Admission admission;
    MutexLock lock(mutex_);
    if (admitted_ >= limit_) {
      admission.evicted = evict_one_locked();
      if (!admission.evicted) return admission;
    }
    ++admitted_;
    admission.admitted = true;
    admission.ticket = entries_.insert(entries_.end(), Entry{});
    admission.ticket->waiting_since = now;
    return admission;
  }
  void attach(Ticket ticket, std::weak_ptr<Session> session) {
    MutexLock lock(mutex_);
    ticket->session = std::move(session);
  }
  // The session is gone (its destructor): its place is free again.
  void leave(Ticket ticket) {
    MutexLock lock(mutex_);
    if (!ticket->evicted) --admitted_;
    entries_.erase(ticket);
  }

  // Whether the session waits without a complete request; false when it was
  // chosen for eviction meanwhile (the caller then stops).
  bool set_waiting(Ticket ticket, bool waiting, Clock::time_point now) {
    MutexLock lock(mutex_);
    if (ticket->evicted) return false;
    if (waiting && !ticket->waiting) ticket->waiting_since = now;
    ticket->waiting = waiting;
    return true;
  }
  bool evicted(Ticket ticket) const {
    MutexLock lock(mutex_);
    return ticket->evicted;
  }
  // A request of it was refused (401, 429, 503): it goes first at the limit.
  void mark_refused(Ticket ticket) {
    MutexLock lock(mutex_);
    ticket->refused = true;
  }
  // A request of it passed the access checks: it goes last at the limit.
  void mark_authorized(Ticket ticket) {
    MutexLock lock(mutex_);
    ticket->authorized = true;
  }
  // Sessions counted against the limit (the evicted ones no longer are).
  std::size_t admitted() const {
    MutexLock lock(mutex_);
    return admitted_;
  }

 private:
  struct Entry {
    std::weak_ptr<Session> session;  // empty until attach
    bool waiting = true;
    Clock::time_point waiting_since{};
    bool refused = false;
    bool authorized = false;
    bool evicted = false;
  };

  static int standing(const Entry& entry) noexcept {
    if (entry.refused) return 0;
    return entry.authorized ? 2 : 1;
  }

  // The waiting entry to evict, lowest standing first, then longest waiting;
  // entries of sessions being destroyed (or not yet attached) are passed over.
  Entry* choose_locked() TSM_REQUIRES(mutex_) {
    std::array<Entry*, 3> oldest_of{};
    for (Entry& entry : entries_) {
      if (!entry.waiting || entry.evicted || entry.session.expired()) continue;
      Entry*& oldest = oldest_of[standing(entry)];
      if (oldest == nullptr || entry.waiting_since < oldest->waiting_since) oldest = &entry;
    }
    for (Entry* candidate : oldest_of)
      if (candidate != nullptr) return candidate;
    return nullptr;
  }

  std::shared_ptr<Session> evict_one_locked() TSM_REQUIRES(mutex_) {
    while (Entry* chosen = choose_locked()) {
      std::shared_ptr<Session> session = chosen->session.lock();
      if (!session) continue;  // destroyed since choose_locked looked: expired now
      chosen->evicted = true;
      --admitted_;
      return session;
    }
    return nullptr;
  }

  const std::size_t limit_;
  mutable Mutex mutex_;
  std::list<Entry> entries_ TSM_GUARDED_BY(mutex_);
  std::size_t admitted_ TSM_GUARDED_BY(mutex_) = 0;
};

}  // namespace tokenspeed::metrics
