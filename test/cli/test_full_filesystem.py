"""test_full_filesystem.py — `tokenspeed-metrics simulate` with its base
directory (--metrics-multiproc-dir) on a small real tmpfs: no room for the
launcher's metric file is a startup error (exit status 2, one line); no room
for the producers' files leaves them recording, each saying so once.
Needs root to mount the tmpfs; skipped otherwise.

Environment: TSM_BINARY (cli_harness.py).
"""
import unittest

import cli_harness


@unittest.skipIf(cli_harness.tmpfs_unavailable(), cli_harness.tmpfs_unavailable())
class FullFilesystemTest(cli_harness.CliTestCase):

    def test_no_room_for_the_launchers_metric_file_is_a_startup_error_naming_file_and_flag(self):
        # Room for the run directory and its owner file, not for the 1 MiB
        # the launcher's metric file reserves.
        tmpfs = cli_harness.SmallTmpfs(256)
        self.addCleanup(tmpfs.close)
        result = cli_harness.run("simulate", "--enable-metrics", "--metrics-port", "0",
                                 "--metrics-multiproc-dir", tmpfs.path, "--duration", "0.1")
        line = self.assert_startup_error(result, "reporter 'prometheus'",
                                         "key '--metrics-multiproc-dir'",
                                         "cannot create the metric file",
                                         "No space left on device")
        self.assertIn("file '" + tmpfs.path + "/run-", line)
        self.assertIn("launcher_", line)

    def test_producers_without_room_for_their_metric_files_record_on_and_say_so(self):
        # Room for the launcher's 1 MiB file, not for a producer's.
        tmpfs = cli_harness.SmallTmpfs(1280)
        self.addCleanup(tmpfs.close)
        result = cli_harness.run("simulate", "--enable-metrics", "--metrics-port", "0",
                                 "--metrics-multiproc-dir", tmpfs.path, "--ranks", "2",
                                 "--duration", "0.5")
        self.assertEqual(result.status, 0, result.describe())
        for process in ("scheduler-0", "scheduler-1", "frontend"):
            lines = [line for line in result.stderr_lines
                     if "cannot create the metric file" in line and "/" + process + "_" in line]
            self.assertEqual(len(lines), 1, result.describe())
            self.assertIn("No space left on device", lines[0])
        self.assertNotIn("the metric file is closed", result.stderr)
        # The table says which totals /metrics lacks, not that all are there.
        totals = [line for line in result.stdout_lines if line.startswith("outputs: Prometheus")]
        self.assertEqual(len(totals), 1, result.describe())
        self.assertIn("could not store", totals[0])
        self.assertIn("3 process(es)", totals[0])
        self.assertIn("tokenspeed_metrics_prometheus_unstored_events_total", totals[0])


if __name__ == "__main__":
    unittest.main()
