"""reporter_settings.py — what the settings tests of the shipped outputs
share: one reporter's settings written to a configuration file, `check` run
on it, and the startup error of a bad setting (exit status 2, one line naming
the reporter, the file and the key)."""
import json
import os
import subprocess
import tempfile

import cli_harness


def run(*args):
    return subprocess.run([cli_harness.BINARY, *args], capture_output=True, text=True,
                          timeout=cli_harness.COMMAND_TIMEOUT_S)


class ReporterSettingsCheck:
    """Mixed into a unittest.TestCase that sets REPORTER (its name) and
    PLUGIN_DIR (the folder holding its plugin)."""
    REPORTER = ""
    PLUGIN_DIR = ""

    def check(self, settings):
        with tempfile.NamedTemporaryFile("w", suffix=".json", dir=cli_harness.TMP_ROOT,
                                         delete=False) as file:
            json.dump({self.REPORTER: settings}, file)
        self.addCleanup(os.unlink, file.name)
        return file.name, run("check", "--enable-metrics", "--metrics-port", "0",
                              "--metrics-reporters", self.REPORTER,
                              "--metrics-reporter-config", file.name,
                              "--metrics-plugin-dir", self.PLUGIN_DIR)

    def assert_startup_error(self, settings, *expected):
        path, result = self.check(settings)
        self.assertEqual(result.returncode, 2, result.stderr)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertIn(f"reporter '{self.REPORTER}'", lines[0])
        self.assertIn(path, lines[0])
        for text in expected:
            self.assertIn(text, lines[0])
