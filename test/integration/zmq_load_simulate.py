"""zmq_load_simulate.py — the zmq_load output in the real `simulate` (two
scheduler ranks, the tokenspeed preset): each rank's feed, on the endpoint's
port plus its rank, carries the values /metrics shows for it (running,
waiting, round(KV ratio x the configured capacity)); the plugin reports
every event it got as sent, on /metrics too; a port already in use is a
startup error, exit 2, one line naming the reporter and the port.
"""
import signal
import socket
import unittest

import simulate_harness
import zmq_load_common as zc

CAPACITY = 100000


class Simulation(simulate_harness.OutputSimulation):
    def __init__(self, tmp, settings, *args):
        super().__init__(tmp, "zmq_load", settings, zc.PLUGIN_DIR, *args)


class ZmqLoadInSimulate(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.tmp = zc.make_tmp()
        self.port = zc.free_ports(2)
        self.settings = {"endpoint": f"tcp://127.0.0.1:{self.port}",
                         "max_total_num_tokens": CAPACITY, "startup_ranks": 2}
        self.cleanups = []

    def tearDown(self):
        for cleanup in reversed(self.cleanups):
            cleanup()

    def simulate(self, *args):
        run = Simulation(self.tmp, self.settings, *args)
        self.cleanups.append(run.kill)
        return run

    def expected_stats(self, exposition):
        """{rank: the LoadStat /metrics implies}."""
        def gauge(name):
            return {int(dict(labels)["dp_rank"]): value for labels, value in
                    simulate_harness.sample_values(exposition, name).items()}
        running = gauge("tokenspeed:num_requests_running")
        waiting = gauge("tokenspeed:num_requests_waiting")
        kv = gauge("tokenspeed:kv_cache_usage_perc")
        return {rank: ["LoadStat", int(running[rank]), int(waiting.get(rank, 0)),
                       round(kv.get(rank, 0) * CAPACITY), CAPACITY, rank] for rank in running}

    def agreement(self, url, subs):
        """The ranks whose last LoadStat equals what /metrics shows, read
        between two looks at the feed that saw no new message."""
        before = [sub.snapshot()[-1:] for sub in subs]
        expected = self.expected_stats(simulate_harness.scrape(url)[1])
        after = [sub.snapshot()[-1:] for sub in subs]
        agreed = set()
        for rank in (0, 1):
            if before[rank] and before[rank] == after[rank] and rank in expected:
                if zc.payload(after[rank][0][1]) == expected[rank]:
                    agreed.add(rank)
                else:
                    self.mismatches[rank] = (zc.payload(after[rank][0][1]), expected[rank])
        return agreed

    def test_each_ranks_feed_agrees_with_its_metrics_gauges(self):
        subs = [zc.Subscriber(f"tcp://127.0.0.1:{self.port + rank}") for rank in (0, 1)]
        for sub in subs:
            self.cleanups.append(sub.close)
        run = self.simulate("--ranks", "2", "--request-rate", "20", "--duration", "20",
                            "--linger", "60")
        url = run.metrics_url()
        # The gauges move while the engine runs: each rank agrees at some scrape.
        self.mismatches = {}
        agreed = set()
        zc.eventually(lambda: agreed.update(self.agreement(url, subs)) or agreed == {0, 1},
                      zc.EXIT_TIMEOUT_S, interval=0.2)
        self.assertEqual(agreed, {0, 1}, f"last mismatches: {self.mismatches}")
        for sub in subs:
            self.assertTrue(all(f[0] == b"load" for _, f in sub.snapshot()))
        run.wait_for_line("producers stopped", timeout=zc.EXIT_TIMEOUT_S)
        exposition = simulate_harness.scrape(url)[1]
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 0, run.describe())
        figures = run.plugin_figures("zmq_load")
        self.assertTrue(figures, run.describe())
        for process, counts in figures.items():
            self.assertEqual((counts["refused"], counts["lost"]), (0, 0), f"{process}: {counts}")
        simulate_harness.assert_plugin_series_for_every_process(
            self, exposition, "zmq_load", figures, run.describe())

    def test_a_port_in_use_is_a_startup_error_naming_it(self):
        taken = socket.socket()
        self.cleanups.append(taken.close)
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", self.port + 1))
        taken.listen()
        run = self.simulate("--ranks", "2", "--duration", "1")
        self.assertEqual(run.wait(), 2, run.describe())
        lines = [line for line in run.stderr_lines if line.strip()]
        self.assertEqual(len(lines), 1, run.describe())
        self.assertIn("reporter 'zmq_load'", lines[0])
        self.assertIn(f"port {self.port + 1}", lines[0])


if __name__ == "__main__":
    unittest.main()
