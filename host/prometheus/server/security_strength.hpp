// security_strength.hpp — what a web configuration protects the /metrics
// endpoint with, in the terms a reload may never lower (TLS, client
// certificate verification and requirement, client_allowed_sans, basic
// authentication), and the order between two of them. Pure functions: no
// file, no OpenSSL, never a secret.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "prometheus/server/web_config.hpp"

namespace tokenspeed::metrics {

// Without TLS the client certificate fields mean nothing and are held at
// their weakest (no_client_cert, no SANs), so that two configurations without
// TLS compare on basic authentication alone.
struct SecurityStrength {
  bool tls = false;
  ClientAuthType client_auth_type = ClientAuthType::no_client_cert;
  bool client_allowed_sans = false;  // a client certificate must carry a listed SAN
  bool basic_auth = false;           // at least one basic-auth user
};

// The strength of a parsed configuration (an empty one: none at all).
SecurityStrength security_strength_of(const WebConfig& config) noexcept;

// The same for the parts of a configuration, normalized as above.
SecurityStrength make_security_strength(bool tls, ClientAuthType client_auth_type,
                                        bool client_allowed_sans, bool basic_auth) noexcept;

// True when the client certificate policy verifies a certificate presented
// (VerifyClientCertIfGiven, RequireAndVerifyClientCert).
bool verifies_client_certificates(ClientAuthType type) noexcept;
// True when it refuses a handshake without one (RequireAnyClientCert,
// RequireAndVerifyClientCert).
bool requires_client_certificates(ClientAuthType type) noexcept;

// What going from before to after removes, in this order: "TLS", "client
// certificate verification", "required client certificates",
// "client_allowed_sans", "basic authentication" (with TLS removed, the
// client certificate items are not named again). Empty: after is at least
// as strong in every respect. The order is a product of per-respect orders,
// so it is transitive: no chain of reloads each allowed can lower security.
// RequestClientCert asks for a certificate and checks nothing: as strong as
// NoClientCert.
std::vector<std::string_view> security_weakened(const SecurityStrength& before,
                                                const SecurityStrength& after);

// The same joined with ", " ("TLS, basic authentication"); "" when nothing.
std::string security_weakened_text(const SecurityStrength& before, const SecurityStrength& after);

}  // namespace tokenspeed::metrics
