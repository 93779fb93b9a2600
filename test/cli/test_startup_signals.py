"""test_startup_signals.py — SIGTERM and SIGINT while `tokenspeed-metrics
simulate` is still starting: a plugin's validate or start_node that blocks
(test/plugins/slow_startup) must not keep the signal from ending the process.

Environment: TSM_BINARY, TSM_TEST_PLUGINS (cli_harness.py).
"""
import os
import signal
import subprocess
import unittest

import cli_harness as h

# Generous deadlines for a loaded machine: each wait ends as soon as its
# condition holds.
REACH_TIMEOUT_S = 60
EXIT_TIMEOUT_S = 30
POLL_S = 0.02

SLOW_DIR = h.plugin_dir("slow_startup")


class StartingNode:
    """One `simulate` whose slow_startup output blocks at startup; stdout and
    stderr go to files so that the test can read them while it runs."""

    def __init__(self, case, reporter, *args, hold=None):
        directory = case.make_dir()
        self.marker = os.path.join(directory, "reached")
        self.stderr_path = os.path.join(directory, "stderr")
        self.stdout_path = os.path.join(directory, "stdout")
        env = h.clean_environment({"TSM_TEST_STARTUP_MARKER": self.marker,
                                   "TSM_TEST_STARTUP_HOLD": hold or ""})
        self.args = [h.BINARY, "simulate", "--enable-metrics", "--metrics-port", "0",
                     "--metrics-reporters", reporter, "--metrics-plugin-dir", SLOW_DIR,
                     "--duration", "600", *args]
        with open(self.stdout_path, "w") as out, open(self.stderr_path, "w") as err:
            self.process = subprocess.Popen(self.args, stdout=out, stderr=err, env=env)
        case.addCleanup(self.kill)

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()

    def stderr(self):
        with open(self.stderr_path, encoding="utf-8", errors="replace") as err:
            return err.read()

    def stdout(self):
        with open(self.stdout_path, encoding="utf-8", errors="replace") as out:
            return out.read()

    def describe(self):
        return (f"command: {' '.join(self.args)}\nexit status: {self.process.returncode}\n"
                f"--- stdout\n{self.stdout()}--- stderr\n{self.stderr()}---")

    def wait_until(self, condition, what, timeout):
        if not h.eventually(condition, timeout, POLL_S):
            raise AssertionError(f"not within {timeout} s: {what}\n" + self.describe())

    def wait_for_startup_call(self):
        """Until the plugin's startup call has begun (and blocks)."""
        self.wait_until(lambda: os.path.exists(self.marker) or self.process.poll() is not None,
                        "the plugin's startup call began", REACH_TIMEOUT_S)
        if self.process.poll() is not None:
            raise AssertionError("simulate ended before startup reached the plugin\n" +
                                 self.describe())

    def wait_for_stderr(self, fragment):
        self.wait_until(lambda: fragment in self.stderr(), f"stderr contains {fragment!r}",
                        EXIT_TIMEOUT_S)

    def wait_for_exit(self):
        try:
            return self.process.wait(timeout=EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"simulate still running {EXIT_TIMEOUT_S} s after the "
                                 "signal\n" + self.describe()) from None


class SignalsDuringStartup(h.CliTestCase):

    def test_sigterm_while_validate_is_stuck_ends_the_process_after_the_grace(self):
        node = StartingNode(self, "slow_validate", "--metrics-shutdown-timeout", "1")
        node.wait_for_startup_call()
        node.process.send_signal(signal.SIGTERM)
        status = node.wait_for_exit()
        self.assertEqual(status, -signal.SIGTERM, node.describe())
        stderr = node.stderr()
        self.assertIn("tokenspeed-metrics: SIGTERM during startup: stopping as soon as startup "
                      "returns (at most 1 s; a second signal stops at once)", stderr)
        self.assertIn("tokenspeed-metrics: startup did not return within 1 s of SIGTERM",
                      stderr)

    def test_sigint_while_start_node_is_stuck_ends_the_process_after_the_grace(self):
        node = StartingNode(self, "slow_start_node", "--metrics-shutdown-timeout", "1")
        node.wait_for_startup_call()
        node.process.send_signal(signal.SIGINT)
        status = node.wait_for_exit()
        self.assertEqual(status, -signal.SIGINT, node.describe())
        self.assertIn("SIGINT during startup", node.stderr())

    def test_a_second_signal_during_startup_ends_the_process_at_once(self):
        # The grace (the shutdown budget, 600 s) is far longer than the deadline.
        node = StartingNode(self, "slow_validate", "--metrics-shutdown-timeout", "600")
        node.wait_for_startup_call()
        node.process.send_signal(signal.SIGTERM)
        node.wait_for_stderr("SIGTERM during startup")
        node.process.send_signal(signal.SIGINT)
        status = node.wait_for_exit()
        self.assertEqual(status, -signal.SIGINT, node.describe())
        self.assertIn("SIGINT again during startup: exiting at once", node.stderr())

    def test_sigterm_during_a_startup_that_returns_shuts_the_node_down_in_order(self):
        hold = os.path.join(self.make_dir(), "hold")
        with open(hold, "w", encoding="utf-8"):
            pass
        node = StartingNode(self, "slow_start_node", "--metrics-shutdown-timeout", "600",
                            hold=hold)
        node.wait_for_startup_call()
        node.process.send_signal(signal.SIGTERM)
        node.wait_for_stderr("SIGTERM during startup")
        os.remove(hold)  # start_node returns now
        status = node.wait_for_exit()
        self.assertEqual(status, 0, node.describe())
        self.assertIn("shutting down...", node.stdout())
        self.assertNotIn("did not return", node.stderr())


if __name__ == "__main__":
    unittest.main(verbosity=2)
