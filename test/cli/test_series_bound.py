"""test_series_bound.py — the bound on series per family of the built-in
output (--metrics-max-series-per-family) through `tokenspeed-metrics`: a bad
value is a startup error naming the flag, and in a running node every process
refuses new label sets past the bound, counts them on /metrics and says so
once per family.
Environment: TSM_BINARY, TSM_TEST_PLUGINS (cli_harness.py).
"""
import re
import signal
import subprocess
import unittest

import cli_harness
from cli_harness import eventually
from test_launcher import STARTUP_TIMEOUT_S, Simulation, samples, scrape

FLAG = "--metrics-max-series-per-family"
FAMILY = "tokenspeed:func_latency_seconds"  # labelled by the simulated engine's functions


class SeriesBound(unittest.TestCase):

    def test_a_bound_outside_1_to_16777216_is_a_startup_error_naming_the_flag(self):
        for value in ("0", "-1", "16777217", "many", ""):
            for command in ("check", "simulate"):
                result = subprocess.run([cli_harness.BINARY, command, "--enable-metrics", FLAG, value],
                                        capture_output=True, text=True, timeout=STARTUP_TIMEOUT_S)
                self.assertEqual(result.returncode, 2, (command, value, result.stderr))
                self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
                self.assertIn(f"key '{FLAG}'", result.stderr)
        accepted = subprocess.run([cli_harness.BINARY, "check", "--enable-metrics", "--metrics-port",
                                   "0", FLAG, "1"],
                                  capture_output=True, text=True, timeout=STARTUP_TIMEOUT_S)
        self.assertEqual(accepted.returncode, 0, accepted.stderr)

    def test_past_the_bound_each_process_refuses_new_series_counts_them_and_says_so_once(self):
        run = Simulation("--ranks", "2", FLAG, "1")
        try:
            url = run.metrics_url()

            def refused():
                return sum(value for name, labels, value in samples(scrape(url))
                           if name == "tokenspeed_metrics_series_refused_total" and
                           labels == {"family": FAMILY})

            self.assertTrue(eventually(lambda: refused() > 0, 60), run.describe())
            exposition = samples(scrape(url))
            label_sets = {tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
                          for name, labels, _ in exposition if name.startswith(FAMILY + "_")}
            # At most one series per process that records the family.
            self.assertGreaterEqual(len(label_sets), 1)
            self.assertLessEqual(len(label_sets), 4, label_sets)
            run.process.send_signal(signal.SIGTERM)
            self.assertEqual(run.wait(), 0, run.describe())
        finally:
            run.kill()
        lines = [line for line in run.stderr_text.splitlines()
                 if f"metric '{FAMILY}' has 1 series in process" in line]
        self.assertGreaterEqual(len(lines), 1, run.describe())
        pids = [re.search(r"in process (\d+)", line).group(1) for line in lines]
        self.assertEqual(len(pids), len(set(pids)), "logged more than once in a process\n" +
                         run.describe())
        for line in lines:
            self.assertIn(FLAG, line)
            self.assertRegex(line, r"first refused: \{model_name=\"[^\"]*\", .*name=\"")


if __name__ == "__main__":
    unittest.main()
