"""test_otlp_settings.py — the otlp output's settings as an operator meets
them: a bad setting fails startup with exit status 2 and one line naming the
reporter, the file and the key (a credential file that cannot be read, TLS
settings with an http:// URL, an unknown key of tls; with protocol grpc an
endpoint with a query or fragment and every header gRPC owns), and quotes no
secret; over http/protobuf an endpoint keeps its query;
`check` prints the normalized settings with every default; `plugins` shows the settings table; docs/plugins/otlp.md
carries the same table the plugin describes.

Environment: cli_harness.py's, and TSM_OTLP_DIR (the folder holding otlp.so).
"""
import json
import os
import tempfile
import unittest

import cli_harness
import plugin_settings_doc
from reporter_settings import ReporterSettingsCheck, run
from http_credential_settings import HttpCredentialSettings

OTLP_DIR = os.environ["TSM_OTLP_DIR"]
DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "plugins", "otlp.md")
# protocol grpc with a valid endpoint; a header value that must never be printed.
GRPC = {"protocol": "grpc", "endpoint": "http://127.0.0.1:4317"}
SECRET_VALUE = "S3CRETVALUE"


class OtlpSettings(ReporterSettingsCheck, HttpCredentialSettings, unittest.TestCase):
    HTTP_URL_SETTING = {"endpoint": "http://127.0.0.1:4318/v1/metrics"}

    REPORTER = "otlp"
    PLUGIN_DIR = OTLP_DIR

    def test_an_unknown_key_fails_startup_listing_the_allowed_keys(self):
        self.assert_startup_error({"endpont": "http://x"}, "unknown key 'endpont'",
                                  "allowed keys: endpoint, headers, timeout_ms")

    def test_a_value_of_the_wrong_type_or_range_fails_startup_naming_the_key(self):
        self.assert_startup_error({"timeout_ms": 0}, "'timeout_ms' must be an integer from 1")
        self.assert_startup_error({"timeout_ms": "10s"}, "'timeout_ms' must be an integer")
        self.assert_startup_error({"headers": {"api-key": 5}}, "'headers': 'api-key' must be a string")
        self.assert_startup_error({"temporality": "monthly"},
                                  "'temporality' must be one of \"cumulative\", \"delta\"")
        self.assert_startup_error({"compression": "zstd"}, "'compression' must be one of")

    def test_an_endpoint_that_is_not_http_fails_startup(self):
        self.assert_startup_error({"endpoint": "grpc://collector:4317"},
                                  "'endpoint' must start with http:// or https://")

    def test_service_instance_id_cannot_be_configured(self):
        self.assert_startup_error({"resource_attributes": {"service.instance.id": "x"}},
                                  "'resource_attributes': 'service.instance.id' is set per "
                                  "producer process")

    def test_a_header_with_a_line_break_fails_startup(self):
        self.assert_startup_error({"headers": {"a": "b\r\nInjected: 1"}}, "'headers': 'a'")

    def test_a_header_name_that_is_not_a_token_fails_startup(self):
        self.assert_startup_error({"headers": {"a b": "1"}},
                                  "'headers': 'a b' is not a valid header name")

    def test_an_endpoint_with_a_password_fails_startup_without_quoting_it(self):
        path, result = self.check({"endpoint": "https://user:S3CRETPW@collector:4318/v1/metrics"})
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("'endpoint' must not hold a user name or password", result.stderr)
        self.assertIn("basic_auth", result.stderr)
        self.assertNotIn("S3CRETPW", result.stderr + result.stdout)

    def test_an_endpoint_without_a_host_or_with_a_bad_port_fails_startup(self):
        self.assert_startup_error({"endpoint": "http:///v1/metrics"}, "'endpoint' must name a host")
        self.assert_startup_error({"endpoint": "http://collector:0/v1/metrics"},
                                  "'endpoint' must have a port from 1 to 65535")

    def test_every_header_grpc_owns_fails_startup_with_protocol_grpc_naming_key_and_header(self):
        # Each would be sent twice or in place of the call's own, failing
        # every call; the value (often an API key) is never quoted.
        for name in ("content-type", "Content-Type", "te", "TE", "grpc-encoding",
                     "grpc-timeout", "grpc-accept-encoding", "grpc-status", "grpc-message",
                     "grpc-status-details-bin", "grpc-message-type", "grpc-anything",
                     "connection", "keep-alive", "proxy-connection", "transfer-encoding",
                     "upgrade"):
            with self.subTest(header=name):
                self.assert_startup_error(
                    {**GRPC, "headers": {name: SECRET_VALUE}},
                    f"'headers': '{name}' is gRPC's own header", "remove it")
                self.assert_no_secret(self.check({**GRPC, "headers": {name: SECRET_VALUE}})[1])

    def test_an_http2_pseudo_header_fails_startup_with_protocol_grpc(self):
        for name in (":path", ":authority", ":method", ":scheme"):
            with self.subTest(header=name):
                self.assert_startup_error({**GRPC, "headers": {name: SECRET_VALUE}},
                                          f"'headers': '{name}' is not a valid header name")

    def test_a_header_file_naming_a_header_grpc_owns_fails_startup(self):
        secret = os.path.join(cli_harness.TMP_ROOT or tempfile.gettempdir(),
                              f"otlp-header-{os.getpid()}")
        with open(secret, "w") as file:
            file.write(SECRET_VALUE + "\n")
        os.chmod(secret, 0o600)
        self.addCleanup(os.unlink, secret)
        self.assert_startup_error({**GRPC, "header_files": {"grpc-timeout": secret}},
                                  "'header_files': 'grpc-timeout' is gRPC's own header")

    def test_user_agent_and_custom_metadata_pass_with_protocol_grpc(self):
        _, result = self.check({**GRPC, "headers": {"user-agent": "engine/1.0",
                                                    "x-api-key": SECRET_VALUE,
                                                    "trace-bin": "AAEC"}})
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_a_bin_header_whose_value_is_not_base64_fails_startup_unquoted(self):
        self.assert_startup_error({**GRPC, "headers": {"trace-bin": SECRET_VALUE + "!"}},
                                  "'headers': 'trace-bin' must hold base64")
        self.assert_no_secret(self.check({**GRPC, "headers": {"trace-bin": SECRET_VALUE + "!"}})[1])

    def test_a_grpc_endpoint_with_a_query_or_fragment_fails_startup_unquoted(self):
        for endpoint, part in (("http://127.0.0.1:4317?token=" + SECRET_VALUE, "without a query"),
                               ("http://127.0.0.1:4317/?token=" + SECRET_VALUE, "without a query"),
                               ("http://127.0.0.1:4317#" + SECRET_VALUE, "without a fragment"),
                               ("http://127.0.0.1:4317/#" + SECRET_VALUE, "without a fragment"),
                               ("http://127.0.0.1:4317/v1/metrics", "without a path")):
            with self.subTest(endpoint=endpoint):
                self.assert_startup_error({"protocol": "grpc", "endpoint": endpoint},
                                          "'endpoint': with protocol grpc", part)
                self.assert_no_secret(self.check({"protocol": "grpc", "endpoint": endpoint})[1])

    def test_an_http_protobuf_endpoint_keeps_its_query_and_grpc_names(self):
        # OTLP/HTTP receivers may route or authorize by a query: it is sent.
        endpoint = "http://127.0.0.1:4318/v1/metrics?tenant=a"
        _, result = self.check({"endpoint": endpoint, "headers": {"grpc-x": "x"}})
        self.assertEqual(result.returncode, 0, result.stderr)
        line = next(line for line in result.stdout.splitlines() if line.startswith("otlp: "))
        self.assertEqual(json.loads(line.split(": ", 1)[1])["endpoint"], endpoint)

    def test_http_protobuf_refuses_the_headers_its_transport_sends_unquoted(self):
        for name in ("Content-Type", "content-encoding", "Host", "te", "Transfer-Encoding"):
            with self.subTest(name=name):
                self.assert_startup_error({"headers": {name: SECRET_VALUE}},
                                          f"'headers': '{name}' is the HTTP transport's own header")
                self.assert_no_secret(self.check({"headers": {name: SECRET_VALUE}})[1])

    def test_a_bin_header_file_that_is_not_base64_fails_startup_unquoted(self):
        secret = os.path.join(os.environ.get("TSM_TEST_TMPDIR", "/tmp"),
                              f"otlp-bin-header-{os.getpid()}")
        with open(secret, "w") as file:
            file.write(SECRET_VALUE + "!\n")
        os.chmod(secret, 0o600)
        self.addCleanup(os.unlink, secret)
        self.assert_startup_error({**GRPC, "header_files": {"trace-bin": secret}},
                                  "'header_files': 'trace-bin' must hold base64",
                                  "its file does not")
        self.assert_no_secret(self.check({**GRPC, "header_files": {"trace-bin": secret}})[1])

    def assert_no_secret(self, result):
        self.assertNotIn(SECRET_VALUE, result.stdout + result.stderr)

    def test_max_backoff_below_the_initial_backoff_fails_startup(self):
        self.assert_startup_error({"initial_backoff_ms": 500, "max_backoff_ms": 100},
                                  "'max_backoff_ms' must be at least 'initial_backoff_ms'")

    def test_check_prints_the_settings_with_every_default_filled_in(self):
        _, result = self.check({"timeout_ms": 5})
        self.assertEqual(result.returncode, 0, result.stderr)
        line = next(line for line in result.stdout.splitlines() if line.startswith("otlp: "))
        normalized = json.loads(line.split(": ", 1)[1])
        self.assertEqual(normalized["timeout_ms"], 5)
        self.assertEqual(normalized["endpoint"], "http://127.0.0.1:4318/v1/metrics")
        self.assertEqual(normalized["temporality"], "cumulative")
        self.assertEqual(normalized["compression"], "gzip")
        self.assertEqual(normalized["resource_attributes"], {"service.name": "tokenspeed"})

    def test_plugins_shows_each_setting_with_its_default(self):
        result = run("plugins", "--metrics-plugin-dir", OTLP_DIR)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("    settings:\n", result.stdout)
        self.assertIn('      endpoint  url  default: "http://127.0.0.1:4318/v1/metrics"\n',
                      result.stdout)
        self.assertIn('      temporality  choice ["cumulative","delta"]  default: "cumulative"\n',
                      result.stdout)
        settings = plugin_settings_doc.settings_of(cli_harness.BINARY, OTLP_DIR, "otlp")
        self.assertEqual([row["key"] for row in settings][:3], ["endpoint", "headers", "timeout_ms"])

    def test_the_docs_page_carries_the_settings_table_the_plugin_describes(self):
        expected = plugin_settings_doc.markdown_table(
            plugin_settings_doc.settings_of(cli_harness.BINARY, OTLP_DIR, "otlp"))
        with open(DOC) as file:
            text = file.read()
        begin = text.index(plugin_settings_doc.BEGIN)
        end = text.index(plugin_settings_doc.END) + len(plugin_settings_doc.END)
        self.assertEqual(text[begin:end], expected,
                         "regenerate with: python3 test/cli/plugin_settings_doc.py BINARY DIR otlp")


if __name__ == "__main__":
    unittest.main()
