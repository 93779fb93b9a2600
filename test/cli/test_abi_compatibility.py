"""test_abi_compatibility.py — the promise of docs/abi.md, with real binaries:
a plugin built against the header of the first release (0.1.0, kept verbatim
in test/abi/0.1.0/) loads and runs in today's host with every capability that
header had; a plugin built against a later minor (larger struct_size values,
fields this host does not know) loads and its unknown fields are ignored; a
plugin asking for an API major the host lacks is refused with one line.

Runs `tokenspeed-metrics plugins`, `check` and `simulate` as an operator would.
"""
import json
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_harness as h  # noqa: E402

# A hang guard only: a simulation of one rank for one second ends in seconds.
SIMULATE_TIMEOUT_S = 120


def read_calls(path):
    """[(call, pid, detail)] of a plugin's call log."""
    with open(path, encoding="utf-8") as log:
        calls = []
        for line in log.read().splitlines():
            call, pid, detail = line.split(" ", 2)
            calls.append((call, int(pid), detail))
        return calls


def fields(detail):
    """{key: value} of 'key=value key=value ...'."""
    return dict(part.split("=", 1) for part in detail.split() if "=" in part)


class AbiTestCase(h.CliTestCase):

    def simulate(self, *args):
        command = [h.BINARY, "simulate", "--enable-metrics", "--metrics-port", "0",
                   "--ranks", "1", "--duration", "1", *[str(arg) for arg in args]]
        completed = subprocess.run(command, env=h.clean_environment(), capture_output=True,
                                   text=True, timeout=SIMULATE_TIMEOUT_S, check=False)
        return h.Result(command, completed)

    def log_config(self, *names):
        log = os.path.join(self.make_dir(), "calls.log")
        return log, self.write_config({name: {"log": log} for name in names})


class PluginBuiltAgainstTheFirstRelease(AbiTestCase):
    """test/plugins/header_0_1_0, compiled against the 0.1.0 header."""

    FLAGS = h.dirs_flags(h.plugin_dir("header_0_1_0"))

    def test_a_0_1_0_plugin_loads_with_both_its_names_and_no_version(self):
        listing, result = self.plugins_json(*self.FLAGS)
        entry = self.find_plugin(listing, h.plugin_file("header_0_1_0"))
        self.assertEqual(entry["status"], "loaded", result.describe())
        self.assertEqual(self.reporter_names(entry), ["header_0_1_0", "header_0_1_0_direct"])
        for reporter in entry["reporters"]:
            self.assertEqual(reporter["version"], "")
            self.assertIsNone(reporter["settings"])
        self.assertEqual(result.warnings, [], result.describe())

    def test_its_validate_normalizes_and_its_refusal_reaches_the_startup_error(self):
        log, config = self.log_config("header_0_1_0")
        lines = self.check_lines("--enable-metrics", "--metrics-reporters", "header_0_1_0",
                                 "--metrics-reporter-config", config, *self.FLAGS)
        self.assertEqual(len(lines), 1, lines)
        name, normalized = lines[0].split(": ", 1)
        self.assertEqual(name, "header_0_1_0")
        self.assertEqual(json.loads(normalized), {"log": log, "normalized_by": "0.1.0"})

        refused = self.write_config({"header_0_1_0": {"log": log, "reject": True}})
        result = self.check("--enable-metrics", "--metrics-reporters", "header_0_1_0",
                            "--metrics-reporter-config", refused, *self.FLAGS)
        self.assert_startup_error(result, "reporter 'header_0_1_0'",
                                  'the 0.1.0 plugin refuses the setting "reject"')

    def test_a_0_1_0_plugin_runs_a_whole_node_lifecycle_in_todays_host(self):
        log, config = self.log_config("header_0_1_0", "header_0_1_0_direct")
        result = self.simulate("--metrics-reporters", "prometheus,header_0_1_0,header_0_1_0_direct",
                               "--metrics-reporter-config", config, *self.FLAGS)
        self.assertEqual(result.status, 0, result.describe())
        calls = read_calls(log)
        names = [call for call, _, _ in calls]
        self.assertEqual(names.count("validate"), 2, calls)
        self.assertEqual(names.count("start_node"), 1, calls)  # only the output that has one
        self.assertEqual(names.count("session_close"), 1, calls)
        self.assertEqual(names[-1], "session_close", "the node session is closed last")
        # The launcher, one scheduler and the frontend each create and close
        # one sink per output.
        self.assertEqual(names.count("create_sink"), 6, calls)
        closes = [fields(detail) for call, _, detail in calls if call == "sink_close"]
        self.assertEqual(len(closes), 6, calls)
        self.assertGreater(sum(int(c["events"]) for c in closes), 0, calls)
        for close in closes:
            self.assertEqual(close["invalid"], "0", calls)  # every event field as 0.1.0 said
            self.assertEqual(close["timeout"], "positive", calls)
        self.assertGreater(sum(int(c["observe"]) for c in closes), 0, calls)
        self.assertGreater(sum(int(c["inc"]) for c in closes), 0, calls)
        # Producers receive the producer configuration start_node wrote, or,
        # without start_node, the normalized configuration.
        launcher_pid = [pid for call, pid, _ in calls if call == "start_node"][0]
        created = [json.loads(detail) for call, _, detail in calls if call == "create_sink"]
        self.assertIn({"log": log, "session": str(launcher_pid)}, created)
        self.assertIn({"log": log, "normalized_by": "0.1.0"}, created)
        # host->log, copied during tsm_register, used later from the sink's thread.
        self.assertIn("0.1.0 sink closed: events=", result.stderr, result.describe())
        # Its tsm_sink ends at self (TSM_SINK_SIZE_V1): it reports no delivery
        # figures, so the summary shows none and the rows' status is plain.
        self.assertNotIn("what the outputs' plugins report", result.stdout, result.describe())
        rows = [line for line in result.stdout_lines
                if re.match(r"^\S+ +[0-9]+ +header_0_1_0(_direct)? ", line)]
        self.assertEqual(len(rows), 6, result.describe())
        for row in rows:
            self.assertTrue(row.endswith("  ok"), result.describe())


class PluginBuiltAgainstALaterMinor(AbiTestCase):
    """test/plugins/future_header: larger struct_size values, unknown fields."""

    FLAGS = h.dirs_flags(h.plugin_dir("future_header"))

    def test_a_larger_descriptor_loads_and_its_known_appended_fields_are_read(self):
        listing, result = self.plugins_json(*self.FLAGS)
        entry = self.find_plugin(listing, h.plugin_file("future_header"))
        self.assertEqual(entry["status"], "loaded", result.describe())
        reporter = entry["reporters"][0]
        self.assertEqual(reporter["name"], "future_header")
        self.assertEqual(reporter["version"], "1.99-future")
        self.assertEqual([row["key"] for row in reporter["settings"]], ["log"],
                         result.describe())

    def test_its_unknown_fields_are_ignored_through_a_whole_run(self):
        log, config = self.log_config("future_header")
        result = self.simulate("--metrics-reporters", "prometheus,future_header",
                               "--metrics-reporter-config", config, *self.FLAGS)
        self.assertEqual(result.status, 0, result.describe())
        closes = [fields(detail) for call, _, detail in read_calls(log) if call == "sink_close"]
        self.assertEqual(len(closes), 3, closes)  # the launcher, one scheduler, the frontend
        self.assertGreater(sum(int(c["events"]) for c in closes), 0, closes)
        for close in closes:
            # The plugin saw today's struct sizes and fell back for its newer fields.
            self.assertEqual(close["events_with_future_field"], "0", closes)
            self.assertEqual(close["host_future_field"], "no", closes)


class PluginAskingForAnotherMajor(AbiTestCase):
    """test/plugins/unsupported_api: supports metric reporter API 2 only."""

    PATH = h.plugin_file("unsupported_api")
    FLAGS = h.dirs_flags(h.plugin_dir("unsupported_api"))

    def test_it_is_refused_with_one_line_naming_the_file_and_both_versions(self):
        result = self.check("--enable-metrics", *self.FLAGS)
        self.assert_ok(result)
        self.assertEqual(len(result.stderr_lines), 1, result.describe())
        self.assert_warning(result, self.PATH, "does not support metric reporter API version 1",
                            "API version 2 only")

    def test_selecting_its_output_fails_startup_with_the_reason(self):
        result = self.check("--enable-metrics", "--metrics-reporters", "unsupported_api",
                            *self.FLAGS)
        line = self.assert_startup_error(result, "unknown reporter", "reporter 'unsupported_api'",
                                         warnings_allowed=True)
        self.assertIn("does not support metric reporter API version 1", line)

    def test_the_other_plugins_of_the_directory_still_load(self):
        dirs = h.dirs_flags(h.plugin_dir("unsupported_api"), h.plugin_dir("header_0_1_0"),
                            h.plugin_dir("future_header"))
        listing, result = self.plugins_json(*dirs)
        status = {os.path.basename(p["path"]): p["status"] for p in listing["plugins"]}
        self.assertEqual(status, {"unsupported_api.so": "failed", "header_0_1_0.so": "loaded",
                                  "future_header.so": "loaded"}, result.describe())


if __name__ == "__main__":
    unittest.main()
