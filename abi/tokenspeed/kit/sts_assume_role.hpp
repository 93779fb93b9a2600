/*
 * tokenspeed/kit/sts_assume_role.hpp — AWS Signature V4 with the temporary
 * credentials of a role (sigv4.role_arn): the credentials SigV4Signer finds
 * (files, AWS_* environment, a profile) sign an STS AssumeRole call; its
 * answer's credentials, cached, sign the requests, with X-Amz-Security-Token,
 * and are renewed before they expire (5 minutes before, or at half their
 * life when that is shorter). The call is made on the request's own thread,
 * within its deadline, through the kit's HttpClient.
 *
 *   kit::AssumeRoleOptions role;
 *   role.role_arn = "arn:aws:iam::123456789012:role/metrics-writer";
 *   kit::AssumeRoleSigner signer(sigv4, role);   // sigv4: kit::SigV4Options
 *   std::string problem = signer.sign("POST", url, body, headers, deadline, stop);
 *
 * A refusal of STS, an STS out of reach or a malformed answer is the
 * request's failure (its message names the role, STS's URL and STS's code
 * and message), never a secret. Header-only C++17; libcurl and libcrypto.
 */
#ifndef TOKENSPEED_KIT_STS_ASSUME_ROLE_HPP
#define TOKENSPEED_KIT_STS_ASSUME_ROLE_HPP

#include <tokenspeed/kit/http_client.hpp>
#include <tokenspeed/kit/http_response.hpp>
#include <tokenspeed/kit/sigv4.hpp>
#include <tokenspeed/kit/sts_response.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenspeed::metrics::kit {

/* The RoleSessionName when the settings give none: CloudTrail shows it. */
inline constexpr std::string_view kDefaultRoleSessionName = "tokenspeed-metrics";
/* DurationSeconds asked for: STS's default, and the longest a role assumed
 * with another role's credentials (role chaining) may have. */
inline constexpr std::chrono::seconds kAssumeRoleDuration{3600};
/* How long before Expiration the credentials are renewed (at most). */
inline constexpr std::chrono::minutes kAssumeRoleRenewalMargin{5};

/* What the sigv4 settings say about the role. */
struct AssumeRoleOptions {
  std::string role_arn;  // arn:aws:iam::123456789012:role/NAME
  std::string role_session_name{kDefaultRoleSessionName};
  std::string external_id;   // "": none sent
  std::string sts_endpoint;  // "": default_sts_endpoint(region)
  HttpTlsOptions tls;        // of the STS call (the receiver's CA, version, verification)
};

/* STS's regional endpoint: https://sts.<region>.amazonaws.com/ (.com.cn in
 * China's regions). */
inline std::string default_sts_endpoint(std::string_view region) {
  const bool china = region.rfind("cn-", 0) == 0;
  return "https://sts." + std::string(region) + (china ? ".amazonaws.com.cn/" : ".amazonaws.com/");
}

namespace detail {

inline bool role_name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("+=,.@_-").find(c) != std::string_view::npos;
}

}  // namespace detail

/* An IAM role's ARN: "arn:" a partition ("aws", "aws-cn", "aws-us-gov",
 * ...) ":iam::" a 12-digit account ":role/" then the role's name (1 to 64
 * of letters, digits and +=,.@_-), maybe after a path ("role/path/NAME"). */
inline bool is_role_arn(std::string_view arn) noexcept {
  if (arn.rfind("arn:aws", 0) != 0) return false;
  arn.remove_prefix(7);
  while (!arn.empty() && arn.front() != ':') {
    const char c = arn.front();
    if (!((c >= 'a' && c <= 'z') || c == '-')) return false;
    arn.remove_prefix(1);
  }
  if (arn.rfind(":iam::", 0) != 0) return false;
  arn.remove_prefix(6);
  if (arn.size() < 12) return false;
  for (std::size_t i = 0; i < 12; ++i) {
    if (arn[i] < '0' || arn[i] > '9') return false;
  }
  arn.remove_prefix(12);
  if (arn.rfind(":role/", 0) != 0) return false;
  arn.remove_prefix(6);
  const std::size_t slash = arn.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? arn : arn.substr(slash + 1);
  if (name.empty() || name.size() > 64) return false;
  for (const char c : arn) {
    if (c != '/' && !detail::role_name_char(c)) return false;
  }
  return arn.find("//") == std::string_view::npos && arn.front() != '/';
}

/* A RoleSessionName STS takes: 2 to 64 of letters, digits and +=,.@_-. */
inline bool is_role_session_name(std::string_view name) noexcept {
  if (name.size() < 2 || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), detail::role_name_char);
}

/* An ExternalId STS takes: 2 to 1224 of letters, digits and +=,.@:/_-. */
inline bool is_external_id(std::string_view id) noexcept {
  if (id.size() < 2 || id.size() > 1224) return false;
  return std::all_of(id.begin(), id.end(),
                     [](char c) { return c == ':' || c == '/' || detail::role_name_char(c); });
}

/* The form body of the AssumeRole call. */
inline std::string assume_role_request_body(const AssumeRoleOptions& role,
                                            std::chrono::seconds duration = kAssumeRoleDuration) {
  std::string body =
      "Action=AssumeRole&Version=2011-06-15&RoleArn=" + detail::sigv4_encode(role.role_arn) +
      "&RoleSessionName=" + detail::sigv4_encode(role.role_session_name) +
      "&DurationSeconds=" + std::to_string(duration.count());
  if (!role.external_id.empty()) body += "&ExternalId=" + detail::sigv4_encode(role.external_id);
  return body;
}

/* When credentials received at received and expiring at expiration are
 * renewed: kAssumeRoleRenewalMargin before they expire, or halfway through
 * their life when that comes later (short-lived credentials). */
inline std::chrono::system_clock::time_point assume_role_renewal_time(
    std::chrono::system_clock::time_point received,
    std::chrono::system_clock::time_point expiration) {
  const auto life = expiration - received;
  const auto margin =
      std::min<std::chrono::system_clock::duration>(kAssumeRoleRenewalMargin, life / 2);
  return expiration - margin;
}

/* Signs requests with the temporary credentials of a role, assumed with the
 * credentials of SigV4Options (the service "sts" for that call), cached and
 * renewed at assume_role_renewal_time. A renewal that fails while the cached
 * credentials are still valid uses them (the next request tries again).
 * Threading: any thread; one STS call at a time. */
class AssumeRoleSigner {
 public:
  AssumeRoleSigner(SigV4Options sigv4, AssumeRoleOptions role,
                   SigV4Environment environment = SigV4Environment::from_process())
      : receiver_(std::move(sigv4)),
        role_(std::move(role)),
        endpoint_(role_.sts_endpoint.empty() ? default_sts_endpoint(receiver_.region)
                                             : role_.sts_endpoint),
        sts_(sts_client_options(receiver_, role_, endpoint_, std::move(environment))) {}

  AssumeRoleSigner(const AssumeRoleSigner&) = delete;
  AssumeRoleSigner& operator=(const AssumeRoleSigner&) = delete;

  const std::string& sts_endpoint() const noexcept { return endpoint_; }

  /* Signs a request to url with the role's credentials
   * (sigv4_sign_request_headers), assuming the role first when they are
   * missing or due for renewal, within deadline and until *stop (may be
   * null). Returns "" or why not (nothing added). */
  std::string sign(std::string_view method, std::string_view url, std::string_view body,
                   std::vector<std::string>& headers, HttpClient::Clock::time_point deadline,
                   const std::atomic<bool>* stop,
                   std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) {
    SigV4Credentials credentials;
    const std::string problem = this->credentials(credentials, deadline, stop, now);
    if (!problem.empty()) return problem;
    sigv4_sign_request_headers(credentials, receiver_.region, receiver_.service, method, url, body,
                               headers, now);
    return {};
  }

  /* The role's credentials at now into out: the cached ones, or new ones
   * from STS when there are none or they are due for renewal. Returns "" or
   * why not. */
  std::string credentials(SigV4Credentials& out, HttpClient::Clock::time_point deadline,
                          const std::atomic<bool>* stop,
                          std::chrono::system_clock::time_point now) {
    out.forget();
    std::lock_guard lock(mutex_);
    const bool valid = !cached_.credentials.access_key_id.empty() && now < cached_.expiration;
    if (valid && now < renew_at_) {
      out = cached_.credentials;
      return {};
    }
    // Renewing valid credentials leaves the request half of its time.
    auto bound = deadline;
    if (valid) {
      const auto start = HttpClient::Clock::now();
      if (deadline > start) bound = start + (deadline - start) / 2;
    }
    StsTemporaryCredentials fresh;
    std::string problem = assume_role(fresh, bound, stop);
    if (problem.empty() && !(now < fresh.expiration))
      problem = failure("its answer's credentials have expired already (is the clock right?)");
    if (problem.empty()) {
      cached_.credentials.forget();
      cached_ = fresh;
      renew_at_ = assume_role_renewal_time(now, fresh.expiration);
      ++assumed_;
    } else if (!valid) {
      return problem;
    }
    out = cached_.credentials;
    return {};
  }

  /* How many times the role was assumed (for the tests). */
  uint64_t assumed() const {
    std::lock_guard lock(mutex_);
    return assumed_;
  }

 private:
  static HttpClientOptions sts_client_options(const SigV4Options& receiver,
                                              const AssumeRoleOptions& role,
                                              const std::string& endpoint,
                                              SigV4Environment environment) {
    SigV4Options base = receiver;
    base.service = "sts";
    auto signer = std::make_shared<const SigV4Signer>(std::move(base), std::move(environment));
    HttpClientOptions options;
    options.url = endpoint;
    options.tls = role.tls;
    options.sign = [signer](std::string_view method, std::string_view url, std::string_view body,
                            std::vector<std::string>& headers) {
      return signer->sign(method, url, body, headers);
    };
    return options;
  }

  std::string failure(std::string_view why) const {
    return "'sigv4.role_arn': STS AssumeRole of " + role_.role_arn + " at " + endpoint_ + ": " +
           std::string(why);
  }

  // One AssumeRole call; returns "" or why it failed.
  std::string assume_role(StsTemporaryCredentials& out, HttpClient::Clock::time_point deadline,
                          const std::atomic<bool>* stop) {
    const std::vector<std::string> form = {
        "Content-Type: application/x-www-form-urlencoded; charset=utf-8"};
    HttpResponse response = sts_.post(assume_role_request_body(role_), form, deadline, stop);
    std::string problem;
    if (response.status == 0) {
      problem = failure(response.stopped ? "interrupted by close" : response.error);
    } else if (response.status < 200 || response.status >= 300) {
      std::string said = sts_error_summary(response.body);
      if (said.empty()) said = response_snippet(response.body);
      problem =
          failure("HTTP " + std::to_string(response.status) + (said.empty() ? "" : ": ") + said);
    } else {
      const std::string why = parse_assume_role_response(response.body, out);
      if (!why.empty()) problem = failure("a malformed answer: " + why);
    }
    detail::wipe(response.body);
    return problem;
  }

  const SigV4Options receiver_;  // region and service of the requests signed
  const AssumeRoleOptions role_;
  const std::string endpoint_;
  mutable std::mutex mutex_;
  HttpClient sts_;                  // under mutex_: one call at a time
  StsTemporaryCredentials cached_;  // under mutex_
  std::chrono::system_clock::time_point renew_at_{};
  uint64_t assumed_ = 0;
};

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_STS_ASSUME_ROLE_HPP
