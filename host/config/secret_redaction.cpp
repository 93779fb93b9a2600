// secret_redaction.cpp — reading the secret rows of a settings description
// and redacting a configuration by them. Startup only; never quotes a secret.
#include "config/secret_redaction.hpp"

#include <array>
#include <utility>

#include <boost/json/array.hpp>
#include <boost/json/error.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "core/input_excerpt.hpp"
#include "core/strict_json.hpp"

namespace tokenspeed::metrics {
namespace {

bool marked_secret(const boost::json::object& row) {
  const boost::json::value* secret = row.if_contains("secret");
  return secret != nullptr && secret->is_bool() && secret->get_bool();
}

const boost::json::array* fields_of(const boost::json::object& row) {
  const boost::json::value* fields = row.if_contains("fields");
  return fields != nullptr && fields->is_array() ? &fields->get_array() : nullptr;
}

// Replaces every value under a secret row by "<secret>" (null and "" stay:
// nothing is set), recording the key path of each when found is not null.
void hide(boost::json::value& value, std::vector<std::string>& path,
          const std::string& file_setting, std::vector<HeldSecret>* found) {
  switch (value.kind()) {
    case boost::json::kind::null:
      return;
    case boost::json::kind::string:
      if (value.get_string().empty()) return;
      break;
    case boost::json::kind::object:
      for (auto& member : value.get_object()) {
        path.push_back(input_excerpt(member.key()));
        hide(member.value(), path, file_setting, found);
        path.pop_back();
      }
      return;
    case boost::json::kind::array: {
      std::size_t index = 0;
      for (boost::json::value& element : value.get_array()) {
        path.push_back("[" + std::to_string(index++) + "]");
        hide(element, path, file_setting, found);
        path.pop_back();
      }
      return;
    }
    default:
      break;
  }
  value = kRedactedSecret;
  if (found != nullptr) found->push_back(HeldSecret{render_key_path(path), file_setting});
}

}  // namespace

SecretSettings::SecretSettings(std::string_view description) {
  if (description.empty()) return;
  boost::json::error_code error;
  const boost::json::value parsed = boost::json::parse(description, error);
  if (error || !parsed.is_array()) return;
  read_rows(parsed.get_array(), rows_, any_secret_);
}

void SecretSettings::read_rows(const boost::json::array& rows, Rows& out, bool& any_secret) {
  for (const boost::json::value& entry : rows) {
    if (!entry.is_object()) continue;
    const boost::json::object& row = entry.get_object();
    const boost::json::value* key = row.if_contains("key");
    if (key == nullptr || !key->is_string()) continue;
    Row& read = out[std::string(key->get_string())];
    read.secret = marked_secret(row);
    any_secret = any_secret || read.secret;
    if (const boost::json::array* fields = fields_of(row); fields != nullptr) {
      read.has_fields = true;
      read_rows(*fields, read.fields, any_secret);
    }
  }
}

void SecretSettings::walk(const Rows& rows, boost::json::object& object,
                          std::vector<std::string>& path, std::vector<HeldSecret>* found) {
  for (auto& member : object) {
    const auto row = rows.find(std::string_view(member.key()));
    if (row == rows.end()) continue;  // not described: shown as given
    path.push_back(input_excerpt(member.key()));
    walk_value(row->second, rows, row->first, member.value(), path, found);
    path.pop_back();
  }
}

void SecretSettings::walk_value(const Row& row, const Rows& siblings, const std::string& key,
                                boost::json::value& value, std::vector<std::string>& path,
                                std::vector<HeldSecret>* found) {
  if (row.secret) {
    // A setting beside it that reads the same secret from a file: "password"
    // and "password_file", "headers" and "header_files".
    std::string file_setting;
    const std::string stem =
        key.size() > 1 && key.back() == 's' ? key.substr(0, key.size() - 1) : key;
    for (const std::string& candidate : std::array<std::string, 4>{
             key + "_file", key + "_files", stem + "_file", stem + "_files"}) {
      if (candidate != key && siblings.count(candidate) != 0) {
        std::vector<std::string> beside(path.begin(), path.end() - 1);
        beside.push_back(candidate);
        file_setting = render_key_path(beside);
        break;
      }
    }
    hide(value, path, file_setting, found);
    return;
  }
  if (!row.has_fields) return;
  if (value.is_object()) {
    walk(row.fields, value.get_object(), path, found);
  } else if (value.is_array()) {
    std::size_t index = 0;
    for (boost::json::value& element : value.get_array()) {
      path.push_back("[" + std::to_string(index++) + "]");
      if (element.is_object()) walk(row.fields, element.get_object(), path, found);
      path.pop_back();
    }
  }
}

boost::json::object SecretSettings::redact(const boost::json::object& config) const {
  boost::json::object copy = config;
  if (!any_secret_) return copy;
  std::vector<std::string> path;
  walk(rows_, copy, path, nullptr);
  return copy;
}

std::vector<HeldSecret> SecretSettings::held(const boost::json::object& config) const {
  std::vector<HeldSecret> found;
  if (!any_secret_) return found;
  boost::json::object copy = config;
  std::vector<std::string> path;
  walk(rows_, copy, path, &found);
  return found;
}

boost::json::value redact_settings_description(const boost::json::value& description) {
  if (!description.is_array()) return description;
  boost::json::value copy = description;
  for (boost::json::value& entry : copy.get_array()) {
    if (!entry.is_object()) continue;
    boost::json::object& row = entry.get_object();
    const boost::json::array* fields = fields_of(row);
    if (boost::json::value* fallback = row.if_contains("default"); fallback != nullptr) {
      std::vector<std::string> path;
      if (marked_secret(row)) {
        hide(*fallback, path, {}, nullptr);
      } else if (fields != nullptr && fallback->is_object()) {
        // The object's default, read by its own rows.
        const SecretSettings nested(boost::json::serialize(*fields));
        *fallback = nested.redact(fallback->get_object());
      }
    }
    if (fields != nullptr) row["fields"] = redact_settings_description(*fields);
  }
  return copy;
}

}  // namespace tokenspeed::metrics
