// security_strength_test.cpp — unit tests of host/prometheus/server/security_strength:
// every combination of TLS, client certificate policy, client_allowed_sans
// and basic-auth users against every other, checked against the meaning of
// Go's client certificate policies written out here; the order is reflexive
// and transitive (no chain of allowed reloads lowers security), and a
// parsed configuration's strength.
#include <catch2/catch.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "prometheus/server/security_strength.hpp"
#include "prometheus/server/web_config.hpp"

using namespace tokenspeed::metrics;

namespace {

// Go's crypto/tls ClientAuthType, as its documentation states each policy:
// whether a presented certificate is verified, whether one is required.
struct Policy {
  ClientAuthType type;
  bool verifies;
  bool requires_one;
};
constexpr Policy kPolicies[] = {
    {ClientAuthType::no_client_cert, false, false},
    {ClientAuthType::request_client_cert, false, false},
    {ClientAuthType::require_any_client_cert, false, true},
    {ClientAuthType::verify_client_cert_if_given, true, false},
    {ClientAuthType::require_and_verify_client_cert, true, true},
};

const Policy& policy_of(ClientAuthType type) {
  for (const Policy& policy : kPolicies)
    if (policy.type == type) return policy;
  FAIL("no policy");
  throw;
}

// Every normalized strength: 2 (TLS) x 5 (policy) x 2 (SANs) x 2 (users)
// raw combinations, of which those without TLS collapse to two.
std::vector<SecurityStrength> every_strength() {
  std::vector<SecurityStrength> all;
  for (const bool tls : {false, true})
    for (const Policy& policy : kPolicies)
      for (const bool sans : {false, true})
        for (const bool users : {false, true})
          all.push_back(make_security_strength(tls, policy.type, sans, users));
  return all;
}

std::string describe(const SecurityStrength& s) {
  return std::string(s.tls ? "TLS" : "plain") + "/" +
         std::string(client_auth_type_name(s.client_auth_type)) +
         (s.client_allowed_sans ? "/SANs" : "") + (s.basic_auth ? "/users" : "");
}

// What is removed, from the policy table rather than the code under test.
std::vector<std::string_view> expected_removed(const SecurityStrength& a,
                                               const SecurityStrength& b) {
  std::vector<std::string_view> removed;
  if (a.tls && !b.tls) removed.emplace_back("TLS");
  if (a.tls && b.tls) {
    const Policy& before = policy_of(a.client_auth_type);
    const Policy& after = policy_of(b.client_auth_type);
    if (before.verifies && !after.verifies) removed.emplace_back("client certificate verification");
    if (before.requires_one && !after.requires_one)
      removed.emplace_back("required client certificates");
    if (a.client_allowed_sans && !b.client_allowed_sans)
      removed.emplace_back("client_allowed_sans");
  }
  if (a.basic_auth && !b.basic_auth) removed.emplace_back("basic authentication");
  return removed;
}

}  // namespace

TEST_CASE("every pair of configurations: what a reload removes is exactly what the policies say") {
  const auto all = every_strength();
  REQUIRE(all.size() == 40);
  for (const SecurityStrength& a : all) {
    for (const SecurityStrength& b : all) {
      INFO(describe(a) << " -> " << describe(b));
      CHECK(security_weakened(a, b) == expected_removed(a, b));
    }
  }
}

TEST_CASE("security never weakens from a configuration to itself or to a stronger one") {
  const auto all = every_strength();
  for (const SecurityStrength& a : all) {
    INFO(describe(a));
    CHECK(security_weakened(a, a).empty());
    // Adding TLS, users or SANs, or a policy that verifies and requires more.
    for (const SecurityStrength& b : all) {
      const Policy& pa = policy_of(a.client_auth_type);
      const Policy& pb = policy_of(b.client_auth_type);
      const bool raises =
          (!a.tls || b.tls) && (!a.basic_auth || b.basic_auth) &&
          (!a.tls || ((!pa.verifies || pb.verifies) && (!pa.requires_one || pb.requires_one) &&
                      (!a.client_allowed_sans || b.client_allowed_sans)));
      INFO(describe(b));
      CHECK(security_weakened(a, b).empty() == raises);
    }
  }
}

TEST_CASE("the order is transitive: no chain of allowed reloads lowers security") {
  const auto all = every_strength();
  std::size_t chains = 0;
  for (const SecurityStrength& a : all)
    for (const SecurityStrength& b : all) {
      if (!security_weakened(a, b).empty()) continue;
      for (const SecurityStrength& c : all) {
        if (!security_weakened(b, c).empty()) continue;
        ++chains;
        INFO(describe(a) << " -> " << describe(b) << " -> " << describe(c));
        CHECK(security_weakened(a, c).empty());
      }
    }
  CHECK(chains > 40);
}

TEST_CASE("the combinations the issue names are refused, with what they would remove") {
  const auto tls_users = make_security_strength(true, ClientAuthType::no_client_cert, false, true);
  const auto nothing = make_security_strength(false, ClientAuthType::no_client_cert, false, false);
  const auto tls_only = make_security_strength(true, ClientAuthType::no_client_cert, false, false);
  const auto users_only =
      make_security_strength(false, ClientAuthType::no_client_cert, false, true);
  const auto verify = [](ClientAuthType type) {
    return make_security_strength(true, type, true, false);
  };
  // Cut before basic_auth_users; cut before tls_server_config; '{}'.
  CHECK(security_weakened_text(tls_users, tls_only) == "basic authentication");
  CHECK(security_weakened_text(tls_users, users_only) == "TLS");
  CHECK(security_weakened_text(tls_users, nothing) == "TLS, basic authentication");
  CHECK(security_weakened_text(verify(ClientAuthType::require_and_verify_client_cert),
                               verify(ClientAuthType::require_any_client_cert)) ==
        "client certificate verification");
  CHECK(security_weakened_text(verify(ClientAuthType::require_and_verify_client_cert),
                               verify(ClientAuthType::verify_client_cert_if_given)) ==
        "required client certificates");
  CHECK(security_weakened_text(verify(ClientAuthType::require_and_verify_client_cert), tls_only) ==
        "client certificate verification, required client certificates, client_allowed_sans");
  // RequestClientCert checks nothing: the same as NoClientCert, both ways.
  CHECK(security_weakened_text(verify(ClientAuthType::request_client_cert),
                               verify(ClientAuthType::no_client_cert))
            .empty());
  CHECK(security_weakened_text(verify(ClientAuthType::no_client_cert),
                               verify(ClientAuthType::request_client_cert))
            .empty());
  // Raising is never lowering.
  CHECK(security_weakened_text(nothing, tls_users).empty());
}

TEST_CASE("a parsed configuration's strength; without TLS the certificate fields are ignored") {
  WebConfig config;
  CHECK_FALSE(security_strength_of(config).tls);
  config.tls.client_auth_type = ClientAuthType::require_and_verify_client_cert;
  config.tls.client_allowed_sans = {"scraper.test"};
  const SecurityStrength plain = security_strength_of(config);
  CHECK(plain.client_auth_type == ClientAuthType::no_client_cert);
  CHECK_FALSE(plain.client_allowed_sans);
  config.tls_enabled = true;
  config.basic_auth_users["alice"] = "$2b$04$hash";
  const SecurityStrength full = security_strength_of(config);
  CHECK(full.tls);
  CHECK(full.client_auth_type == ClientAuthType::require_and_verify_client_cert);
  CHECK(full.client_allowed_sans);
  CHECK(full.basic_auth);
  CHECK(verifies_client_certificates(full.client_auth_type));
  CHECK(requires_client_certificates(full.client_auth_type));
}
