// basic_auth.cpp — bcrypt verification with crypt_rn, the unknown user's
// stand-in hash, a constant-time comparison and the salted digests of the
// pairs that verified.
#include "prometheus/server/basic_auth.hpp"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <string.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "prometheus/server/web_config.hpp"

namespace tokenspeed::metrics {
namespace {

// A syntactically valid bcrypt hash that no password is known to produce, of
// cost 10 (BasicAuthVerifier::kUnknownUserCost).
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

// crypt_rn's state (about 32 KiB) with the password-derived bytes wiped after use.
struct CryptState {
  CryptState() : data(std::make_unique<crypt_data>()) {}
  ~CryptState() { explicit_bzero(data.get(), sizeof(crypt_data)); }
  CryptState(const CryptState&) = delete;
  CryptState& operator=(const CryptState&) = delete;
  std::unique_ptr<crypt_data> data;
};

// The hash as "$2b$": Go's bcrypt, which exporter-toolkit verifies with,
// computes every minor version as $2b$ (crypt(3)'s $2x$ would reproduce an
// old bug on 8-bit passwords, and its $2a$ a safeguard against it), so the
// same password logs in here as there.
std::string as_2b(const std::string& hash) {
  const std::size_t cost_at = hash[2] == '$' ? 2 : 3;
  return "$2b" + hash.substr(cost_at);
}

bool bcrypt_matches(const std::string& password, const std::string& hash) {
  CryptState state;
  const std::string setting = as_2b(hash);
  // crypt_rn, not crypt_r: the sanitizers' runtimes define crypt_r
  // themselves, so a sanitized executable whose only use of libxcrypt is
  // crypt_r drops the library (--as-needed) and calls a null real function.
  const char* result = crypt_rn(password.c_str(), setting.c_str(), state.data.get(),
                                static_cast<int>(sizeof(crypt_data)));
  // A failure is NULL or a failure token starting with '*', never a hash.
  if (result == nullptr || result[0] != '$') return false;
  return equal_in_constant_time(result, setting);
}

}  // namespace

BasicAuthVerifier::BasicAuthVerifier(std::map<std::string, std::string> users)
    : users_(users.begin(), users.end()),
      unknown_user_hash_(kUnknownUserHash),
      verified_(std::make_unique<Verified>()) {
  if (RAND_bytes(verified_->salt.data(), static_cast<int>(verified_->salt.size())) != 1)
    throw std::runtime_error("no random bytes for the credentials' salt");
}

int BasicAuthVerifier::unknown_user_cost() const noexcept {
  return bcrypt_hash_cost(unknown_user_hash_).value_or(0);
}

BasicAuthVerifier::Digest BasicAuthVerifier::digest_of(std::string_view user,
                                                       std::string_view password) const {
  Digest digest{};
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  const unsigned char separator = 0;
  const bool done =
      context != nullptr && EVP_DigestInit_ex(context, EVP_sha256(), nullptr) == 1 &&
      EVP_DigestUpdate(context, verified_->salt.data(), verified_->salt.size()) == 1 &&
      EVP_DigestUpdate(context, user.data(), user.size()) == 1 &&
      EVP_DigestUpdate(context, &separator, 1) == 1 &&
      EVP_DigestUpdate(context, password.data(), password.size()) == 1 &&
      EVP_DigestFinal_ex(context, digest.data(), nullptr) == 1;
  EVP_MD_CTX_free(context);
  if (!done) throw std::runtime_error("SHA-256 failed");
  return digest;
}

bool BasicAuthVerifier::verified_before(std::string_view user, std::string_view password) const {
  // The digest is computed for every user, so that an unknown one costs the
  // same; only a known one's can be among the verified.
  const Digest digest = digest_of(user, password);
  if (users_.find(user) == users_.end() || password.find('\0') != std::string_view::npos)
    return false;
  MutexLock lock(verified_->mutex);
  const std::size_t remembered = std::min(verified_->count, kRemembered);
  for (std::size_t i = 0; i < remembered; ++i) {
    if (CRYPTO_memcmp(verified_->digests[i].data(), digest.data(), digest.size()) == 0) return true;
  }
  return false;
}

bool BasicAuthVerifier::verify(std::string_view user, std::string_view password) const {
  if (verified_before(user, password)) return true;
  const auto found = users_.find(user);
  const bool known = found != users_.end();
  std::string secret(password);
  const bool matches = bcrypt_matches(secret, known ? found->second : unknown_user_hash_);
  explicit_bzero(secret.data(), secret.size());
  const bool verified = known && matches && password.find('\0') == std::string_view::npos;
  if (verified) {
    const Digest digest = digest_of(user, password);
    MutexLock lock(verified_->mutex);
    verified_->digests[verified_->count % kRemembered] = digest;
    ++verified_->count;
  }
  return verified;
}

}  // namespace tokenspeed::metrics
