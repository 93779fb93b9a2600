// signal_names_test.cpp — crash lines and exit reports name a signal by its
// standard name and, for the signals a crash raises, say what it means.
#include <catch2/catch.hpp>

#include <csignal>
#include <string>

#include "core/signal_names.hpp"

using namespace tokenspeed::metrics;

TEST_CASE("a signal number is named by its standard name") {
  CHECK(std::string(signal_name(SIGSEGV)) == "SIGSEGV");
  CHECK(std::string(signal_name(SIGTERM)) == "SIGTERM");
  CHECK(std::string(signal_name(SIGKILL)) == "SIGKILL");
  CHECK(std::string(signal_name(SIGSYS)) == "SIGSYS");
}

TEST_CASE("a number without a standard name has no name") {
  CHECK(signal_name(0) == nullptr);
  CHECK(signal_name(-1) == nullptr);
  CHECK(signal_name(SIGRTMIN) == nullptr);
  CHECK(signal_name(1000) == nullptr);
}

TEST_CASE("the signals of a crash say what they mean") {
  CHECK(std::string(signal_meaning(SIGSEGV)) == "segmentation fault");
  CHECK(std::string(signal_meaning(SIGBUS)) == "bus error");
  CHECK(std::string(signal_meaning(SIGILL)) == "illegal instruction");
  CHECK(std::string(signal_meaning(SIGFPE)) == "arithmetic exception");
  CHECK(std::string(signal_meaning(SIGABRT)) == "aborted");
  CHECK(std::string(signal_meaning(SIGTRAP)) == "trace trap");
  CHECK(std::string(signal_meaning(SIGSYS)) == "bad system call");
}

TEST_CASE("a signal without a short phrase, or an unknown number, means the empty string") {
  CHECK(std::string(signal_meaning(SIGUSR1)) == "");
  CHECK(std::string(signal_meaning(SIGCHLD)) == "");
  CHECK(std::string(signal_meaning(1000)) == "");
}
