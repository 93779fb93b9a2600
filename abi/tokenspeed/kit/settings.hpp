/*
 * tokenspeed/kit/settings.hpp — a plugin's typed settings table: one row per
 * key (type, default, range or choices, one-line description) that validates
 * and normalizes the JSON settings, reads them back typed in create_sink, and
 * describes itself for `tokenspeed-metrics plugins` and the plugin's docs.
 * Header-only C++17; needs no JSON library. Never used on the event path.
 *
 *   const kit::SettingsTable table{{
 *       {"endpoint", kit::SettingType::kUrl, R"("http://127.0.0.1:4318")", 0, 0,
 *        "Where to send."},
 *       {"timeout_ms", kit::SettingType::kInteger, "10000", 1, 600000, "Per request."},
 *       {"compression", kit::SettingType::kChoice, R"("gzip")", 0, 0, "Body encoding.",
 *        "gzip|none"},
 *   }};
 *   reporter.validate = [&](std::string_view c) { return table.validate_text(c); };
 *   ...  const kit::Settings s = table.read(producer_config);  s.integer("timeout_ms");
 *
 * A row marked secret (a password file's path, an API key header) is
 * described with "secret": true, and no error message quotes its value; a
 * nested object is a kObject row over a static array of rows, described with
 * "type": "object" and "fields": [...]:
 *
 *   inline constexpr kit::Setting kAuthFields[] = {
 *       {"username", kit::SettingType::kString, R"("")", 0, 0, "User name."},
 *       kit::Setting("token", kit::SettingType::kString, R"("")", 0, 0, "Token.").secret(),
 *   };
 *   ... kit::Setting::object("auth", kAuthFields, "Credentials."),
 *   ... s.object("auth").string("username");
 *
 * A row may say where its value lands: bound to a field of the plugin's
 * options struct (a path of member pointers), it is written there by
 * table.fill(settings, options), so the key is spelled once:
 *
 *   inline constexpr Mode kModes[] = {Mode::kFast, Mode::kSafe};  // in choice order
 *   kit::Setting("timeout_ms", kit::SettingType::kInteger, "10000", 1, 600000, "Per request.")
 *       .bind<&MyOptions::timeout>(),                         // std::chrono::milliseconds
 *   kit::Setting("mode", kit::SettingType::kChoice, R"("fast")", 0, 0, "How.", "fast|safe")
 *       .bind_choices<kModes, &MyOptions::encoder, &EncoderOptions::mode>(),
 *   ...  MyOptions options;  table.fill(settings, options);
 */
#ifndef TOKENSPEED_KIT_SETTINGS_HPP
#define TOKENSPEED_KIT_SETTINGS_HPP

#include <tokenspeed/kit/json.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace tokenspeed::metrics::kit {

enum class SettingType {
  kString,     // any string (see non_empty)
  kInteger,    // an integer in [min, max]
  kNumber,     // a number in [min, max]
  kBoolean,    // true or false
  kChoice,     // one of the strings in choices ("a|b|c")
  kStringMap,  // an object whose values are all strings (attributes, labels): any string
  kObject,     // an object of the row's own sub-rows (fields), validated like a table
  kUrl,        // an absolute http:// or https:// URL with a host (see check_http_url)
  kHeaderMap,  // an object of HTTP headers: token names, values without control characters
               // (see check_header_map); never quotes a value
};

inline const char* setting_type_name(SettingType type) noexcept {
  switch (type) {
    case SettingType::kString:
      return "string";
    case SettingType::kInteger:
      return "integer";
    case SettingType::kNumber:
      return "number";
    case SettingType::kBoolean:
      return "boolean";
    case SettingType::kChoice:
      return "choice";
    case SettingType::kStringMap:
      return "object of strings";
    case SettingType::kObject:
      return "object";
    case SettingType::kUrl:
      return "url";
    case SettingType::kHeaderMap:
      return "object of headers";
  }
  return "unknown";
}

namespace detail {

/* text with every byte outside printable ASCII written as \xNN: a name
 * quoted in a one-line message. */
inline std::string printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && c != '\\') {
      out += c;
    } else {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    }
  }
  return out;
}

inline bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
inline bool is_alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline bool is_hex(char c) noexcept {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* The authority of a URL ("user@host:port"): after "scheme://" up to the
 * first '/', '?' or '#'; from the start when there is no "://". */
inline std::string_view url_authority(std::string_view url) noexcept {
  const std::size_t scheme = url.find("://");
  if (scheme != std::string_view::npos) url.remove_prefix(scheme + 3);
  return url.substr(0, url.find_first_of("/?#"));
}

/* The binding of a row (Setting::bind): the struct a path of member
 * pointers starts from and the field it ends at. */
template <class T>
inline constexpr char type_tag = 0;  // its address names T

template <class Member>
struct member_traits;
template <class Owner, class Field>
struct member_traits<Field Owner::*> {
  using owner = Owner;
  using field = Field;
};

template <auto... Path>
using path_owner =
    typename member_traits<std::tuple_element_t<0, std::tuple<decltype(Path)...>>>::owner;
template <auto... Path>
using path_field = typename member_traits<
    std::tuple_element_t<sizeof...(Path) - 1, std::tuple<decltype(Path)...>>>::field;

template <auto... Path>
path_field<Path...>& field_at(void* options) {
  path_owner<Path...>& owner = *static_cast<path_owner<Path...>*>(options);
  return (owner.*....*Path);
}

using StringPairs = std::vector<std::pair<std::string, std::string>>;

template <class>
inline constexpr bool kUnsupportedField = false;

/* A validated value into a field of a supported type (Setting::bind). */
template <class Field>
void convert(const json::Value& value, Field& field) {
  if constexpr (std::is_same_v<Field, std::string>) {
    field = value.as_string();
  } else if constexpr (std::is_same_v<Field, bool>) {
    field = value.as_bool();
  } else if constexpr (std::is_integral_v<Field>) {
    field = static_cast<Field>(value.as_integer());
  } else if constexpr (std::is_same_v<Field, double>) {
    field = value.as_number();
  } else if constexpr (std::is_same_v<Field, std::chrono::milliseconds>) {
    field = std::chrono::milliseconds(value.as_integer());
  } else if constexpr (std::is_same_v<Field, StringPairs>) {
    field.clear();
    for (const json::Member& member : value.as_object())
      field.emplace_back(member.first, member.second.as_string());
  } else {
    static_assert(kUnsupportedField<Field>,
                  "a bound field is std::string, bool, an integer type, double, "
                  "std::chrono::milliseconds or a vector of string pairs (else bind_choices)");
  }
}

/* The place of choice in choices ("a|b|c"); a validated value is one. */
inline std::size_t choice_index(std::string_view choices, std::string_view choice) {
  std::size_t index = 0;
  while (choices.substr(0, choices.find('|')) != choice) {
    const std::size_t bar = choices.find('|');
    if (bar == std::string_view::npos) throw std::out_of_range("not a choice");
    choices.remove_prefix(bar + 1);
    ++index;
  }
  return index;
}

constexpr std::size_t choice_count(std::string_view choices) noexcept {
  std::size_t count = choices.empty() ? 0 : 1;
  for (const char c : choices) count += c == '|' ? 1 : 0;
  return count;
}

template <auto... Path>
void assign_field(void* options, const json::Value& value, std::string_view) {
  convert(value, field_at<Path...>(options));
}

template <const auto& Values, auto... Path>
void assign_choice(void* options, const json::Value& value, std::string_view choices) {
  field_at<Path...>(options) = Values[choice_index(choices, value.as_string())];
}

}  // namespace detail

/* RFC 9110's token, the form of a header (field) name: one or more of
 * letters, digits and !#$%&'*+-.^_`|~; no space, ':', control character or
 * non-ASCII byte. */
inline bool is_http_token(std::string_view name) noexcept {
  if (name.empty()) return false;
  for (const char c : name) {
    if (detail::is_alpha(c) || detail::is_digit(c)) continue;
    if (std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos) return false;
  }
  return true;
}

/* A header (field) value as it may go on the wire: no control character
 * (CR, LF, NUL, ...) but horizontal tab; obs-text (bytes >= 0x80) is
 * allowed. */
inline bool is_http_header_value(std::string_view value) noexcept {
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\t') || byte == 0x7f) return false;
  }
  return true;
}

/* Checks that url is an absolute http:// or https:// URL: a non-empty host
 * (a name, an IPv4 address or an IPv6 address in brackets), an optional port
 * from 1 to 65535, no space, control character or line break anywhere, and
 * no user name or password (user:password@: basic_auth carries those).
 * Throws std::invalid_argument starting with what ("'url'"); quotes the URL
 * only when quote is true and it holds no user information. */
inline void check_http_url(const std::string& what, std::string_view url, bool quote = true) {
  const std::string_view authority = detail::url_authority(url);
  const std::size_t at = authority.rfind('@');
  // Never quoted with user information: it may hold a password.
  const std::string got = quote && at == std::string_view::npos
                              ? ", got " + json::serialize(json::Value(std::string(url)))
                              : std::string();
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
    throw std::invalid_argument(what + " must start with http:// or https://" + got);
  if (at != std::string_view::npos) {
    throw std::invalid_argument(what +
                                " must not hold a user name or password (user:password@); set "
                                "them with basic_auth");
  }
  for (const char c : url) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte == 0x7f) {
      throw std::invalid_argument(what +
                                  " must not hold a space, a control character or a line "
                                  "break" +
                                  got);
    }
  }
  std::string_view host = authority;
  std::string_view port;
  bool has_port = false;
  if (!host.empty() && host.front() == '[') {
    const std::size_t close = host.find(']');
    const std::string_view address =
        close == std::string_view::npos ? std::string_view() : host.substr(1, close - 1);
    bool ipv6 = !address.empty() && address.find(':') != std::string_view::npos;
    for (const char c : address) ipv6 = ipv6 && (detail::is_hex(c) || c == ':' || c == '.');
    const std::string_view rest =
        close == std::string_view::npos ? std::string_view() : host.substr(close + 1);
    if (!ipv6 || (!rest.empty() && rest.front() != ':'))
      throw std::invalid_argument(what + " must have an IPv6 address in brackets" + got);
    has_port = !rest.empty();
    if (has_port) port = rest.substr(1);
    host = host.substr(0, close + 1);
  } else {
    const std::size_t colon = host.find(':');
    if (colon != std::string_view::npos) {
      has_port = true;
      port = host.substr(colon + 1);
      host = host.substr(0, colon);
    }
    // A DNS name or an IPv4 address (a byte >= 0x80: an internationalized name).
    for (const char c : host) {
      if (!detail::is_alpha(c) && !detail::is_digit(c) && c != '-' && c != '.' && c != '_' &&
          c != '~' && c != '%' && static_cast<unsigned char>(c) < 0x80)
        throw std::invalid_argument(what + " must name a host" + got);
    }
  }
  if (host.empty()) throw std::invalid_argument(what + " must name a host" + got);
  if (has_port) {
    bool valid = !port.empty() && port.size() <= 5;
    long number = 0;
    for (const char c : port) {
      valid = valid && detail::is_digit(c);
      if (valid) number = number * 10 + (c - '0');
    }
    if (!valid || number < 1 || number > 65535)
      throw std::invalid_argument(what + " must have a port from 1 to 65535" + got);
  }
}

/* Checks an object of HTTP headers (a kHeaderMap's value, already known to
 * be an object of strings): every name an RFC 9110 token, every value
 * without a control character but horizontal tab (a CR or LF would inject a
 * header). Throws std::invalid_argument starting with what ("'headers'"),
 * naming the header, never quoting a value (headers carry API keys). */
inline void check_header_map(const std::string& what, const json::Value& headers) {
  for (const json::Member& member : headers.as_object()) {
    if (!is_http_token(member.first)) {
      throw std::invalid_argument(what + ": '" + detail::printable(member.first) +
                                  "' is not a valid header name (letters, digits and "
                                  "!#$%&'*+-.^_`|~; no space or ':')");
    }
    if (member.second.is_string() && !is_http_header_value(member.second.as_string())) {
      throw std::invalid_argument(what + ": '" + member.first +
                                  "' must not hold a line break, NUL or another control "
                                  "character (but tab) in its value");
    }
  }
}

/* One row of the table. default_json is the default as JSON text; empty
 * means the key is required. A kObject row's default is "{}" (every sub-row
 * defaulted; a required sub-row then makes the object required in effect).
 * A literal type: tables of sub-rows are static constexpr arrays. */
struct Setting {
  constexpr Setting(std::string_view key_, SettingType type_, std::string_view default_json_,
                    double min_, double max_, std::string_view description_,
                    std::string_view choices_ = {}) noexcept
      : key(key_),
        type(type_),
        default_json(default_json_),
        min(min_),
        max(max_),
        description(description_),
        choices(choices_) {}

  /* A kObject row over fields (a static array that outlives the table). */
  template <std::size_t N>
  static constexpr Setting object(std::string_view key_, const Setting (&fields_)[N],
                                  std::string_view description_,
                                  std::string_view default_json_ = "{}") noexcept {
    Setting row(key_, SettingType::kObject, default_json_, 0, 0, description_);
    row.fields = fields_;
    row.field_count = N;
    return row;
  }

  /* This row marked secret: described with "secret": true, its value never
   * quoted in an error (a kStringMap's every value, a kObject's every
   * field). */
  constexpr Setting secret() const noexcept {
    Setting copy = *this;
    copy.is_secret = true;
    return copy;
  }

  /* This row bound to a field: SettingsTable::fill writes its value there.
   * Path is the member pointers from the options struct to the field
   * (&Options::format, &FormatOptions::prefix); the field's type is the
   * conversion: std::string (string, url, choice), bool (boolean), an
   * integer type (integer, its range within the type's), double (number or
   * integer), std::chrono::milliseconds (integer), a vector of string pairs
   * (object of strings or headers). A row that does not fit its field is
   * refused here with std::logic_error (in a constexpr table: at compile
   * time). */
  template <auto... Path>
  constexpr Setting bind() const {
    static_assert(sizeof...(Path) > 0, "bind names a field");
    using Field = detail::path_field<Path...>;
    if constexpr (std::is_integral_v<Field> && !std::is_same_v<Field, bool>) {
      if (type == SettingType::kInteger &&
          (min < static_cast<double>(std::numeric_limits<Field>::min()) ||
           max > static_cast<double>(std::numeric_limits<Field>::max())))
        refuse_binding("its range does not fit the field's integer type");
    }
    if (!fits<Field>(type)) refuse_binding("its type does not fit the field");
    return bound(&detail::type_tag<detail::path_owner<Path...>>, &detail::assign_field<Path...>);
  }

  /* A choice row bound through Values, an array of one value per choice in
   * the row's order (an enum, a bool): the field gets the chosen one's. */
  template <const auto& Values, auto... Path>
  constexpr Setting bind_choices() const {
    static_assert(sizeof...(Path) > 0, "bind_choices names a field");
    static_assert(std::is_assignable_v<detail::path_field<Path...>&, decltype(Values[0])>,
                  "Values hold the field's type");
    if (type != SettingType::kChoice) refuse_binding("bind_choices needs a choice");
    if (detail::choice_count(choices) != std::extent_v<std::remove_reference_t<decltype(Values)>>)
      refuse_binding("Values must hold one value per choice");
    return bound(&detail::type_tag<detail::path_owner<Path...>>,
                 &detail::assign_choice<Values, Path...>);
  }

  std::string_view key;
  SettingType type = SettingType::kString;
  std::string_view default_json;
  double min = 0;  // integers and numbers
  double max = 0;
  std::string_view description;
  std::string_view choices;         // kChoice: "gzip|none"
  const Setting* fields = nullptr;  // kObject: its sub-rows, field_count of them
  std::size_t field_count = 0;
  bool is_secret = false;  // see secret()
  // See bind(): the options struct (its type_tag) and the writer of the field.
  const void* bound_owner = nullptr;
  void (*assign)(void* options, const json::Value& value, std::string_view choices) = nullptr;

 private:
  template <class Field>
  static constexpr bool fits(SettingType type) noexcept {
    if constexpr (std::is_same_v<Field, std::string>)
      return type == SettingType::kString || type == SettingType::kUrl ||
             type == SettingType::kChoice;
    else if constexpr (std::is_same_v<Field, bool>)
      return type == SettingType::kBoolean;
    else if constexpr (std::is_integral_v<Field> ||
                       std::is_same_v<Field, std::chrono::milliseconds>)
      return type == SettingType::kInteger;
    else if constexpr (std::is_same_v<Field, double>)
      return type == SettingType::kNumber || type == SettingType::kInteger;
    else if constexpr (std::is_same_v<Field, detail::StringPairs>)
      return type == SettingType::kStringMap || type == SettingType::kHeaderMap;
    else
      return false;
  }

  [[noreturn]] void refuse_binding(const char* why) const {
    throw std::logic_error("setting '" + std::string(key) + "' (" + setting_type_name(type) +
                           ") cannot be bound: " + why);
  }

  constexpr Setting bound(const void* owner,
                          void (*writer)(void*, const json::Value&, std::string_view)) const {
    Setting copy = *this;
    copy.bound_owner = owner;
    copy.assign = writer;
    return copy;
  }
};

/* Writes the value of row into the field of options it is bound to (value:
 * the row's normalized value); an object row, each field bound to a field
 * of options. A row unbound or bound to another struct is left alone. */
template <class Options>
void fill(const Setting& row, const json::Value& value, Options& options) {
  if (row.bound_owner == &detail::type_tag<Options>) row.assign(&options, value, row.choices);
  for (std::size_t i = 0; i < row.field_count; ++i)
    fill(row.fields[i], value.at(row.fields[i].key), options);
}

/* The settings of one sink, after SettingsTable::read: every key present.
 * Getters throw std::out_of_range for a key not in the table (a plugin bug).
 * Threading: a plain value. */
class Settings {
 public:
  explicit Settings(json::Value object) : object_(std::move(object)) {}
  const std::string& string(std::string_view key) const { return object_.at(key).as_string(); }
  int64_t integer(std::string_view key) const { return object_.at(key).as_integer(); }
  double number(std::string_view key) const { return object_.at(key).as_number(); }
  bool boolean(std::string_view key) const { return object_.at(key).as_bool(); }
  std::vector<std::pair<std::string, std::string>> string_map(std::string_view key) const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const json::Member& member : object_.at(key).as_object())
      out.emplace_back(member.first, member.second.as_string());
    return out;
  }
  /* The nested settings of a kObject row, every sub-key present. */
  Settings object(std::string_view key) const { return Settings(object_.at(key)); }
  const json::Value& json() const noexcept { return object_; }

 private:
  json::Value object_;
};

/* fill with the row's value in settings (std::out_of_range when missing). */
template <class Options>
void fill(const Setting& row, const Settings& settings, Options& options) {
  fill(row, settings.json().at(row.key), options);
}

/* Threading: immutable after construction; every method may be called from
 * any thread. */
class SettingsTable {
 public:
  SettingsTable(std::initializer_list<Setting> rows) : rows_(rows) {}
  /* rows, then trailing: rows a kit header gives every table of a kind
   * (kHttpCredentialSettings of an HTTP exporter). */
  template <std::size_t N>
  SettingsTable(std::initializer_list<Setting> rows, const Setting (&trailing)[N]) : rows_(rows) {
    rows_.insert(rows_.end(), trailing, trailing + N);
  }

  const std::vector<Setting>& rows() const noexcept { return rows_; }

  /* Writes every row bound to a field of options (Setting::bind) from the
   * settings read; rows unbound or bound to another struct are left to the
   * caller. */
  template <class Options>
  void fill(const Settings& settings, Options& options) const {
    for (const Setting& row : rows_) kit::fill(row, settings, options);
  }

  /* Checks a settings object (JSON text): unknown keys rejected with the
   * allowed ones listed, types, ranges and choices checked, required keys
   * present; returns the object with every key of the table, in table order,
   * defaults filled in. Throws std::invalid_argument with a one-line message
   * that names the key. */
  json::Value validate(std::string_view config_json) const {
    json::Value parsed;
    try {
      parsed = json::parse(config_json);
    } catch (const json::ParseError& e) {
      throw std::invalid_argument(std::string("settings are not valid JSON: ") + e.what());
    }
    if (!parsed.is_object()) throw std::invalid_argument("settings must be a JSON object");
    return normalize(rows_.data(), rows_.size(), parsed, "", false);
  }

  /* validate, as JSON text: what a reporter's validate returns. */
  std::string validate_text(std::string_view config_json) const {
    return json::serialize(validate(config_json));
  }

  /* The typed settings of a producer configuration (validated again: the
   * producer configuration crossed a process boundary). */
  Settings read(std::string_view producer_config_json) const {
    return Settings(validate(producer_config_json));
  }

  /* The table as a JSON array, one object per key with "key", "type",
   * "default" (absent when required), "min"/"max" (numbers), "choices"
   * (choice), "description": what the descriptor's settings field carries. */
  std::string describe() const {
    return json::serialize(json::Value(describe_rows(rows_.data(), rows_.size())));
  }

  /* "endpoint, timeout_ms, ..." */
  std::string allowed_keys() const { return allowed_keys(rows_.data(), rows_.size()); }

  const Setting* find(std::string_view key) const noexcept {
    return find(rows_.data(), rows_.size(), key);
  }

  static std::vector<std::string_view> split_choices(std::string_view choices) {
    std::vector<std::string_view> out;
    while (!choices.empty()) {
      const std::size_t bar = choices.find('|');
      out.push_back(choices.substr(0, bar));
      if (bar == std::string_view::npos) break;
      choices.remove_prefix(bar + 1);
    }
    return out;
  }

 private:
  static std::string allowed_keys(const Setting* rows, std::size_t count) {
    std::string keys;
    for (std::size_t i = 0; i < count; ++i) {
      if (!keys.empty()) keys += ", ";
      keys += rows[i].key;
    }
    return keys;
  }

  static const Setting* find(const Setting* rows, std::size_t count,
                             std::string_view key) noexcept {
    for (std::size_t i = 0; i < count; ++i) {
      if (rows[i].key == key) return &rows[i];
    }
    return nullptr;
  }

  /* given (an object) checked against rows: unknown keys, each value, the
   * required ones; every row's key in table order, defaults filled in.
   * prefix ("tls.") goes before every key an error names; secret: the
   * enclosing row is secret. */
  static json::Value normalize(const Setting* rows, std::size_t count, const json::Value& given,
                               const std::string& prefix, bool secret) {
    for (const json::Member& member : given.as_object()) {
      const Setting* row = find(rows, count, member.first);
      if (row == nullptr) {
        throw std::invalid_argument("unknown key '" + prefix + member.first +
                                    "'; allowed keys: " + allowed_keys(rows, count));
      }
      check(*row, member.second, prefix, secret);
    }
    json::Object normalized;
    for (std::size_t i = 0; i < count; ++i) {
      const Setting& row = rows[i];
      const json::Value* value = given.find(row.key);
      json::Value fallback;
      if (value == nullptr) {
        if (row.default_json.empty())
          throw std::invalid_argument("'" + prefix + std::string(row.key) + "' is required");
        fallback = json::parse(row.default_json);
        value = &fallback;
      }
      if (row.type == SettingType::kObject) {
        normalized.emplace_back(std::string(row.key), normalize(row.fields, row.field_count, *value,
                                                                prefix + std::string(row.key) + ".",
                                                                secret || row.is_secret));
      } else {
        normalized.emplace_back(std::string(row.key), *value);
      }
    }
    return json::Value(std::move(normalized));
  }

  static json::Array describe_rows(const Setting* rows, std::size_t count) {
    json::Array out;
    for (std::size_t i = 0; i < count; ++i) {
      const Setting& row = rows[i];
      json::Object entry;
      entry.emplace_back("key", std::string(row.key));
      entry.emplace_back("type", setting_type_name(row.type));
      if (!row.default_json.empty()) entry.emplace_back("default", json::parse(row.default_json));
      if (row.type == SettingType::kInteger) {
        entry.emplace_back("min", static_cast<int64_t>(row.min));
        entry.emplace_back("max", static_cast<int64_t>(row.max));
      } else if (row.type == SettingType::kNumber) {
        entry.emplace_back("min", row.min);
        entry.emplace_back("max", row.max);
      }
      if (row.type == SettingType::kChoice) {
        json::Array choices;
        for (const std::string_view choice : split_choices(row.choices))
          choices.emplace_back(choice);
        entry.emplace_back("choices", std::move(choices));
      }
      if (row.is_secret) entry.emplace_back("secret", true);
      if (row.type == SettingType::kObject)
        entry.emplace_back("fields", describe_rows(row.fields, row.field_count));
      entry.emplace_back("description", std::string(row.description));
      out.emplace_back(std::move(entry));
    }
    return out;
  }

  static std::string number_text(double v) {
    if (v == static_cast<double>(static_cast<int64_t>(v)))
      return std::to_string(static_cast<int64_t>(v));
    return json::serialize(json::Value(v));
  }

  /* Throws naming prefix + the row's key; a secret's value is never quoted
   * (only its kind). */
  static void check(const Setting& row, const json::Value& value, const std::string& prefix,
                    bool enclosing_secret) {
    const std::string key = "'" + prefix + std::string(row.key) + "'";
    const bool secret = enclosing_secret || row.is_secret;
    const std::string got = secret ? std::string(value.kind_name()) : json::serialize(value);
    switch (row.type) {
      case SettingType::kString:
        if (!value.is_string())
          throw std::invalid_argument(key + " must be a string, got " + value.kind_name());
        return;
      case SettingType::kBoolean:
        if (!value.is_bool())
          throw std::invalid_argument(key + " must be true or false, got " + value.kind_name());
        return;
      case SettingType::kInteger:
        if (!value.is_integer() || static_cast<double>(value.as_integer()) < row.min ||
            static_cast<double>(value.as_integer()) > row.max) {
          throw std::invalid_argument(key + " must be an integer from " + number_text(row.min) +
                                      " to " + number_text(row.max) + ", got " + got);
        }
        return;
      case SettingType::kNumber:
        if (!value.is_number() || value.as_number() < row.min || value.as_number() > row.max) {
          throw std::invalid_argument(key + " must be a number from " + number_text(row.min) +
                                      " to " + number_text(row.max) + ", got " + got);
        }
        return;
      case SettingType::kChoice: {
        if (value.is_string()) {
          for (const std::string_view choice : split_choices(row.choices)) {
            if (choice == value.as_string()) return;
          }
        }
        std::string listed;
        for (const std::string_view choice : split_choices(row.choices)) {
          if (!listed.empty()) listed += ", ";
          listed += "\"" + std::string(choice) + "\"";
        }
        throw std::invalid_argument(key + " must be one of " + listed + ", got " + got);
      }
      case SettingType::kUrl:
        if (!value.is_string()) {
          throw std::invalid_argument(key + " must be an http:// or https:// URL, got " +
                                      value.kind_name());
        }
        check_http_url(key, value.as_string(), !secret);
        return;
      case SettingType::kStringMap:
      case SettingType::kHeaderMap:
        if (!value.is_object()) {
          throw std::invalid_argument(key + " must be an " + setting_type_name(row.type) +
                                      ", got " + value.kind_name());
        }
        for (const json::Member& member : value.as_object()) {
          if (!member.second.is_string()) {
            throw std::invalid_argument(key + ": '" + member.first + "' must be a string, got " +
                                        member.second.kind_name());
          }
        }
        if (row.type == SettingType::kHeaderMap) check_header_map(key, value);
        return;
      case SettingType::kObject:
        // The sub-rows are checked by normalize, each named prefix.key.sub.
        if (!value.is_object())
          throw std::invalid_argument(key + " must be an object, got " + value.kind_name());
        return;
    }
  }

  std::vector<Setting> rows_;
};

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_SETTINGS_HPP
