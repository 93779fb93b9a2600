"""test_jsonl_full_disk.py — the jsonl output writing to a filesystem that
fills up (a real tmpfs of 256 KiB, mounted for the test; needs root,
skipped otherwise): every file ends in a complete line, every line is JSON,
and the figures each process's plugin reports equal its file: sent is the
number of lines, and sent + refused + lost the events the host delivered to
the plugin.

Environment: as test_launcher.py.
"""
import json
import os
import re
import shutil
import signal
import tempfile
import unittest

import cli_harness
from cli_harness import eventually
from test_launcher import JSONL_DIR, Simulation, samples, scrape
from test_plugin_figures import table_rows

import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from simulate_harness import plugin_figures  # noqa: E402

TMPFS_KIB = 256

SKIP_REASON = cli_harness.tmpfs_unavailable()


@unittest.skipIf(SKIP_REASON is not None, SKIP_REASON)
class JsonlOnAFullDisk(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tsm-full-disk-", dir=cli_harness.TMP_ROOT)
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        disk = cli_harness.SmallTmpfs(TMPFS_KIB)
        self.addCleanup(disk.close)
        self.disk = disk.path

    @staticmethod
    def events_lost(url):
        """True once some process's jsonl plugin reports events lost (a write
        failed for want of space), as /metrics shows it."""
        try:
            found = samples(scrape(url))
        except OSError:
            return False
        return any(name == "tokenspeed_metrics_reporter_plugin_events_total" and
                   labels.get("reporter") == "jsonl" and labels.get("fate") == "lost" and value > 0
                   for name, labels, value in found)

    def test_figures_equal_the_complete_lines_of_each_file_and_no_line_is_torn(self):
        config = os.path.join(self.tmp, "metrics.json")
        with open(config, "w") as file:
            json.dump({"jsonl": {"path": os.path.join(self.disk, "events-{pid}.jsonl"),
                                 "flush_interval_ms": 20, "buffer_bytes": 4096}}, file)
        run = Simulation("--metrics-reporters", "prometheus,jsonl",
                         "--metrics-reporter-config", config, "--metrics-plugin-dir", JSONL_DIR,
                         "--ranks", "2", "--request-rate", "500")
        self.addCleanup(run.kill)
        url = run.metrics_url()
        lost = eventually(lambda: self.events_lost(url) or run.process.poll() is not None)
        self.assertIsNone(run.process.poll(), run.describe())
        self.assertTrue(lost, f"no jsonl write failed on the full {TMPFS_KIB} KiB tmpfs\n"
                              f"{run.describe()}")
        run.process.send_signal(signal.SIGTERM)
        # 3: an output failed (its write failed for want of space).
        self.assertEqual(run.wait(), 3, run.describe())
        describe = run.describe()

        rows = table_rows(run, "jsonl")
        figures = plugin_figures(run.stdout_lines, "jsonl")
        self.assertEqual(set(figures), set(rows), describe)
        self.assertIn("launcher", rows, describe)
        lost = 0
        for process, (pid, _accepted, delivered, _dropped, _discarded, _status) in rows.items():
            counts = figures[process]
            path = os.path.join(self.disk, f"events-{pid}.jsonl")
            with open(path, "rb") as file:
                data = file.read()
            if data:
                self.assertTrue(data.endswith(b"\n"), f"{path} ends in a partial line")
            lines = data.split(b"\n")[:-1] if data else []
            for number, line in enumerate(lines, 1):
                try:
                    json.loads(line)
                except ValueError as error:
                    self.fail(f"{path}:{number} is not JSON ({error}): {line[:200]!r}")
            self.assertEqual(counts["sent"], len(lines), f"{process}: {counts}\n{describe}")
            self.assertEqual(counts["pending"], 0, f"{process}: {counts}\n{describe}")
            self.assertEqual(counts["sent"] + counts["refused"] + counts["lost"], delivered,
                             f"{process}: {counts}, delivered {delivered}\n{describe}")
            lost += counts["lost"]
        # The disk really was full: some process lost events to it.
        self.assertGreater(lost, 0, describe)
        self.assertRegex(run.stderr_text, re.escape(self.disk) + r"/events-[0-9]+\.jsonl: "
                         r"No space left on device")


if __name__ == "__main__":
    cli_harness.main()
