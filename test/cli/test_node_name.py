"""test_node_name.py — the node's name in the outputs' process identity
(--metrics-node-name): a bad value is a startup error naming the flag, in one
line, from `check` and `simulate` alike; a good one is accepted.
Environment: TSM_BINARY (cli_harness.py).
"""
import subprocess
import unittest

import cli_harness
from test_launcher import STARTUP_TIMEOUT_S

FLAG = "--metrics-node-name"


def run(command, *args):
    return subprocess.run([cli_harness.BINARY, command, "--enable-metrics", "--metrics-port", "0",
                           *args], capture_output=True, text=True, timeout=STARTUP_TIMEOUT_S)


class NodeName(unittest.TestCase):

    def test_a_name_a_back_end_would_take_apart_is_a_startup_error_naming_the_flag(self):
        for value in ("", "gpu node", "eu/1", "a,b", 'a"b', "tab\there", "é", "x" * 254):
            for command in ("check", "simulate"):
                result = run(command, FLAG, value)
                self.assertEqual(result.returncode, 2, (command, value, result.stderr))
                self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
                self.assertIn(f"key '{FLAG}'", result.stderr)

    def test_a_host_name_like_value_is_accepted(self):
        for value in ("gpu-node-7", "node_7.eu-west-1.internal", "x" * 253):
            result = run("check", FLAG, value)
            self.assertEqual(result.returncode, 0, (value, result.stderr))


if __name__ == "__main__":
    unittest.main()
