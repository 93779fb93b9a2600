// session_table_test.cpp — unit tests of host/prometheus/server/session_table:
// admission up to the connection limit and who is evicted beyond it, without
// a socket (the sessions are plain objects the table hands back).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "prometheus/server/session_table.hpp"

using namespace tokenspeed::metrics;

namespace {

struct FakeSession {
  int id = 0;
};
using Table = SessionTable<FakeSession>;
using Clock = Table::Clock;

// A session admitted at t0 + seconds and attached.
struct Admitted {
  std::shared_ptr<FakeSession> session;
  Table::Ticket ticket;
};

Admitted admit(Table& table, int id, int seconds) {
  const auto at = Clock::time_point{} + std::chrono::seconds(seconds);
  auto admission = table.admit(at);
  REQUIRE(admission.admitted);
  auto session = std::make_shared<FakeSession>(FakeSession{id});
  table.attach(admission.ticket, session);
  return {session, admission.ticket};
}

int evicted_id(Table& table, int seconds) {
  auto admission = table.admit(Clock::time_point{} + std::chrono::seconds(seconds));
  if (!admission.admitted) return -1;
  return admission.evicted ? admission.evicted->id : 0;
}

}  // namespace

TEST_CASE("up to the limit every session is admitted and nobody is evicted") {
  Table table(3);
  std::vector<Admitted> sessions;
  for (int id = 1; id <= 3; ++id) sessions.push_back(admit(table, id, id));
  CHECK(table.admitted() == 3);
  for (const Admitted& admitted : sessions) CHECK_FALSE(table.evicted(admitted.ticket));
}

TEST_CASE("at the limit with no session waiting, a new one is refused") {
  Table table(2);
  Admitted a = admit(table, 1, 1);
  Admitted b = admit(table, 2, 2);
  REQUIRE(table.set_waiting(a.ticket, false, {}));  // both mid-request
  REQUIRE(table.set_waiting(b.ticket, false, {}));
  CHECK(evicted_id(table, 3) == -1);
  CHECK(table.admitted() == 2);
  table.leave(b.ticket);  // a place is free again
  CHECK(evicted_id(table, 4) == 0);
}

TEST_CASE("the refused go first, then the never authorized, then the authorized, oldest first") {
  Table table(6);
  Admitted authorized_old = admit(table, 1, 1);
  Admitted authorized_new = admit(table, 2, 2);
  Admitted silent_old = admit(table, 3, 3);
  Admitted silent_new = admit(table, 4, 4);
  Admitted refused_new = admit(table, 5, 6);
  Admitted refused_old = admit(table, 6, 5);
  for (const Admitted* a : {&authorized_old, &authorized_new}) table.mark_authorized(a->ticket);
  for (const Admitted* a : {&refused_new, &refused_old}) table.mark_refused(a->ticket);
  // A refused session that was authorized before still goes first.
  table.mark_authorized(refused_old.ticket);
  std::vector<int> order;
  for (int i = 0; i < 6; ++i) order.push_back(evicted_id(table, 100 + i));
  CHECK(order == std::vector<int>{6, 5, 3, 4, 1, 2});
}

TEST_CASE("waiting time restarts when a session waits again, so a busy one goes later") {
  Table table(2);
  Admitted a = admit(table, 1, 1);
  Admitted b = admit(table, 2, 2);
  const auto at = [](int seconds) { return Clock::time_point{} + std::chrono::seconds(seconds); };
  REQUIRE(table.set_waiting(a.ticket, false, at(3)));  // a request of a arrives
  REQUIRE(table.set_waiting(a.ticket, true, at(4)));   // answered: waits since 4
  REQUIRE(table.set_waiting(a.ticket, true, at(9)));   // still waiting: since 4, not 9
  CHECK(evicted_id(table, 10) == 2);
}

TEST_CASE("an evicted session learns it when it next reports, and frees its place once") {
  Table table(1);
  Admitted a = admit(table, 1, 1);
  auto admission = table.admit(Clock::time_point{} + std::chrono::seconds(2));
  REQUIRE(admission.admitted);
  REQUIRE(admission.evicted == a.session);
  CHECK(table.evicted(a.ticket));
  CHECK_FALSE(table.set_waiting(a.ticket, false, {}));
  CHECK(table.admitted() == 1);  // the newcomer alone
  table.leave(a.ticket);         // the evicted session closes: no second release
  CHECK(table.admitted() == 1);
  table.leave(admission.ticket);
  CHECK(table.admitted() == 0);
}

TEST_CASE("a session being destroyed or not yet attached is never handed back") {
  Table table(2);
  Admitted a = admit(table, 1, 1);
  auto unattached = table.admit(Clock::time_point{} + std::chrono::seconds(0));
  REQUIRE(unattached.admitted);
  a.session.reset();  // its last owner is gone; its destructor has not left yet
  CHECK(evicted_id(table, 3) == -1);
  table.leave(a.ticket);
  CHECK(evicted_id(table, 4) == 0);
}

TEST_CASE("admissions and departures from many threads never pass the limit") {
  constexpr std::size_t kLimit = 8;
  Table table(kLimit);
  std::atomic<bool> over{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 random(static_cast<unsigned>(t));
      std::vector<Admitted> mine;
      for (int i = 0; i < 2000; ++i) {
        if (!mine.empty() && random() % 2 == 0) {
          table.leave(mine.back().ticket);
          mine.pop_back();
          continue;
        }
        auto admission = table.admit(Clock::now());
        if (table.admitted() > kLimit) over = true;
        if (!admission.admitted) continue;
        auto session = std::make_shared<FakeSession>(FakeSession{i});
        table.attach(admission.ticket, session);
        if (random() % 3 == 0) table.set_waiting(admission.ticket, false, Clock::now());
        mine.push_back({session, admission.ticket});
      }
      for (Admitted& admitted : mine) table.leave(admitted.ticket);
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK_FALSE(over);
  CHECK(table.admitted() == 0);
}
