"""statsd_faults.py — the statsd output never blocks the engine: a peer that
is down, a Unix socket that disappears and comes back (reconnected), and a
receiver that stops reading (a full send buffer) each drop datagrams that
are counted, logged and reported at close (the output's row fails, simulate
exits 3), while the run ends on time.
"""
import os
import signal
import unittest

import statsd_common as sc


class StatsdFaults(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.tmp = sc.make_tmp()
        self.runs = []
        self.receivers = []

    def tearDown(self):
        for run in self.runs:
            run.kill()
        for receiver in self.receivers:
            if receiver.running:
                receiver.close()

    def simulate(self, settings, *args, rate="200"):
        run = sc.Simulation(self.tmp, dict({"flavour": "dogstatsd"}, **settings),
                            "--ranks", "1", "--request-rate", rate, *args)
        self.runs.append(run)
        return run

    def assert_lost_and_reported(self, run):
        self.assertEqual(run.wait(), 3, run.describe())
        failed = {p: row for p, row in run.output_rows().items() if row[4].startswith("failed")}
        self.assertTrue(failed, run.describe())
        self.assertTrue(run.plugin_lines("datagrams dropped"), run.describe())

    def test_a_peer_that_is_down_blocks_nothing_and_its_drops_are_counted(self):
        port = sc.free_port(sc.socket.SOCK_DGRAM)
        run = self.simulate({"address": f"127.0.0.1:{port}", "flush_interval_ms": 50},
                            "--duration", "2")
        self.assert_lost_and_reported(run)
        self.assertTrue(run.plugin_lines("Connection refused"), run.describe())

    def test_a_unix_socket_that_goes_away_and_comes_back_is_reconnected(self):
        path = os.path.join(self.tmp, "dsd.sock")
        first = sc.DogstatsdReceiver(unix_path=path)
        self.receivers.append(first)
        run = self.simulate({"address": "unix://" + path, "flush_interval_ms": 50},
                            "--duration", "6")
        self.assertTrue(sc.eventually(lambda: first.snapshot()[2] > 0, 60), run.describe())
        first.close()  # the socket file is gone
        sc.eventually(lambda: run.plugin_lines("datagrams dropped"), 10)
        self.assertTrue(run.plugin_lines("datagrams dropped"), run.describe())
        second = sc.DogstatsdReceiver(unix_path=path)
        self.receivers.append(second)
        self.assertTrue(sc.eventually(lambda: second.snapshot()[2] > 0, 60),
                        "nothing arrived after the socket came back\n" + run.describe())
        self.assert_lost_and_reported(run)
        self.assertEqual(second.snapshot()[1], [])

    def test_a_receiver_that_stops_reading_fills_the_buffer_and_drops_without_blocking(self):
        path = os.path.join(self.tmp, "full.sock")
        receiver = sc.DogstatsdReceiver(unix_path=path)
        receiver.reading.clear()  # never reads: the socket's queue fills up
        self.receivers.append(receiver)
        run = self.simulate({"address": "unix://" + path, "flush_interval_ms": 10,
                             "max_datagram_bytes": 512, "aggregation": False},
                            "--duration", "2", rate="500")
        self.assert_lost_and_reported(run)
        self.assertTrue(run.plugin_lines("Resource temporarily unavailable"), run.describe())

    def test_lines_longer_than_a_datagram_are_refused_never_counted_as_sent(self):
        # 64 bytes hold no tagged line of the engine: every event is left out.
        receiver = sc.DogstatsdReceiver()
        self.receivers.append(receiver)
        run = self.simulate({"address": receiver.address, "flush_interval_ms": 50,
                             "max_datagram_bytes": 64}, "--duration", "2")
        self.assertEqual(run.wait(), 3, run.describe())
        self.assertTrue(run.plugin_lines("oversized lines"), run.describe())
        figures = run.plugin_figures("statsd")
        rows = run.output_rows()
        self.assertEqual(set(figures), set(rows), run.describe())
        for process, row in rows.items():
            counts = figures[process]
            delivered = int(row[1])
            self.assertEqual(counts["sent"] + counts["refused"] + counts["lost"] +
                             counts["pending"], delivered, f"{process}: {counts}")
            self.assertEqual((counts["sent"], counts["lost"], counts["pending"]), (0, 0, 0),
                             f"{process}: {counts}")
            self.assertEqual(counts["refused"], delivered, f"{process}: {counts}")
        self.assertEqual(receiver.snapshot()[2], 0, "a datagram arrived")


if __name__ == "__main__":
    unittest.main()
