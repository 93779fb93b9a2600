"""test_containers.py — `tokenspeed-metrics simulate` as it runs in containers:
the launcher as PID 1 of its PID namespace (a container without an init
process, stopped with SIGTERM as `docker stop` does; reaping the sink helper
a crashed producer leaves it), and two launchers in
separate PID namespaces sharing one base directory (a shared volume or a
shared /tmp). Needs root for `unshare --pid`; skipped otherwise.

Environment: TSM_BINARY (cli_harness.py), TSM_JSONL_PLUGIN_DIR (the build
folder holding jsonl.so).
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import tempfile
import unittest
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

import cli_harness
import test_launcher
from cli_harness import eventually

JSONL_DIR = os.environ["TSM_JSONL_PLUGIN_DIR"]

# unshare --kill-child: the namespace's processes never outlive the test.
UNSHARE = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]


def unshare_unavailable():
    """Why these tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root: unshare --pid creates a PID namespace"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    probe = subprocess.run(UNSHARE + ["true"], capture_output=True, text=True, timeout=60,
                           check=False)
    if probe.returncode != 0:
        return f"unshare --pid does not work here: {probe.stderr.strip()}"
    return None


def scrape(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def samples(url):
    """[(name, labels, value)] of one scrape; [] when it fails."""
    try:
        text = scrape(url)
    except OSError:
        return []
    return [(sample.name, sample.labels, sample.value)
            for family in text_string_to_metric_families(text) for sample in family.samples]


def producers_recording(url, ranks):
    """True when every producer's series are on /metrics: the live gauge of
    each scheduler rank and the frontend's request counter."""
    found = samples(url)
    gauge_ranks = {labels.get("dp_rank") for name, labels, _ in found
                   if name == "tokenspeed:num_requests_running"}
    requests = sum(value for name, _, value in found if name == "tokenspeed:num_requests_total")
    return gauge_ranks == {str(rank) for rank in range(ranks)} and requests > 0


class NamespacedSimulation(test_launcher.Simulation):
    """`simulate` run as PID 1 of a new PID namespace."""

    def __init__(self, *args):
        super().__init__(*args, command_prefix=UNSHARE, env=cli_harness.clean_environment())

    def launcher_pid(self):
        """The launcher's pid as seen from here: the child of unshare, which
        is PID 1 inside the namespace."""
        def child():
            for stat_path in glob.glob("/proc/[0-9]*/stat"):
                try:
                    with open(stat_path) as stat:
                        fields = stat.read().rsplit(")", 1)[1].split()
                except (OSError, IndexError):
                    continue
                if int(fields[1]) == self.process.pid:
                    return int(stat_path.split("/")[2])
            return None
        return eventually(child, what="the launcher runs under unshare")

    def stop(self):
        """SIGTERM to the launcher, as `docker stop` sends it to PID 1."""
        os.kill(self.launcher_pid(), signal.SIGTERM)


def children_of(parent):
    """{pid: (state, argv)} of the processes whose parent is parent."""
    children = {}
    for stat_path in glob.glob("/proc/[0-9]*/stat"):
        pid = int(stat_path.split("/")[2])
        try:
            with open(stat_path) as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            if int(fields[1]) != parent:
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                argv = cmdline.read().decode(errors="replace").split("\0")
        except (OSError, IndexError, ValueError):
            continue
        children[pid] = (fields[0], argv)
    return children


SKIP_REASON = unshare_unavailable()


@unittest.skipIf(SKIP_REASON is not None, SKIP_REASON)
class ContainerTest(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tsm-containers-", dir=cli_harness.TMP_ROOT)
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.base = os.path.join(self.tmp, "shared")
        self.simulations = []

    def tearDown(self):
        for simulation in self.simulations:
            simulation.kill()

    def simulate(self, *args):
        simulation = NamespacedSimulation("--metrics-multiproc-dir", self.base, *args)
        self.simulations.append(simulation)
        return simulation

    def run_dirs(self):
        return sorted(glob.glob(os.path.join(self.base, "run-*")))

    def test_a_launcher_that_is_pid_1_keeps_its_producers_to_the_end_of_its_run(self):
        config = os.path.join(self.tmp, "metrics.json")
        with open(config, "w") as file:
            json.dump({"jsonl": {"path": os.path.join(self.tmp, "events-{pid}.jsonl")}}, file)
        run = self.simulate("--metrics-reporters", "prometheus", "--metrics-reporters", "jsonl",
                            "--metrics-reporter-config", config, "--metrics-plugin-dir", JSONL_DIR,
                            "--ranks", "2", "--duration", "4")
        self.assertEqual(run.wait(), 0, run.describe())
        self.assertNotIn("exited", run.stderr_text, run.describe())
        # One row per process, each of which recorded to the end and closed.
        rows = {line.split()[0]: line.split() for line in run.stdout_lines
                if " jsonl " in line}
        self.assertEqual(set(rows), {"launcher", "scheduler-0", "scheduler-1", "frontend"},
                         run.describe())
        for name, row in rows.items():
            self.assertEqual(row[-1], "ok", f"{name}: {row}")
        delivered = {name: int(row[4]) for name, row in rows.items()}
        for name in ("scheduler-0", "scheduler-1", "frontend"):
            self.assertGreater(delivered[name], 0, run.describe())
        self.assertEqual(self.run_dirs(), [], "the run directory is removed at exit")

    def test_a_launcher_that_is_pid_1_reaps_the_sink_helper_of_a_crashed_producer(self):
        # The helper of an isolated output is the producer's child; when the
        # producer dies it dies too (its parent-death signal) and is handed
        # to PID 1, the launcher, which must reap it while it runs on.
        config = os.path.join(self.tmp, "metrics.json")
        with open(config, "w") as file:
            json.dump({"jsonl": {"path": os.path.join(self.tmp, "events-{pid}.jsonl"),
                                 "isolation": "process"}}, file)
        run = self.simulate("--metrics-reporters", "prometheus,jsonl",
                            "--metrics-reporter-config", config, "--metrics-plugin-dir", JSONL_DIR,
                            "--ranks", "1", "--on-producer-crash", "continue")
        run.metrics_url()
        launcher = run.launcher_pid()

        def scheduler_and_helper():
            for pid, (_, argv) in children_of(launcher).items():
                if "producer" in argv and "scheduler" in argv:
                    helpers = [child for child, (_, child_argv) in children_of(pid).items()
                               if child_argv[0].endswith("tokenspeed-metrics-sink-helper")]
                    if helpers:
                        return pid, helpers[0]
            return None
        scheduler, helper = eventually(scheduler_and_helper,
                                       what="the scheduler producer and its sink helper")

        os.kill(scheduler, signal.SIGKILL)

        def helper_reaped():
            try:
                with open(f"/proc/{helper}/stat") as stat:
                    stat.read()
            except FileNotFoundError:
                return True
            return False
        eventually(helper_reaped, what=f"the crashed producer's sink helper (pid {helper}) reaped")
        eventually(lambda: not any(state == "Z" for state, _ in children_of(launcher).values()),
                   what="no zombie child of the launcher")
        self.assertIsNone(run.process.poll(), run.describe())

        run.stop()
        self.assertEqual(run.wait(), 4, run.describe())  # 4: a producer crashed
        self.assertRegex(run.stderr_text,
                         r"producer 'scheduler-0' \(pid [0-9]+\) crashed: killed by SIGKILL")

    def test_sigterm_to_a_launcher_that_is_pid_1_stops_the_node_cleanly(self):
        run = self.simulate("--ranks", "2", "--metrics-shutdown-timeout", "5")
        url = run.metrics_url()
        eventually(lambda: producers_recording(url, 2), what="every producer's series on /metrics")
        self.assertEqual(len(self.run_dirs()), 1)

        run.stop()
        self.assertEqual(run.wait(), 0, run.describe())
        self.assertIn("stopped in", "\n".join(run.stdout_lines), run.describe())
        self.assertEqual(self.run_dirs(), [], "the run directory is removed at exit")

    def test_a_second_launcher_in_another_pid_namespace_never_removes_a_live_run_directory(self):
        first = self.simulate("--ranks", "2")
        first_url = first.metrics_url()
        eventually(lambda: producers_recording(first_url, 2),
                   what="the first launcher's producers on its /metrics")
        first_dirs = self.run_dirs()
        self.assertEqual(len(first_dirs), 1, first_dirs)
        first_dir = first_dirs[0]
        files = sorted(os.listdir(first_dir))

        # Both launchers are PID 1 in their own namespaces: by pid, each
        # looks like the other's owner.
        second = self.simulate("--ranks", "1")
        second_url = second.metrics_url()  # its start, stale cleanup included, is over
        eventually(lambda: producers_recording(second_url, 1),
                   what="the second launcher's producers on its /metrics")

        self.assertTrue(os.path.isdir(first_dir), "the first launcher's run directory is gone")
        for name in files:
            self.assertTrue(os.path.exists(os.path.join(first_dir, name)), name)
        self.assertEqual(len(self.run_dirs()), 2, self.run_dirs())
        self.assertTrue(producers_recording(first_url, 2),
                        "the first launcher's series left its /metrics")

        first.stop()
        second.stop()
        self.assertEqual(first.wait(), 0, first.describe())
        self.assertEqual(second.wait(), 0, second.describe())
        self.assertEqual(self.run_dirs(), [])


if __name__ == "__main__":
    cli_harness.main()
