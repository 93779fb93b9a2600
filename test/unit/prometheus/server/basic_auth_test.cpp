// basic_auth_test.cpp — unit tests of host/prometheus/basic_auth: bcrypt
// hashes made here with libxcrypt, right and wrong passwords, unknown users.
#include <catch2/catch.hpp>

#include <crypt.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "prometheus/server/basic_auth.hpp"

using namespace tokenspeed::metrics;

namespace {

// A fresh bcrypt hash of password ("$2b$", random salt) at the given cost.
std::string bcrypt_hash(const std::string& password, int cost, const char* prefix = "$2b$") {
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  REQUIRE(crypt_gensalt_rn(prefix, cost, nullptr, 0, setting, sizeof setting) != nullptr);
  crypt_data data{};
  const char* hash = crypt_r(password.c_str(), setting, &data);
  REQUIRE(hash != nullptr);
  REQUIRE(hash[0] == '$');
  return hash;
}

// The fastest of three calls, in seconds.
template <typename F>
double fastest_of_three(F call) {
  double best = 1e9;
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    call();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

}  // namespace

TEST_CASE("the right password of a known user is accepted, a wrong one refused") {
  const BasicAuthVerifier verifier(
      {{"alice", bcrypt_hash("s3cret", 4)}, {"bob", bcrypt_hash("hunter2", 4, "$2y$")}});
  CHECK(verifier.enabled());
  CHECK(verifier.verify("alice", "s3cret"));
  CHECK(verifier.verify("bob", "hunter2"));
  CHECK_FALSE(verifier.verify("alice", "hunter2"));
  CHECK_FALSE(verifier.verify("alice", "s3cre"));
  CHECK_FALSE(verifier.verify("alice", ""));
  CHECK_FALSE(verifier.verify("Alice", "s3cret"));
}

TEST_CASE("hashes of $2a$ are understood") {
  const BasicAuthVerifier verifier({{"carol", bcrypt_hash("pw", 4, "$2a$")}});
  CHECK(verifier.verify("carol", "pw"));
}

// Go's bcrypt (exporter-toolkit's) reads the minor version letter and
// computes every one alike, as $2b$: the same hash under another letter
// verifies the same password, 8-bit characters included (crypt(3)'s $2x$
// would compute those with the old sign-extension bug, its $2a$ with a
// safeguard against it).
TEST_CASE("every minor version of a hash verifies as Go's bcrypt verifies it: as $2b$") {
  for (const std::string password : {"pw", "p\xc3\xa4ssw\xc3\xb6rd", "\xff\xfe\x80"}) {
    const std::string hash = bcrypt_hash(password, 4, "$2b$");
    for (const std::string version : {"$2a", "$2x", "$2y", "$2b", "$2"}) {
      const std::string rewritten = version + hash.substr(3);
      INFO(rewritten);
      const BasicAuthVerifier verifier({{"dave", rewritten}});
      CHECK(verifier.verify("dave", password));
      CHECK_FALSE(verifier.verify("dave", password + "x"));
    }
  }
}

TEST_CASE("an unknown user is refused, also with another user's password") {
  const BasicAuthVerifier verifier({{"alice", bcrypt_hash("s3cret", 4)}});
  CHECK_FALSE(verifier.verify("mallory", "s3cret"));
  CHECK_FALSE(verifier.verify("", ""));
}

TEST_CASE("a password holding a NUL byte never matches, even when its start does") {
  const BasicAuthVerifier verifier({{"alice", bcrypt_hash("s3cret", 4)}});
  CHECK_FALSE(verifier.verify("alice", std::string("s3cret\0x", 8)));
}

TEST_CASE("no users: authentication is off and nothing matches") {
  const BasicAuthVerifier verifier({});
  CHECK_FALSE(verifier.enabled());
  CHECK_FALSE(verifier.verify("anyone", "anything"));
}

TEST_CASE("an unknown user is checked at the fixed cost 10 whatever the users' costs") {
  // Before, the stand-in hash took the users' highest cost: unknown names
  // bought the file's slowest check (cost 18: 15 s each).
  for (const int highest : {4, 10, 12, 14}) {
    INFO("highest cost " << highest);
    const BasicAuthVerifier verifier(
        {{"fast", bcrypt_hash("a", 4)},
         {"slow", "$2b$" + std::to_string(highest) + bcrypt_hash("b", 4).substr(6)}});
    CHECK(verifier.unknown_user_cost() == BasicAuthVerifier::kUnknownUserCost);
  }
  CHECK(BasicAuthVerifier::kUnknownUserCost == 10);
  const BasicAuthVerifier none({});
  CHECK(none.unknown_user_cost() == 10);
  // The stand-in hash is a real one: an unknown user is refused after a check.
  const BasicAuthVerifier verifier({{"slow", bcrypt_hash("b", 4)}});
  CHECK_FALSE(verifier.verify("nobody", "b"));
}

TEST_CASE("a pair that verified is remembered; a failed one never is") {
  const BasicAuthVerifier verifier({{"alice", bcrypt_hash("s3cret", 4)}});
  CHECK_FALSE(verifier.verified_before("alice", "s3cret"));
  CHECK_FALSE(verifier.verify("alice", "wrong"));
  CHECK_FALSE(verifier.verified_before("alice", "wrong"));
  CHECK(verifier.verify("alice", "s3cret"));
  CHECK(verifier.verified_before("alice", "s3cret"));
  CHECK_FALSE(verifier.verified_before("alice", "s3cre"));
  CHECK_FALSE(verifier.verified_before("bob", "s3cret"));
}

TEST_CASE("a remembered pair answers without bcrypt") {
  const BasicAuthVerifier verifier({{"slow", bcrypt_hash("b", 12)}});
  const double first = fastest_of_three([&] { CHECK_FALSE(verifier.verify("slow", "wrong")); });
  CHECK(verifier.verify("slow", "b"));
  const double remembered = fastest_of_three([&] { CHECK(verifier.verify("slow", "b")); });
  CHECK(remembered < first / 10);
}
