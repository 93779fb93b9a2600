"""test_remote_write_settings.py — the remote_write output's settings as an
operator meets them: a bad setting fails startup with exit status 2 and one
line naming the reporter, the file and the key (a credential file that
cannot be read, TLS settings with an http:// URL, an unknown key of tls),
and quotes no secret; `check` prints the normalized settings with every
default; docs/plugins/remote_write.md carries the same table the plugin
describes.

Environment: cli_harness.py's, and TSM_REMOTE_WRITE_DIR (the folder holding
remote_write.so).
"""
import json
import os
import unittest

import cli_harness
import plugin_settings_doc
from reporter_settings import ReporterSettingsCheck, run
from http_credential_settings import HttpCredentialSettings

PLUGIN_DIR = os.environ["TSM_REMOTE_WRITE_DIR"]
DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "plugins", "remote_write.md")


class RemoteWriteSettings(ReporterSettingsCheck, HttpCredentialSettings, unittest.TestCase):
    HTTP_URL_SETTING = {"url": "http://127.0.0.1:9090/api/v1/write"}

    REPORTER = "remote_write"
    PLUGIN_DIR = PLUGIN_DIR

    def test_an_unknown_key_fails_startup_listing_the_allowed_keys(self):
        self.assert_startup_error({"endpoint": "http://x"}, "unknown key 'endpoint'",
                                  "allowed keys: url, headers, timeout_ms")

    def test_a_value_of_the_wrong_type_or_range_fails_startup_naming_the_key(self):
        self.assert_startup_error({"timeout_ms": 0}, "'timeout_ms' must be an integer from 1")
        self.assert_startup_error({"retry_on_429": "yes"}, "'retry_on_429'")
        self.assert_startup_error({"max_samples_per_request": 0}, "'max_samples_per_request'")
        self.assert_startup_error({"external_labels": {"cluster": 1}},
                                  "'external_labels': 'cluster' must be a string")

    def test_a_url_that_is_not_http_fails_startup(self):
        self.assert_startup_error({"url": "127.0.0.1:9090/api/v1/write"},
                                  "'url' must start with http:// or https://")

    def test_a_label_name_prometheus_would_refuse_fails_startup(self):
        self.assert_startup_error({"external_labels": {"cluster-name": "a"}},
                                  "'external_labels': 'cluster-name' is not a label name")
        self.assert_startup_error({"external_labels": {"__name__": "a"}},
                                  "'external_labels': '__name__' is not a label name")
        self.assert_startup_error({"process_label": "1pid"},
                                  "'process_label': \"1pid\" is not a label name")

    def test_the_process_label_cannot_be_an_external_label(self):
        self.assert_startup_error({"external_labels": {"process": "x"}},
                                  "'external_labels': 'process' is the process_label")

    def test_the_node_label_is_a_label_name_other_than_the_process_label_or_an_external_one(self):
        self.assert_startup_error({"node_label": "1node"},
                                  "'node_label': \"1node\" is not a label name")
        self.assert_startup_error({"node_label": "process"},
                                  "'node_label' and 'process_label' must differ")
        # An external label of the node label's name names the node (as the
        # configurations written before the node label did), and "" adds none.
        for settings in ({"external_labels": {"node": "gpu-17"}},
                         {"node_label": "", "external_labels": {"node": "gpu-17"}}):
            _, result = self.check(settings)
            self.assertEqual(result.returncode, 0, result.stderr)

    def test_a_header_with_a_line_break_fails_startup(self):
        self.assert_startup_error({"headers": {"a": "b\r\nInjected: 1"}}, "'headers': 'a'")

    def test_a_header_file_name_that_is_not_a_token_fails_startup(self):
        self.assert_startup_error({"header_files": {"X:Scope": "/run/secrets/tenant"}},
                                  "'header_files': 'X:Scope' is not a valid header name")

    def test_a_url_with_a_password_fails_startup_without_quoting_it(self):
        path, result = self.check({"url": "https://user:S3CRETPW@prometheus:9090/api/v1/write"})
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("'url' must not hold a user name or password", result.stderr)
        self.assertIn("basic_auth", result.stderr)
        self.assertNotIn("S3CRETPW", result.stderr + result.stdout)

    def test_max_backoff_below_the_initial_backoff_fails_startup(self):
        self.assert_startup_error({"initial_backoff_ms": 500, "max_backoff_ms": 100},
                                  "'max_backoff_ms' must be at least 'initial_backoff_ms'")

    def test_check_prints_the_settings_with_every_default_filled_in(self):
        _, result = self.check({"timeout_ms": 5})
        self.assertEqual(result.returncode, 0, result.stderr)
        line = next(line for line in result.stdout.splitlines()
                    if line.startswith("remote_write: "))
        normalized = json.loads(line.split(": ", 1)[1])
        self.assertEqual(normalized["timeout_ms"], 5)
        self.assertEqual(normalized["url"], "http://127.0.0.1:9090/api/v1/write")
        self.assertEqual(normalized["retry_on_429"], False)
        self.assertEqual(normalized["process_label"], "process")
        self.assertEqual(normalized["node_label"], "node")
        self.assertEqual(normalized["external_labels"], {})

    def test_the_docs_page_carries_the_settings_table_the_plugin_describes(self):
        expected = plugin_settings_doc.markdown_table(
            plugin_settings_doc.settings_of(cli_harness.BINARY, PLUGIN_DIR, "remote_write"))
        with open(DOC) as file:
            text = file.read()
        begin = text.index(plugin_settings_doc.BEGIN)
        end = text.index(plugin_settings_doc.END) + len(plugin_settings_doc.END)
        self.assertEqual(text[begin:end], expected,
                         "regenerate with: python3 test/cli/plugin_settings_doc.py BINARY DIR "
                         "remote_write")


if __name__ == "__main__":
    unittest.main()
