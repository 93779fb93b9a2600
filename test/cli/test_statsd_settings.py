"""test_statsd_settings.py — the statsd output's settings as an operator
meets them: a bad setting fails startup with exit status 2 and one line
naming the reporter, the file and the key; `check` prints the normalized
settings with every default; docs/plugins/statsd.md carries the same table
the plugin describes.

Environment: cli_harness.py's, and TSM_STATSD_DIR (the folder holding statsd.so).
"""
import json
import os
import unittest

import cli_harness
import plugin_settings_doc
from reporter_settings import ReporterSettingsCheck, run

STATSD_DIR = os.environ["TSM_STATSD_DIR"]
DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "plugins", "statsd.md")


class StatsdSettings(ReporterSettingsCheck, unittest.TestCase):
    REPORTER = "statsd"
    PLUGIN_DIR = STATSD_DIR

    def test_an_unknown_key_fails_startup_listing_the_allowed_keys(self):
        self.assert_startup_error({"adress": "x:1"}, "unknown key 'adress'",
                                  "allowed keys: address, flavour, prefix")

    def test_a_value_of_the_wrong_type_range_or_choice_fails_startup_naming_the_key(self):
        self.assert_startup_error({"flavour": "influx"},
                                  "'flavour' must be one of \"statsd\", \"dogstatsd\"")
        self.assert_startup_error({"flush_interval_ms": 0}, "'flush_interval_ms' must be an integer")
        self.assert_startup_error({"aggregation": "yes"}, "'aggregation' must be true or false")
        self.assert_startup_error({"max_datagram_bytes": 10}, "'max_datagram_bytes' must be 0")

    def test_a_malformed_address_fails_startup(self):
        self.assert_startup_error({"address": "localhost"}, "'address' must be host:port")
        self.assert_startup_error({"address": "localhost:0"}, "port from 1 to 65535")
        self.assert_startup_error({"address": "unix://run/dsd.sock"}, "absolute path")

    def test_a_prefix_that_would_break_the_grammar_fails_startup(self):
        self.assert_startup_error({"prefix": "a:b"}, "'prefix' may hold only")

    def test_process_tags_need_the_dogstatsd_flavour(self):
        self.assert_startup_error({"process_tags": True}, "'process_tags' needs",
                                  '"flavour": "dogstatsd"')
        self.assert_startup_error({"process_tags": True, "flavour": "statsd"},
                                  "'process_tags' needs")
        self.assert_startup_error({"process_tags": "yes", "flavour": "dogstatsd"},
                                  "'process_tags' must be true or false")
        _, result = self.check({"process_tags": True, "flavour": "dogstatsd"})
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_check_prints_the_settings_with_every_default_filled_in(self):
        _, result = self.check({"flavour": "dogstatsd"})
        self.assertEqual(result.returncode, 0, result.stderr)
        line = next(line for line in result.stdout.splitlines() if line.startswith("statsd: "))
        normalized = json.loads(line.split(": ", 1)[1])
        self.assertEqual(normalized["flavour"], "dogstatsd")
        self.assertEqual(normalized["address"], "127.0.0.1:8125")
        self.assertEqual(normalized["aggregation"], True)
        self.assertEqual(normalized["max_datagram_bytes"], 0)
        self.assertEqual(normalized["process_tags"], False)

    def test_the_docs_page_carries_the_settings_table_the_plugin_describes(self):
        expected = plugin_settings_doc.markdown_table(
            plugin_settings_doc.settings_of(cli_harness.BINARY, STATSD_DIR, "statsd"))
        with open(DOC) as file:
            text = file.read()
        begin = text.index(plugin_settings_doc.BEGIN)
        end = text.index(plugin_settings_doc.END) + len(plugin_settings_doc.END)
        self.assertEqual(text[begin:end], expected,
                         "regenerate with: python3 test/cli/plugin_settings_doc.py BINARY DIR statsd")


if __name__ == "__main__":
    unittest.main()
