// basic_auth.hpp — checks a basic-auth user name and password against the
// bcrypt hashes of the web configuration (basic_auth_users), through
// libxcrypt's crypt_r. An unknown user costs what a known one does. Caches
// nothing and keeps no password; each call is one bcrypt computation (tens of
// milliseconds at cost 10), so it is never called on a thread that must not
// wait.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace tokenspeed::metrics {

// Immutable after construction; verify may be called from any number of
// threads at once (each call has its own crypt_r state).
class BasicAuthVerifier {
 public:
  // users: user name to bcrypt hash, as WebConfig::basic_auth_users (each
  // hash already checked by bcrypt_hash_cost; one that is not never matches).
  explicit BasicAuthVerifier(std::map<std::string, std::string> users);

  // True when users is not empty: requests must authenticate.
  bool enabled() const noexcept { return !users_.empty(); }

  // True when user is known and password hashes to its hash. An unknown user
  // is checked against a fixed hash of the highest cost among the users, so
  // the answer takes as long as for the slowest known one. A password holding
  // a NUL byte never matches (crypt would see only its start).
  bool verify(std::string_view user, std::string_view password) const;

 private:
  std::map<std::string, std::string, std::less<>> users_;
  std::string unknown_user_hash_;
};

}  // namespace tokenspeed::metrics
