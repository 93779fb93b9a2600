// security_strength.cpp — the order of web configurations by what they
// protect the endpoint with; what a reload would remove. Pure: no I/O.
#include "prometheus/server/security_strength.hpp"

#include <string>

namespace tokenspeed::metrics {

bool verifies_client_certificates(ClientAuthType type) noexcept {
  return type == ClientAuthType::verify_client_cert_if_given ||
         type == ClientAuthType::require_and_verify_client_cert;
}

bool requires_client_certificates(ClientAuthType type) noexcept {
  return type == ClientAuthType::require_any_client_cert ||
         type == ClientAuthType::require_and_verify_client_cert;
}

SecurityStrength make_security_strength(bool tls, ClientAuthType client_auth_type,
                                        bool client_allowed_sans, bool basic_auth) noexcept {
  SecurityStrength strength;
  strength.tls = tls;
  strength.basic_auth = basic_auth;
  if (tls) {
    strength.client_auth_type = client_auth_type;
    strength.client_allowed_sans = client_allowed_sans;
  }
  return strength;
}

SecurityStrength security_strength_of(const WebConfig& config) noexcept {
  return make_security_strength(config.tls_enabled, config.tls.client_auth_type,
                                config.tls.client_allowed_sans.has_value(),
                                !config.basic_auth_users.empty());
}

std::vector<std::string_view> security_weakened(const SecurityStrength& before,
                                                const SecurityStrength& after) {
  std::vector<std::string_view> removed;
  if (before.tls && !after.tls) {
    removed.emplace_back("TLS");
  } else if (before.tls) {
    if (verifies_client_certificates(before.client_auth_type) &&
        !verifies_client_certificates(after.client_auth_type))
      removed.emplace_back("client certificate verification");
    if (requires_client_certificates(before.client_auth_type) &&
        !requires_client_certificates(after.client_auth_type))
      removed.emplace_back("required client certificates");
    if (before.client_allowed_sans && !after.client_allowed_sans)
      removed.emplace_back("client_allowed_sans");
  }
  if (before.basic_auth && !after.basic_auth) removed.emplace_back("basic authentication");
  return removed;
}

std::string security_weakened_text(const SecurityStrength& before, const SecurityStrength& after) {
  std::string text;
  for (const std::string_view what : security_weakened(before, after)) {
    if (!text.empty()) text += ", ";
    text += what;
  }
  return text;
}

}  // namespace tokenspeed::metrics
