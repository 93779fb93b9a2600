"""test_full_filesystem.py — `tokenspeed-metrics simulate` with its base
directory (--metrics-multiproc-dir) on a small real tmpfs: no room for the
launcher's metric file is a startup error (exit status 2, one line); no room
for the producers' files leaves them recording, each saying so once.
Needs root to mount the tmpfs; skipped otherwise.

Environment: TSM_BINARY (cli_harness.py).
"""
import os
import subprocess
import tempfile
import unittest

import cli_harness


def mount_unavailable():
    """Why a tmpfs cannot be mounted here, or None."""
    if os.geteuid() != 0:
        return "needs root: mounts a small tmpfs as the base directory"
    return None


class SmallTmpfs:
    """A tmpfs of size_kib KiB (mode 0700) mounted on a fresh directory,
    unmounted and removed by close()."""

    def __init__(self, size_kib):
        self.path = tempfile.mkdtemp(prefix="tsm-tmpfs-", dir=cli_harness.TMP_ROOT)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k,mode=0700", "tmpfs",
                        self.path], check=True, capture_output=True)

    def close(self):
        subprocess.run(["umount", self.path], check=False, capture_output=True)
        os.rmdir(self.path)


@unittest.skipIf(mount_unavailable(), mount_unavailable())
class FullFilesystemTest(cli_harness.CliTestCase):

    def test_no_room_for_the_launchers_metric_file_is_a_startup_error_naming_file_and_flag(self):
        # Room for the run directory and its owner file, not for the 1 MiB
        # the launcher's metric file reserves.
        tmpfs = SmallTmpfs(256)
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
        tmpfs = SmallTmpfs(1280)
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


if __name__ == "__main__":
    unittest.main()
