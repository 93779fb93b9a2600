"""test_run_seconds.py — the largest --linger, a year, is a real linger:
/metrics keeps being served after the producers stopped, until SIGTERM.
(Values beyond a year, inf and nan are refused: test_cli_usage.py.)

Environment: as test_launcher.py.
"""
import signal
import unittest

import cli_harness
from test_launcher import Simulation, scrape

YEAR_S = 31536000


class LingerMaximum(unittest.TestCase):

    def test_a_linger_of_a_year_serves_metrics_until_sigterm(self):
        run = Simulation("--ranks", "1", "--duration", "0.5", "--linger", str(YEAR_S))
        self.addCleanup(run.kill)
        url = run.metrics_url()
        line = run.wait_for_line("producers stopped; serving /metrics for ")
        self.assertEqual(line, "producers stopped; serving /metrics for 3.1536e+07 s",
                         run.describe())
        # Still serving: the wait did not end at once.
        self.assertIn("tokenspeed:", scrape(url), run.describe())
        self.assertIsNone(run.process.poll(), run.describe())
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 0, run.describe())
        self.assertIn("shutting down...", run.stdout_lines, run.describe())


if __name__ == "__main__":
    cli_harness.main()
