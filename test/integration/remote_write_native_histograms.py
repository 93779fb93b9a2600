"""remote_write_native_histograms.py — after a `simulate --native-histograms`
run with prometheus and remote_write, a real Prometheus 2.42 started with
--enable-feature=native-histograms holds each of the engine's histograms as
one native histogram series of the family's name (no _bucket, _sum or _count
series): per series, `sum without (process)` of the pushed histograms has the
scrape's _count and _sum, and its histogram_quantile(0.5) lies in the bucket
that holds the median the scrape's le lines give (or its neighbour, when the
median sits on their shared edge). Counters still agree, the
plugin reports every event sent, and every native series of a stopped process
ends in a stale marker. A Prometheus without the feature flag refuses each
request that holds a native histogram with a 500 (nothing of it is stored);
with native_histograms off it takes the histograms as classic series.
"""
import math
import signal
import unittest

from prometheus_client.parser import text_string_to_metric_families

import remote_write_common as rw
import simulate_harness


class NativePrometheus(rw.Prometheus):
    """A Prometheus 2.42 whose TSDB takes native histograms (without the
    feature flag it refuses them)."""

    def command(self):
        return super().command() + ["--enable-feature=native-histograms"]


def scraped_histograms(exposition):
    """{(family, frozenset(labels)): {"count", "sum", "buckets": [(le, cumulative)]}}
    of the engine's histogram families, buckets ascending."""
    out = {}
    for family in text_string_to_metric_families(exposition):
        if family.type != "histogram" or not family.name.startswith("tokenspeed:"):
            continue
        for sample in family.samples:
            labels = dict(sample.labels)
            le = labels.pop("le", None)
            entry = out.setdefault((family.name, frozenset(labels.items())),
                                   {"count": None, "sum": None, "buckets": []})
            if sample.name.endswith("_bucket"):
                entry["buckets"].append((float(le), sample.value))
            elif sample.name.endswith("_count"):
                entry["count"] = sample.value
            elif sample.name.endswith("_sum"):
                entry["sum"] = sample.value
    for entry in out.values():
        entry["buckets"].sort()
    return out


def classic_quantile(q, buckets):
    """(quantile, lowest, highest) as Prometheus computes histogram_quantile
    from cumulative le buckets: linear within the bucket that holds rank q.
    lowest and highest bound any estimate from the same buckets: the bucket
    holding the rank, widened to its neighbour when the rank sits on their
    shared edge, since a count summed in another order (the receiver's sum
    over processes) may put the rank a rounding error to either side."""
    total = buckets[-1][1]
    rank = q * total
    at_edge = lambda cumulative: math.isclose(cumulative, rank, rel_tol=1e-9, abs_tol=1e-12)
    edges = [0.0] + [le for le, _ in buckets]
    lower, below = 0.0, 0.0
    for i, (le, cumulative) in enumerate(buckets):
        if cumulative >= rank:
            if math.isinf(le):
                return lower, lower, lower
            lowest = edges[i - 1] if i > 0 and at_edge(below) else lower
            highest = edges[i + 2] if i + 2 < len(edges) and at_edge(cumulative) else le
            if math.isinf(highest):
                highest = le
            if cumulative == below:
                return le, lowest, highest
            return lower + (le - lower) * (rank - below) / (cumulative - below), lowest, highest
        lower, below = le, cumulative
    return lower, lower, lower


def pushed_labels(result):
    labels = dict(result["metric"])
    labels.pop("__name__", None)
    if labels.get("node") == rw.NODE:
        del labels["node"]
    return frozenset(labels.items())


class NativeRun(rw.ReceiverRuns):
    """Mixed into a TestCase whose server_class is its receiver: one
    `simulate --native-histograms` run into it at a time."""

    def simulate(self, settings=None):
        return super().simulate(settings or {}, "--native-histograms", "--ranks", "2",
                                "--request-rate", "200", "--duration", "2", "--linger", "60",
                                "--metrics-reporter-queue-size", "1048576")

    def run_to_the_end(self, settings=None):
        run = self.simulate(settings)
        url = run.metrics_url()
        run.wait_for_line("producers stopped", timeout=rw.EXIT_TIMEOUT_S)
        exposition = rw.scrape(url)
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 0, run.describe())
        table = run.output_table()
        for process, row in table.items():
            self.assertEqual(row[2:], ["0", "0", "ok"], f"{process}: {row}")
        # No warning: every histogram went out as asked (none native as classic).
        self.assertFalse(run.plugin_lines("plugin 'remote_write'"), run.describe())
        delivered = {process: int(row[1]) for process, row in table.items()}
        simulate_harness.assert_clean_plugin_figures(self, run, "remote_write", delivered,
                                                     run.describe())
        return exposition


class NativeHistogramsOnPrometheus(rw.OnPrometheus, NativeRun, unittest.TestCase):
    server_class = NativePrometheus

    def at_last_push(self, name):
        """PromQL of every pushed series of name at its process's last push:
        `name{process="p"} @ t or ...`. Each series ends in a stale marker
        and Prometheus 2.42's last_over_time drops histograms, so the @
        modifier evaluates each process's series at its own final timestamp."""
        last = {}
        for result in self.server.query(f"{name}[{rw.WINDOW}]"):
            process = result["metric"].get("process")
            stamps = [point[0] for point in result.get("histograms", [])]
            self.assertTrue(stamps, f"{name}: no native histogram sample in {result}")
            last[process] = max(last.get(process, 0), max(stamps))
        if not last:
            return None
        return " or ".join(f'{name}{{process="{process}"}} @ {stamp:.3f}'
                           for process, stamp in sorted(last.items()))

    def pushed_histograms(self, name):
        """{labels: the `histogram` value} of sum without (process) over the
        last pushed histogram of each series of name."""
        selector = self.at_last_push(name)
        if selector is None:
            return {}
        query = f"sum without (process) ({selector})"
        out = {}
        for result in self.server.query(query):
            self.assertIn("histogram", result, f"{query}: not a native histogram: {result}")
            out[pushed_labels(result)] = result["histogram"][1]
        return out

    def mismatches(self, scraped):
        lines = []
        for name in sorted({name for name, _ in scraped}):
            pushed = self.pushed_histograms(name)
            for (family, labels), entry in sorted(scraped.items(), key=str):
                if family != name or entry["count"] == 0:
                    continue
                got = pushed.get(labels)
                if got is None:
                    lines.append(f"{name} {dict(labels)}: not pushed")
                    continue
                if float(got["count"]) != entry["count"]:
                    lines.append(f"{name} {dict(labels)}: count /metrics {entry['count']}, "
                                 f"pushed {got['count']}")
                if not math.isclose(float(got["sum"]), entry["sum"], rel_tol=1e-9,
                                    abs_tol=1e-9):
                    lines.append(f"{name} {dict(labels)}: sum /metrics {entry['sum']}, "
                                 f"pushed {got['sum']}")
        return lines

    def test_each_histogram_is_one_native_series_whose_count_and_sum_equal_the_scrape(self):
        exposition = self.run_to_the_end()
        scraped = scraped_histograms(exposition)
        self.assertTrue(any(e["count"] for e in scraped.values()), "no histogram had an event")
        last = []
        rw.eventually(lambda: last.append(self.mismatches(scraped)) or not last[-1],
                      rw.AGREEMENT_TIMEOUT_S, interval=0.5)
        self.assertEqual(last[-1], [])
        # One series per family and labels, named after the family.
        self.assertEqual(self.server.series('{__name__=~"tokenspeed:.+_(bucket|sum|count)"}'),
                         [])
        for name in {name for name, _ in scraped}:
            self.assertTrue(self.server.series(name), name)
        # The classic kinds are untouched: counter totals still agree.
        counters = {key: value for key, value in rw.prometheus_series(exposition).items()
                    if key[0].endswith("_total")}
        self.assertTrue(counters)
        pushed = rw.promql_series(self.server, "sum", {name for name, _ in counters})
        for key, value in counters.items():
            self.assertTrue(math.isclose(pushed.get(key, 0), value, rel_tol=1e-9, abs_tol=1e-9),
                            f"{key}: /metrics {value}, PromQL {pushed.get(key)}")

    def test_histogram_quantile_at_the_receiver_is_within_a_bucket_of_the_scrape(self):
        exposition = self.run_to_the_end()
        scraped = scraped_histograms(exposition)
        rw.eventually(lambda: not self.mismatches(scraped), rw.AGREEMENT_TIMEOUT_S, interval=0.5)
        compared = 0
        for name in sorted({name for name, _ in scraped}):
            query = f"histogram_quantile(0.5, sum without (process) ({self.at_last_push(name)}))"
            at_receiver = {pushed_labels(r): float(r["value"][1])
                           for r in self.server.query(query)}
            for (family, labels), entry in sorted(scraped.items(), key=str):
                if family != name or not entry["count"]:
                    continue
                expected, lowest, highest = classic_quantile(0.5, entry["buckets"])
                got = at_receiver.get(labels)
                self.assertIsNotNone(got, f"{query}: no result for {dict(labels)}")
                slack = 1e-9 * max(abs(lowest), abs(highest), 1e-300)
                within_a_width = abs(got - expected) <= highest - lowest
                self.assertTrue(lowest - slack <= got <= highest + slack or within_a_width,
                                f"{name} {dict(labels)}: receiver {got}, /metrics {expected} "
                                f"(its bucket [{lowest}, {highest}])")
                compared += 1
        self.assertGreater(compared, 0)

    def test_every_native_series_ends_with_a_stale_marker_when_its_process_stops(self):
        exposition = self.run_to_the_end()
        scraped = scraped_histograms(exposition)
        rw.eventually(lambda: not self.mismatches(scraped), rw.AGREEMENT_TIMEOUT_S, interval=0.5)
        # Within the 5 minute lookback only a stale marker hides a series.
        names = "|".join(sorted({name for name, _ in scraped}))
        native = '{__name__=~"' + names + '"}'
        rw.eventually(lambda: not self.server.query(native), rw.AGREEMENT_TIMEOUT_S,
                      interval=0.5)
        self.assertEqual(self.server.query(native), [])


class ClassicPrometheus(rw.OnPrometheus, NativeRun, unittest.TestCase):
    """A Prometheus 2.42 without the native-histograms feature flag."""
    server_class = rw.Prometheus

    def test_refuses_every_request_that_holds_a_native_histogram_with_a_500(self):
        run = self.simulate()
        refused = "native histograms are disabled"
        rw.eventually(lambda: run.plugin_lines(refused), rw.AGREEMENT_TIMEOUT_S, interval=0.2)
        self.assertIn("HTTP 500", run.plugin_lines(refused)[0])
        self.assertTrue(any(refused in line for line in self.server.log), self.server.log[-5:])

    def test_takes_classic_series_in_the_declared_bounds_with_native_histograms_off(self):
        exposition = self.run_to_the_end({"native_histograms": False})
        scraped = scraped_histograms(exposition)
        counts = {}
        for (name, labels), entry in scraped.items():
            if entry["count"]:
                counts[(name + "_count", labels)] = entry["count"]
                counts[(name + "_sum", labels)] = entry["sum"]
        self.assertTrue(counts)

        def mismatches():
            pushed = rw.promql_series(self.server, "sum", {name for name, _ in counts})
            return [f"{key}: /metrics {value}, PromQL {pushed.get(key)}"
                    for key, value in sorted(counts.items(), key=str)
                    if not math.isclose(pushed.get(key, 0), value, rel_tol=1e-9, abs_tol=1e-9)]

        last = []
        rw.eventually(lambda: last.append(mismatches()) or not last[-1], rw.AGREEMENT_TIMEOUT_S,
                      interval=0.5)
        self.assertEqual(last[-1], [])
        names = {name for name, _ in scraped}
        self.assertTrue(all(self.server.series(name + "_bucket") for name in names), names)


if __name__ == "__main__":
    rw.main()
