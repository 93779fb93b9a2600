/* has_secret_settings.c — an output, 'secret_output', whose settings
 * description marks secrets: a string ("token"), a string with a non-empty
 * default ("fallback_token"), a map of strings ("headers": every value
 * secret, the names not) beside its file variant ("header_files"), and
 * nested objects with a secret field ("basic_auth.password" beside
 * "basic_auth.password_file", "tls.key_password"). Its validate answers the
 * settings unchanged; validate and create_sink refuse a configuration in
 * which any value reads "<secret>", so a redacted copy reaching the plugin
 * shows as an error. Sinks do nothing. */
#include <string.h>

#include "test_plugin_common.h"

static const char kSettings[] =
    "["
    "{\"key\":\"endpoint\",\"type\":\"string\",\"default\":\"http://127.0.0.1:9\","
    "\"description\":\"Where to send.\"},"
    "{\"key\":\"token\",\"type\":\"string\",\"default\":\"\",\"secret\":true,"
    "\"description\":\"Bearer token.\"},"
    "{\"key\":\"fallback_token\",\"type\":\"string\",\"default\":\"built-in-fallback-0451\","
    "\"secret\":true,\"description\":\"Token used without one.\"},"
    "{\"key\":\"headers\",\"type\":\"object of strings\",\"default\":{},\"secret\":true,"
    "\"description\":\"Extra request headers.\"},"
    "{\"key\":\"header_files\",\"type\":\"object of strings\",\"default\":{},"
    "\"description\":\"Headers read from files.\"},"
    "{\"key\":\"basic_auth\",\"type\":\"object\",\"default\":{},\"description\":\"Basic auth.\","
    "\"fields\":["
    "{\"key\":\"username\",\"type\":\"string\",\"default\":\"\",\"description\":\"User.\"},"
    "{\"key\":\"password\",\"type\":\"string\",\"default\":\"\",\"secret\":true,"
    "\"description\":\"Password.\"},"
    "{\"key\":\"password_file\",\"type\":\"string\",\"default\":\"\","
    "\"description\":\"File holding the password.\"}]},"
    "{\"key\":\"tls\",\"type\":\"object\",\"default\":{},\"description\":\"TLS.\","
    "\"fields\":["
    "{\"key\":\"ca_file\",\"type\":\"string\",\"default\":\"\",\"description\":\"CA.\"},"
    "{\"key\":\"key_password\",\"type\":\"string\",\"default\":\"\",\"secret\":true,"
    "\"description\":\"Passphrase of the key.\"}]}"
    "]";

static int redacted(const char *config, size_t size) {
  static const char kMark[] = "<secret>";
  size_t i;
  for (i = 0; i + sizeof kMark - 1 <= size; ++i) {
    if (memcmp(config + i, kMark, sizeof kMark - 1) == 0) return 1;
  }
  return 0;
}

static int validate(void *user_data, const char *config, size_t size, tsm_buffer *normalized,
                    tsm_buffer *error) {
  (void)user_data;
  if (redacted(config, size)) return test_plugin_fail(error, "validate received a redacted value");
  normalized->assign(normalized, config, size);
  return TSM_OK;
}

static int create_sink(void *user_data, const char *config, size_t size, tsm_sink *sink,
                       tsm_buffer *error) {
  if (redacted(config, size))
    return test_plugin_fail(error, "create_sink received a redacted value");
  return test_plugin_create_null_sink(user_data, config, size, sink, error);
}

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  tsm_reporter_descriptor descriptor = test_plugin_descriptor("secret_output", validate);
  descriptor.create_sink = create_sink;
  descriptor.settings = kSettings;
  return test_plugin_register_descriptor(host, &descriptor, error);
}
