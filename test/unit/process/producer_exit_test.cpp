// producer_exit_test.cpp — how the end of a producer is told to the operator,
// and which ends count as crashes.
#include <catch2/catch.hpp>

#include <csignal>

#include "process/producer_exit.hpp"

using namespace tokenspeed::metrics;

namespace {

ProducerProcess ended(int exit_status, int term_signal, bool stop_requested = false,
                      bool killed = false) {
  ProducerProcess process;
  process.name = "scheduler-0";
  process.pid = 4711;
  process.running = false;
  process.exit_status = exit_status;
  process.term_signal = term_signal;
  process.stop_requested = stop_requested;
  process.killed = killed;
  return process;
}

}  // namespace

TEST_CASE("a producer killed by a signal is reported with the signal's name") {
  CHECK(describe_producer_exit(ended(139, SIGSEGV)) ==
        "was killed by SIGSEGV (segmentation fault)");
  CHECK(describe_producer_exit(ended(134, SIGABRT)) == "was killed by SIGABRT (aborted)");
  CHECK(describe_producer_exit(ended(137, SIGKILL)) == "was killed by SIGKILL (killed)");
  CHECK(describe_producer_exit(ended(3, 0)) == "exited with status 3");
  CHECK(signal_label(60) == "signal 60");
}

TEST_CASE(
    "a death by a signal the launcher did not send is a crash; its own SIGTERM and its "
    "SIGKILL after the budget are not") {
  CHECK(producer_crashed(ended(139, SIGSEGV)));
  CHECK(producer_crashed(ended(137, SIGKILL)));        // the OOM killer, an operator's kill -9
  CHECK(producer_crashed(ended(139, SIGSEGV, true)));  // crashed while closing
  CHECK_FALSE(producer_crashed(ended(143, SIGTERM, true)));
  CHECK_FALSE(producer_crashed(ended(137, SIGKILL, true, true)));
  CHECK_FALSE(producer_crashed(ended(1, 0)));
  CHECK(producer_ended_unexpectedly(ended(1, 0)));
  CHECK_FALSE(producer_ended_unexpectedly(ended(0, 0, true)));
}

TEST_CASE("the summary row of a producer that left no summary says how it ended") {
  CHECK(producer_row_status(ended(139, SIGSEGV)) ==
        "crashed: killed by SIGSEGV (segmentation fault)");
  CHECK(producer_row_status(ended(137, SIGKILL, true, true)) ==
        "failed: did not exit within the shutdown budget and was killed (no summary)");
}
