"""test_zmq_load_settings.py — the zmq_load output's settings as an operator
meets them: `plugins` lists the output with every setting; a bad setting
fails startup with exit status 2 and one line naming the reporter, the file
and the key (an endpoint is required, a worker_id must be a u64, an unknown
`map` field is named, require_full_fpm needs the FPM schema and the whole
fpm group); `check` prints the normalized settings with every default;
docs/plugins/zmq_load.md carries the same table the plugin describes.

Environment: cli_harness.py's, and TSM_ZMQ_LOAD_DIR (the folder holding zmq_load.so).
"""
import json
import os
import unittest

import cli_harness
import plugin_settings_doc
from reporter_settings import ReporterSettingsCheck, run

PLUGIN_DIR = os.environ["TSM_ZMQ_LOAD_DIR"]
DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "plugins", "zmq_load.md")
ENDPOINT = "tcp://127.0.0.1:5557"


class ZmqLoadSettings(ReporterSettingsCheck, unittest.TestCase):
    REPORTER = "zmq_load"
    PLUGIN_DIR = PLUGIN_DIR

    def test_plugins_lists_the_output_with_its_settings(self):
        result = run("plugins", "--metrics-plugin-dir", PLUGIN_DIR)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("reporter zmq_load", result.stdout)
        self.assertIn("start_node: yes", result.stdout)
        for key in ("endpoint", "schema", "preset", "map", "rank_label", "heartbeat_ms",
                    "max_total_num_tokens", "worker_id", "require_full_fpm"):
            self.assertIn(f"      {key}  ", result.stdout)

    def test_the_endpoint_is_required_and_must_be_tcp_host_port(self):
        self.assert_startup_error({}, "'endpoint'")
        self.assert_startup_error({"endpoint": "ipc:///tmp/x"}, "'endpoint' must be tcp://HOST:PORT")
        self.assert_startup_error({"endpoint": "tcp://127.0.0.1:0"}, "port from 1 to 65535")

    def test_a_worker_id_must_be_an_unsigned_64_bit_integer(self):
        self.assert_startup_error({"endpoint": ENDPOINT, "worker_id": "18446744073709551616"},
                                  "'worker_id' must be an unsigned 64-bit integer")
        self.assert_startup_error({"endpoint": ENDPOINT, "worker_id": "-1"}, "'worker_id'")
        _, result = self.check({"endpoint": ENDPOINT, "worker_id": "18446744073709551615"})
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_an_unknown_map_field_is_named(self):
        self.assert_startup_error({"endpoint": ENDPOINT, "map": {"running": "x"}},
                                  "'map': unknown field 'running'", "num_running_reqs")

    def test_require_full_fpm_needs_the_fpm_schema_and_the_whole_group(self):
        self.assert_startup_error({"endpoint": ENDPOINT, "require_full_fpm": True},
                                  "'require_full_fpm' needs")
        self.assert_startup_error(
            {"endpoint": ENDPOINT, "schema": "dynamo_fpm_v1", "require_full_fpm": True,
             "map": {"fpm_queued_var_prefill_length": ""}},
            "'require_full_fpm'", "not all mapped")

    def test_check_prints_the_settings_with_every_default_filled_in(self):
        _, result = self.check({"endpoint": ENDPOINT})
        self.assertEqual(result.returncode, 0, result.stderr)
        line = next(line for line in result.stdout.splitlines() if line.startswith("zmq_load: "))
        normalized = json.loads(line.split(": ", 1)[1])
        self.assertEqual(normalized["schema"], "sglang_loadstat")
        self.assertEqual(normalized["preset"], "tokenspeed")
        self.assertEqual(normalized["rank_label"], "dp_rank")
        self.assertEqual(normalized["heartbeat_ms"], 1000)
        self.assertEqual(normalized["max_total_num_tokens"], 0)

    def test_the_docs_page_carries_the_settings_table_the_plugin_describes(self):
        expected = plugin_settings_doc.markdown_table(
            plugin_settings_doc.settings_of(cli_harness.BINARY, PLUGIN_DIR, "zmq_load"))
        with open(DOC) as file:
            text = file.read()
        begin = text.index(plugin_settings_doc.BEGIN)
        end = text.index(plugin_settings_doc.END) + len(plugin_settings_doc.END)
        self.assertEqual(text[begin:end], expected,
                         "regenerate with: python3 test/cli/plugin_settings_doc.py BINARY DIR zmq_load")


if __name__ == "__main__":
    unittest.main()
