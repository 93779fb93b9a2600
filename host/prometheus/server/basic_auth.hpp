// basic_auth.hpp — checks a basic-auth user name and password against the
// bcrypt hashes of the web configuration (basic_auth_users), through
// libxcrypt's crypt_rn. An unknown user costs one bcrypt at a fixed cost. Keeps
// no password: a pair that verified is remembered as a salted SHA-256 digest, so
// a scraper that sends the same credentials every scrape pays bcrypt (tens of
// milliseconds at cost 10) once; every other check is one bcrypt computation,
// so it is never called on a thread that must not wait.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "core/thread_safety.hpp"

namespace tokenspeed::metrics {

// verify may be called from any number of threads at once (each call has its
// own crypt_rn state; the digests of verified pairs are under a mutex).
class BasicAuthVerifier {
 public:
  // users: user name to bcrypt hash, as WebConfig::basic_auth_users (each
  // hash already checked by bcrypt_hash_cost; one that is not never matches).
  explicit BasicAuthVerifier(std::map<std::string, std::string> users);

  // True when users is not empty: requests must authenticate.
  bool enabled() const noexcept { return !users_.empty(); }

  // True when user is known and password hashes to its hash. An unknown user
  // is checked against a stand-in hash of kUnknownUserCost whatever the
  // users' costs, as exporter-toolkit does: a name the file does not hold
  // costs as much as a user of that cost (the recommended one), and never
  // more, so unknown names cannot buy a file's slowest check. A user whose
  // cost differs is told apart by timing (docs/operators.md). A password holding
  // a NUL byte never matches (crypt would see only its start). A pair that
  // verified before answers true without bcrypt; a failure is never
  // remembered, so every wrong guess costs a bcrypt computation.
  bool verify(std::string_view user, std::string_view password) const;

  // True when the pair verified before (and is still remembered): a check
  // of microseconds, for the I/O thread before it hands verify elsewhere.
  bool verified_before(std::string_view user, std::string_view password) const;

  // The bcrypt cost of the stand-in hash an unknown user is checked against
  // (kUnknownUserCost).
  int unknown_user_cost() const noexcept;

  // The cost of exporter-toolkit's stand-in hash and of htpasswd -B's default.
  static constexpr int kUnknownUserCost = 10;

 private:
  using Digest = std::array<unsigned char, 32>;
  // The last kRemembered pairs that verified, as SHA-256 of a random salt of
  // this verifier, the user and the password.
  static constexpr std::size_t kRemembered = 16;
  struct Verified {
    Mutex mutex;
    std::array<unsigned char, 32> salt{};  // written once, at construction
    std::array<Digest, kRemembered> digests TSM_GUARDED_BY(mutex){};
    std::size_t count TSM_GUARDED_BY(mutex) = 0;
  };
  Digest digest_of(std::string_view user, std::string_view password) const;

  std::map<std::string, std::string, std::less<>> users_;
  std::string unknown_user_hash_;
  std::unique_ptr<Verified> verified_;
};

}  // namespace tokenspeed::metrics
