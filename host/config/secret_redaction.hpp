// secret_redaction.hpp — which settings of an output are secrets (the rows of
// its settings description marked "secret": true, at any depth of "fields"),
// and the copy of a configuration in which each secret value reads
// "<secret>". Everything the host shows of an output's settings goes through
// it. Startup only; never changes what a plugin receives.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

namespace tokenspeed::metrics {

// What a secret value is shown as (Prometheus's convention).
inline constexpr const char* kRedactedSecret = "<secret>";

// One non-empty secret value a configuration holds.
struct HeldSecret {
  std::string key_path;      // "token", "headers.api-key", "basic_auth.password"
  std::string file_setting;  // a setting beside it that reads it from a file
                             // ("header_files", "basic_auth.password_file"), or ""
};

// The secret rows of one reporter's settings description (the descriptor's
// `settings` text: a JSON array of rows {"key", "type", ..., "secret": true,
// "fields": [rows]}). A value under a secret row is secret as a whole: every
// value of a map ("object of strings"; its names are not), every field of an
// object, every element of an array. A null or an empty string is no secret
// and is shown as is. Keys the description does not name are shown as is.
// A description that is absent or not a JSON array of objects names no
// secret. Threading: immutable after construction; any thread.
class SecretSettings {
 public:
  SecretSettings() = default;  // names no secret
  explicit SecretSettings(std::string_view description);

  // True when the description marks no row secret.
  bool empty() const noexcept { return !any_secret_; }

  // config with every secret value replaced by "<secret>".
  boost::json::object redact(const boost::json::object& config) const;

  // The secret values config holds, in the order of its keys (what would be
  // redacted). Key paths are rendered as "a.b[2].c"; long keys are cut.
  std::vector<HeldSecret> held(const boost::json::object& config) const;

 private:
  struct Row {
    bool secret = false;
    bool has_fields = false;
    std::map<std::string, Row, std::less<>> fields;
  };
  using Rows = std::map<std::string, Row, std::less<>>;

  static void read_rows(const boost::json::array& rows, Rows& out, bool& any_secret);
  static void walk(const Rows& rows, boost::json::object& object, std::vector<std::string>& path,
                   std::vector<HeldSecret>* found);
  static void walk_value(const Row& row, const Rows& siblings, const std::string& key,
                         boost::json::value& value, std::vector<std::string>& path,
                         std::vector<HeldSecret>* found);

  Rows rows_;
  bool any_secret_ = false;
};

// A settings description (parsed) with the default of every secret row
// shown as "<secret>" (a non-empty default), at any depth of "fields": what
// `tokenspeed-metrics plugins` prints. Anything that is not a JSON array of
// objects is returned unchanged.
boost::json::value redact_settings_description(const boost::json::value& description);

}  // namespace tokenspeed::metrics
