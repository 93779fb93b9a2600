"""soak_overload.py — `simulate` at ten times the default rate with one output
stalled for a while and then recovering. The stalled output is the test
plugin pauses_in_emit (its emit blocks while a file exists: the fault of an
output stuck on its destination, which no real server shows on demand); the
other outputs are real: the built-in Prometheus /metrics and jsonl files.

It shows: the resident memory of every process stays flat (sampled from
/proc each second), the stalled output's overflow is counted as ring_full
drops, the accounting identity accepted = delivered + dropped + discarded
holds exactly per process, delivery resumes after the stall, and the other
outputs are untouched (jsonl: nothing dropped, every delivered event is a
line in its file; /metrics kept counting during the stall).

Environment (set by test/integration/meson.build):
  TSM_BINARY         the tokenspeed-metrics executable
  TSM_JSONL_DIR      the build folder holding jsonl.so
  TSM_PAUSE_DIR      the build folder holding pauses_in_emit.so
  TSM_TEST_TMPDIR    where temporary files go
  TSM_SOAK_SECONDS   length of the run (default 24; the long run: 300)
  TSM_SOAK_STALL_SECONDS  length of the stall (default 8; the long run: 60)
"""
import glob
import json
import os
import shutil
import signal
import time
import unittest

import simulate_harness as sh

RUN_S = float(os.environ.get("TSM_SOAK_SECONDS", "24"))
STALL_S = float(os.environ.get("TSM_SOAK_STALL_SECONDS", "8"))
# Ten times the defaults: 50 requests/s and a 10 ms iteration.
RATE_FLAGS = ["--request-rate", "500", "--iteration-ms", "1"]
QUEUE_SIZE = 65536
# What one process's resident memory may grow by after the warm-up: the
# rings of the stalled output fill (QUEUE_SIZE x 32 bytes per collector
# thread, 2 MiB each), plus allocator slack. A leak of the scale of the
# events (hundreds of thousands a minute) would exceed it.
RSS_GROWTH_LIMIT_KIB = 24 * 1024
# After the stall the rings are at their largest: from then on a process may
# not grow by more than allocator noise.
RSS_AFTER_STALL_LIMIT_KIB = 4 * 1024
STALLED = "pauses_in_emit"


def delivered(exposition, reporter):
    return sh.sample_sum(exposition, "tokenspeed_metrics_reporter_events_delivered_total",
                         reporter=reporter)


def ring_full_drops(exposition, reporter):
    return sh.sample_sum(exposition, "tokenspeed_metrics_reporter_events_dropped_total",
                         reporter=reporter, reason="ring_full")


class SoakUnderOverload(unittest.TestCase):
    maxDiff = None

    def test_a_stalled_output_loses_only_its_own_counted_events_and_memory_stays_flat(self):
        self.assertGreater(RUN_S, STALL_S + 8, "the run must outlast the stall")
        tmp = sh.make_tmp()
        self.addCleanup(shutil.rmtree, tmp, True)  # the jsonl files are large
        pause_file = os.path.join(tmp, "paused")
        config = os.path.join(tmp, "metrics.json")
        with open(config, "w") as file:
            json.dump({"jsonl": {"path": os.path.join(tmp, "events-{pid}.jsonl")},
                       STALLED: {"on": pause_file}}, file)
        run = sh.Simulation(
            ["--enable-metrics", "--metrics-port", "0",
             "--metrics-reporters", f"prometheus,jsonl,{STALLED}",
             "--metrics-reporter-config", config,
             "--metrics-plugin-dir", os.environ["TSM_JSONL_DIR"],
             "--metrics-plugin-dir", os.environ["TSM_PAUSE_DIR"],
             "--ranks", "2", *RATE_FLAGS, "--duration", str(RUN_S), "--linger", "60",
             "--metrics-reporter-queue-size", str(QUEUE_SIZE)])
        self.addCleanup(run.kill)
        url = run.metrics_url()
        started = time.monotonic()
        self.assertTrue(sh.eventually(lambda: len(run.pids()) == 4, sh.STARTUP_TIMEOUT_S),
                        run.describe())
        pids = run.pids()
        samples = []  # (seconds since start, {pid: RSS KiB}, phase)

        def sample(phase):
            samples.append((round(time.monotonic() - started, 1),
                            {pid: sh.rss_kib(pid) for pid in pids}, phase))

        def run_for(seconds, phase):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                sample(phase)
                time.sleep(min(1.0, max(0.0, end - time.monotonic())))

        warm_up = min(4.0, (RUN_S - STALL_S) / 4)
        run_for(warm_up, "warm-up")
        before_stall = sh.scrape(url)[1]
        self.assertGreater(delivered(before_stall, STALLED), 0, run.describe())

        with open(pause_file, "w"):
            pass
        stall_began = time.monotonic()
        run_for(STALL_S, "stalled")
        during_stall = sh.scrape(url)[1]
        os.unlink(pause_file)
        stall_ended = time.monotonic()
        sample("recovered")
        # The engine and the other outputs kept going while the stall lasted.
        self.assertGreater(sh.sample_sum(during_stall, "tokenspeed:generation_tokens_total"),
                           sh.sample_sum(before_stall, "tokenspeed:generation_tokens_total"))
        self.assertGreater(delivered(during_stall, "jsonl"), delivered(before_stall, "jsonl"))
        self.assertGreater(ring_full_drops(during_stall, STALLED), 0,
                           "the stall never filled a ring: the overload is too light")

        after_stall = delivered(sh.scrape(url)[1], STALLED)
        remaining = RUN_S - (time.monotonic() - started)
        run_for(max(remaining - 1.0, 2.0), "recovered")
        recovered = sh.scrape(url)[1]
        # Delivery resumed: the stalled output delivers again, and drops no more
        # once it has caught up.
        self.assertGreater(delivered(recovered, STALLED), after_stall)

        run.wait_for_line("producers stopped", timeout=sh.EXIT_TIMEOUT_S)
        final = sh.scrape(url)[1]
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 0, run.describe())

        # The accounting identity, exact, per process and output.
        stalled_rows = run.output_table(STALLED)
        jsonl_rows = run.output_table("jsonl")
        self.assertEqual(len(stalled_rows), 4, run.describe())
        self.assertEqual(len(jsonl_rows), 4, run.describe())
        total_dropped = 0
        for process, (_, accepted, delivered_, dropped, discarded, status) in stalled_rows.items():
            self.assertEqual(accepted, delivered_ + dropped + discarded, process)
            self.assertEqual((discarded, status), (0, "ok"), process)
            total_dropped += dropped
        self.assertGreater(total_dropped, 0)
        self.assertEqual(total_dropped, ring_full_drops(final, STALLED))
        # The other output is untouched: nothing dropped, every delivered event
        # is a line of its process's file.
        for process, (pid, accepted, delivered_, dropped, discarded, status) in jsonl_rows.items():
            self.assertEqual((accepted, dropped, discarded, status), (delivered_, 0, 0, "ok"),
                             process)
            with open(os.path.join(tmp, f"events-{pid}.jsonl"), "rb") as file:
                self.assertEqual(sum(1 for _ in file), delivered_, process)
        self.assertEqual(len(glob.glob(os.path.join(tmp, "events-*.jsonl"))), 4)

        # Memory: flat after the warm-up, and no growth at all once the rings
        # have been full.
        baseline = [s for s in samples if s[2] == "warm-up"][-1][1]
        stall_end_index = max(i for i, s in enumerate(samples) if s[2] == "stalled")
        for pid in pids:
            series = [s[1][pid] for s in samples if s[1][pid] > 0]
            self.assertLess(max(series) - baseline[pid], RSS_GROWTH_LIMIT_KIB,
                            f"pid {pid}: {series}")
            after = [s[1][pid] for s in samples[stall_end_index:] if s[1][pid] > 0]
            self.assertLess(max(after) - after[0], RSS_AFTER_STALL_LIMIT_KIB,
                            f"pid {pid} grew after the stall: {after}")

        report = {
            "run_s": RUN_S, "stall_s": STALL_S,
            "stall_window_s": [round(stall_began - started, 1), round(stall_ended - started, 1)],
            "rss_kib_per_pid_first_peak_last": {
                pid: [baseline[pid], max(s[1][pid] for s in samples), samples[-1][1][pid]]
                for pid in pids},
            "stalled_rows": stalled_rows, "jsonl_rows": jsonl_rows,
            "stalled_delivered_before_during_after": [
                delivered(before_stall, STALLED), delivered(during_stall, STALLED),
                delivered(final, STALLED)],
        }
        print(json.dumps(report, indent=1, default=str))
        if os.environ.get("TSM_SOAK_SAMPLES"):
            with open(os.environ["TSM_SOAK_SAMPLES"], "w") as file:
                json.dump({"report": report, "samples": samples}, file, default=str)


if __name__ == "__main__":
    unittest.main()
