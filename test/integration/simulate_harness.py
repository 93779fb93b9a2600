"""simulate_harness.py — what the integration tests that run the engine
simulator share: one `tokenspeed-metrics simulate` process with its output
collected on reader threads, its summary table, the pids of its processes,
their resident memory (from /proc) and scrapes of its /metrics; a simulate
run with prometheus and one output plugin configured from a settings object.
Starts only processes it stops again; everything binds 127.0.0.1.
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from eventually import eventually  # noqa: E402

# Hang guards only: a run that exceeds them has hung.
STARTUP_TIMEOUT_S = 60
EXIT_TIMEOUT_S = 60
# What process start-up and teardown may add to a shutdown budget on a busy
# machine. The faults these tests hold a close with last a minute or more, so
# a budget that was not kept still stands out.
SHUTDOWN_GRACE_S = 20.0


def make_tmp():
    root = os.environ.get("TSM_TEST_TMPDIR") or None
    if root:
        os.makedirs(root, exist_ok=True)
    return tempfile.mkdtemp(dir=root)


def free_port(kind=socket.SOCK_STREAM):
    """A loopback port nothing listens on right now."""
    with socket.socket(socket.AF_INET, kind) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def rss_kib(pid):
    """VmRSS of a process in KiB (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def scrape(url, timeout=10, context=None):
    """(status, body) of one GET on a fresh connection (context: the
    ssl.SSLContext of an https URL)."""
    with urllib.request.urlopen(url, timeout=timeout, context=context) as response:
        return response.status, response.read().decode()


def sample_values(exposition, name):
    """{frozenset(labels): value} of the samples called name."""
    from prometheus_client.parser import text_string_to_metric_families
    out = {}
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if sample.name == name:
                out[frozenset(sample.labels.items())] = sample.value
    return out


def sample_sum(exposition, name, **labels):
    """The sum of the samples called name whose labels include labels."""
    wanted = set(labels.items())
    return sum(value for key, value in sample_values(exposition, name).items() if wanted <= key)


PLUGIN_FIGURES_HEADING = "what the outputs' plugins report of the events delivered to them:"
PLUGIN_FIGURES_LINE = re.compile(
    r"^  (?P<process>\S+) (?P<output>\S+): (?P<sent>[0-9]+) sent, (?P<refused>[0-9]+) refused, "
    r"(?P<lost>[0-9]+) lost, (?P<retries>[0-9]+) retries, (?P<pending>[0-9]+) pending$")
PLUGIN_FIGURES = ("sent", "refused", "lost", "retries", "pending")


def plugin_figures(lines, output):
    """{process: {"sent", "refused", "lost", "retries", "pending"}} of one
    output from the summary's plugin figures lines (which follow the heading
    PLUGIN_FIGURES_HEADING); {} when no plugin of it reported any."""
    figures = {}
    inside = False
    for line in lines:
        if line == PLUGIN_FIGURES_HEADING:
            inside = True
            continue
        match = PLUGIN_FIGURES_LINE.match(line) if inside else None
        if match is None:
            inside = inside and line.startswith("  ")
            continue
        if match["output"] == output:
            figures[match["process"]] = {key: int(match[key]) for key in PLUGIN_FIGURES}
    return figures


def lost_events_status(counts):
    """The status column of a row whose plugin lost events (counts: its
    plugin figures) and that failed in no other way: "degraded (...)", or
    "failed: nothing delivered (...)" when the plugin sent none."""
    state = "degraded" if counts["sent"] else "failed: nothing delivered"
    return f"{state} (plugin: {counts['refused']} refused, {counts['lost']} lost)"


def lost_events_exit_status(figures):
    """simulate's exit status when the plugin figures of one output
    ({process: counts}) are all that went wrong: 3 when a process lost
    events and sent none, 5 when one lost events, else 0."""
    if any(counts["lost"] and not counts["sent"] for counts in figures.values()):
        return 3
    return 5 if any(counts["lost"] for counts in figures.values()) else 0


def assert_clean_plugin_figures(test, run, output, delivered, describe=""):
    """After a clean run, the plugin of output reported, for every process of
    the table, every event the host delivered to it as sent and none refused,
    lost or pending. delivered: {process: the host's delivered count}."""
    figures = run.plugin_figures(output)
    test.assertEqual(set(figures), set(delivered), describe)
    for process, counts in figures.items():
        test.assertEqual(counts["sent"], delivered[process], f"{process}: {counts}\n{describe}")
        test.assertEqual((counts["refused"], counts["lost"], counts["pending"]), (0, 0, 0),
                         f"{process}: {counts}\n{describe}")


def assert_plugin_series_for_every_process(test, exposition, output, figures, describe=""):
    """/metrics, scraped once the producers stopped (before the launcher's
    exit), holds tokenspeed_metrics_reporter_plugin_events_total of output
    with fate="sent" and the retries counter for each process of figures
    (run.plugin_figures(output)), the process label its name: a producer's
    equal to its final figures (it published them after its close), the
    launcher's (its sink still open then) at most its final ones. The
    pending gauge is live: it leaves with its process."""
    sent = {}
    for labels, value in sample_values(exposition,
                                       "tokenspeed_metrics_reporter_plugin_events_total").items():
        labels = dict(labels)
        if labels.get("reporter") == output and labels.get("fate") == "sent":
            sent[labels["process"]] = value
    retries = {}
    for labels, value in sample_values(exposition,
                                       "tokenspeed_metrics_reporter_plugin_retries_total").items():
        labels = dict(labels)
        if labels.get("reporter") == output:
            retries[labels["process"]] = value
    test.assertEqual(set(sent), set(figures), describe)
    test.assertEqual(set(retries), set(figures), describe)
    for process, counts in figures.items():
        if process == "launcher":
            test.assertLessEqual(sent[process], counts["sent"], describe)
        else:
            test.assertEqual((sent[process], retries[process]), (counts["sent"], counts["retries"]),
                             f"{process}: {counts}\n{describe}")


def assert_refused_over_max_series(test, run, output, destination, describe=""):
    """After a run whose output (an HTTP exporter of the kit) held fewer
    series than the engine records: its host rows delivered everything; its
    plugin accounted for each event delivered to it (sent + refused + lost +
    pending), refused those over max_series and lost none; a process whose
    plugin refused some has the status "ok (plugin: N refused, 0 lost)" and
    its close summary line on stderr, the others "ok". Returns the figures."""
    table = Simulation.output_table(run, output)
    figures = run.plugin_figures(output)
    test.assertEqual(set(figures), set(table), describe)
    for process, (_, accepted, delivered, dropped, discarded, status) in table.items():
        counts = figures[process]
        test.assertEqual((delivered, dropped, discarded), (accepted, 0, 0),
                         f"{process}\n{describe}")
        test.assertEqual(sum(counts[fate] for fate in ("sent", "refused", "lost", "pending")),
                         delivered, f"{process}: {counts}, delivered {delivered}\n{describe}")
        test.assertEqual((counts["lost"], counts["pending"]), (0, 0), f"{process}: {counts}")
        if counts["refused"] == 0:
            test.assertEqual(status, "ok", f"{process}\n{describe}")
            continue
        test.assertEqual(status, f"ok (plugin: {counts['refused']} refused, 0 lost)",
                         f"{process}\n{describe}")
        summary = (f"at close: {counts['refused']} of {delivered} events did not reach "
                   f"{destination}: {counts['refused']} refused (over max_series or invalid), "
                   f"0 lost")
        test.assertTrue(run.plugin_lines(summary), f"{summary}\n{describe}")
    return figures


def assert_engine_kept_going(test, url, during, describe=""):
    """/metrics kept counting while a fault lasted: tokenspeed's generated
    tokens grow after the fault has lasted at least during seconds."""
    def tokens():
        return sample_sum(scrape(url)[1], "tokenspeed:generation_tokens_total")
    before = tokens()
    time.sleep(during)  # the fault's minimum length, not a wait for a condition
    test.assertTrue(eventually(lambda: tokens() > before, EXIT_TIMEOUT_S), describe)


class Simulation:
    """One `simulate` process; its stdout and stderr are kept line by line.
    The one harness for it, also of the CLI tests (test/cli/test_launcher.py).
    command_prefix runs it under another program (unshare, for example)."""

    def __init__(self, args, env=None, command_prefix=()):
        self.args = [*command_prefix, os.environ["TSM_BINARY"], "simulate", *args]
        self.process = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env=env)
        self.stdout_lines = []
        self.stderr_lines = []
        self._changed = threading.Condition()
        self._readers = [threading.Thread(target=self._read, args=(stream, lines), daemon=True)
                         for stream, lines in ((self.process.stdout, self.stdout_lines),
                                               (self.process.stderr, self.stderr_lines))]
        for reader in self._readers:
            reader.start()

    def _read(self, stream, lines):
        for line in stream:
            with self._changed:
                lines.append(line.rstrip("\n"))
                self._changed.notify_all()

    def wait_for_line(self, prefix, timeout=STARTUP_TIMEOUT_S):
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self.stdout_lines:
                    if line.startswith(prefix):
                        return line
                left = deadline - time.monotonic()
                if left <= 0 or (self.process.poll() is not None and
                                 not self._readers[0].is_alive()):
                    raise AssertionError(f"no line starting {prefix!r}:\n{self.describe()}")
                self._changed.wait(min(left, 0.2))

    def has_line(self, prefix):
        """Whether stdout has printed a line starting with prefix so far."""
        with self._changed:
            return any(line.startswith(prefix) for line in self.stdout_lines)

    def metrics_url(self):
        return self.wait_for_line("Prometheus metrics: ").split(": ", 1)[1]

    def wait(self, timeout=EXIT_TIMEOUT_S):
        status = self.process.wait(timeout)
        for reader in self._readers:
            reader.join(timeout)
        self.process.stdout.close()
        self.process.stderr.close()
        return status

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
        self.wait()

    @property
    def stderr_text(self):
        """All of stderr so far, one string."""
        with self._changed:
            return "".join(line + "\n" for line in self.stderr_lines)

    def output_fields(self, output):
        """{process: [accepted, delivered, dropped, discarded, status]} of one
        output as printed in the summary table at exit (strings)."""
        rows = {}
        for line in self.stdout_lines:
            fields = line.split(None, 7)
            if len(fields) == 8 and fields[2] == output and fields[1].isdigit():
                rows[fields[0]] = fields[3:]
        return rows

    def output_table(self, output):
        """{process: (pid, accepted, delivered, dropped, discarded, status)} of
        one output, the counts as numbers."""
        rows = {}
        for line in self.stdout_lines:
            fields = line.split(None, 7)
            if len(fields) == 8 and fields[2] == output and fields[1].isdigit():
                numbers = [int(f) if f.isdigit() else f for f in fields[3:7]]
                rows[fields[0]] = (int(fields[1]), *numbers, fields[7])
        return rows

    def process_pids(self, output):
        """{process: pid} of the rows of one output in the summary table."""
        return {process: row[0] for process, row in Simulation.output_table(self, output).items()}

    def plugin_figures(self, output):
        """{process: {"sent", "refused", "lost", "retries", "pending"}} of one
        output, as its plugin reported them in the lines after the summary
        table ({} when its plugin reports none)."""
        return plugin_figures(self.stdout_lines, output)

    def plugin_lines(self, text):
        """The stderr lines that contain text."""
        return [line for line in self.stderr_lines if text in line]

    def children(self):
        """The pids of the running producer processes."""
        return self.pids()[1:]

    def producer_pids(self):
        """{name: pid} of the running producer processes, from their command
        lines (scheduler-<rank>, or the role)."""
        producers = {}
        for pid in self.children():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                    argv = cmdline.read().decode().split("\0")
            except OSError:
                continue
            if "producer" not in argv:
                continue
            role = argv[argv.index("--role") + 1]
            name = f"scheduler-{argv[argv.index('--dp-rank') + 1]}" if role == "scheduler" else role
            producers[name] = pid
        return producers

    def pids(self):
        """The launcher and its running producer processes."""
        pids = [self.process.pid]
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == self.process.pid:
                    pids.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
        return pids

    def describe(self):
        return (f"command: {' '.join(self.args)}\n--- stdout\n" + "\n".join(self.stdout_lines) +
                "\n--- stderr\n" + "\n".join(self.stderr_lines[-50:]) + "\n---")


class OutputSimulation(Simulation):
    """`simulate` with the built-in prometheus output on an ephemeral port and
    the plugin output called name, configured with settings (written to a
    configuration file in tmp) and loaded from plugin_dir; env: its whole
    environment (None: this process's)."""

    def __init__(self, tmp, name, settings, plugin_dir, *args, env=None):
        config = os.path.join(tmp, "metrics.json")
        with open(config, "w") as file:
            json.dump({name: settings}, file)
        super().__init__(["--enable-metrics", "--metrics-port", "0",
                          "--metrics-reporters", "prometheus", "--metrics-reporters", name,
                          "--metrics-reporter-config", config, "--metrics-plugin-dir", plugin_dir,
                          *args], env=env)
