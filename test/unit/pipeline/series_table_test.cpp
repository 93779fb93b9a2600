// series_table_test.cpp — a router numbers its series from 0 in the order
// they are added and finds each by its number, across chunk boundaries and
// when threads add at once.
#include <catch2/catch.hpp>

#include <cstdint>
#include <thread>
#include <vector>

#include "pipeline/series_table.hpp"

using namespace tokenspeed::metrics;

namespace {

// Distinct addresses to store: the table never dereferences them.
const MetricSeries* series_at(std::uintptr_t i) {
  return reinterpret_cast<const MetricSeries*>((i + 1) * 16);
}

}  // namespace

TEST_CASE("series are numbered from 0 in the order they are added") {
  SeriesTable table;
  CHECK(table.size() == 0);
  CHECK(table.add(series_at(0)) == 0);
  CHECK(table.add(series_at(1)) == 1);
  CHECK(table.add(series_at(2)) == 2);
  CHECK(table.size() == 3);
  CHECK(table.find(0) == series_at(0));
  CHECK(table.find(2) == series_at(2));
}

TEST_CASE("a series is found by its number past the first chunk") {
  SeriesTable table;
  const std::uint32_t count = (std::uint32_t{1} << SeriesTable::kChunkBits) * 2 + 5;
  for (std::uint32_t i = 0; i < count; ++i) REQUIRE(table.add(series_at(i)) == i);
  for (std::uint32_t i = 0; i < count; ++i) REQUIRE(table.find(i) == series_at(i));
  CHECK(table.size() == count);
}

TEST_CASE("threads adding at once each get numbers of their own") {
  SeriesTable table;
  constexpr int kThreads = 4;
  constexpr std::uint32_t kEach = 5000;
  std::vector<std::vector<std::uint32_t>> numbers(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (std::uint32_t i = 0; i < kEach; ++i) {
        numbers[t].push_back(table.add(series_at(t * kEach + i)));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(table.size() == kThreads * kEach);
  for (int t = 0; t < kThreads; ++t) {
    for (std::uint32_t i = 0; i < kEach; ++i) {
      REQUIRE(table.find(numbers[t][i]) == series_at(t * kEach + i));
    }
  }
}
