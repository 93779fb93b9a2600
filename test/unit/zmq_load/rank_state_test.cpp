// A rank's latest values and fpm commits: a set moves the version only when
// the value changes, a commit copies the group (unset values as 0), and the
// ring refuses a commit when full rather than overwrite an unsent one.
#include <catch2/catch.hpp>

#include <cmath>

#include "rank_state.hpp"

using namespace tokenspeed::metrics::zmq_load;

TEST_CASE("a set moves the version only when the value changes", "[zmq_load]") {
  RankState rank;
  CHECK(std::isnan(rank.snapshot().values[0]));
  CHECK(rank.set(0, 3, 10.0));
  const uint64_t version = rank.version();
  CHECK_FALSE(rank.set(0, 3, 11.0));
  CHECK(rank.version() == version);
  CHECK(rank.snapshot().changed_at == 10.0);
  CHECK_FALSE(rank.snapshot().fpm_seen);
}

TEST_CASE("a commit copies the fpm group; a full ring refuses", "[zmq_load]") {
  RankState rank;
  const auto first = static_cast<std::size_t>(Field::kFpmFirstGauge);
  rank.set(first + 1, 300, 1.0);
  CHECK(rank.snapshot().fpm_seen);
  REQUIRE(rank.commit_fpm(2.5));
  FpmRecord record;
  REQUIRE(rank.take_fpm(record));
  CHECK(record.values[0] == 0.0);
  CHECK(record.values[1] == 300);
  CHECK(record.wall_time == 2.5);
  CHECK_FALSE(rank.take_fpm(record));
  for (std::size_t i = 0; i < RankState::kFpmRingSize; ++i) REQUIRE(rank.commit_fpm(3.0));
  CHECK_FALSE(rank.commit_fpm(4.0));
}

TEST_CASE("events are taken once", "[zmq_load]") {
  RankState rank;
  rank.note_event();
  rank.note_event();
  CHECK(rank.take_events() == 2);
  CHECK(rank.take_events() == 0);
}
