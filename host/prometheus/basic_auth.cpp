// basic_auth.cpp — bcrypt verification with crypt_r, the unknown user's
// stand-in hash and a constant-time comparison. Never caches a result.
#include "prometheus/basic_auth.hpp"

#include <crypt.h>
#include <string.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "config/web_config.hpp"

namespace tokenspeed::metrics {
namespace {

// A syntactically valid bcrypt hash that no password is known to produce;
// its cost is replaced by the users' highest.
constexpr std::string_view kUnknownUserHash =
    "$2b$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";

bool equal_in_constant_time(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char difference = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    difference |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return difference == 0;
}

// crypt_r's state (about 32 KiB) with the password-derived bytes wiped after use.
struct CryptState {
  CryptState() : data(std::make_unique<crypt_data>()) {}
  ~CryptState() { explicit_bzero(data.get(), sizeof(crypt_data)); }
  CryptState(const CryptState&) = delete;
  CryptState& operator=(const CryptState&) = delete;
  std::unique_ptr<crypt_data> data;
};

bool bcrypt_matches(const std::string& password, const std::string& hash) {
  CryptState state;
  const char* result = crypt_r(password.c_str(), hash.c_str(), state.data.get());
  // A failure is NULL or a failure token starting with '*', never a hash.
  if (result == nullptr || result[0] != '$') return false;
  return equal_in_constant_time(result, hash);
}

}  // namespace

BasicAuthVerifier::BasicAuthVerifier(std::map<std::string, std::string> users)
    : users_(users.begin(), users.end()), unknown_user_hash_(kUnknownUserHash) {
  int cost = 0;
  for (const auto& [user, hash] : users_) cost = std::max(cost, bcrypt_hash_cost(hash).value_or(0));
  if (cost == 0) cost = 10;
  unknown_user_hash_[4] = static_cast<char>('0' + cost / 10);
  unknown_user_hash_[5] = static_cast<char>('0' + cost % 10);
}

bool BasicAuthVerifier::verify(std::string_view user, std::string_view password) const {
  const auto found = users_.find(user);
  const bool known = found != users_.end();
  std::string secret(password);
  const bool matches = bcrypt_matches(secret, known ? found->second : unknown_user_hash_);
  explicit_bzero(secret.data(), secret.size());
  return known && matches && password.find('\0') == std::string_view::npos;
}

}  // namespace tokenspeed::metrics
