"""test_python_engine.py — the specification's example package inside a
Python engine that records through tokenspeed_metrics: python.so uses the
engine's own interpreter (no second one), in the launcher and in
multiprocessing producers started with spawn and with fork; the example sink's
totals equal the scrape, also beside a sink that raises; a sink whose close
ignores its timeout does not hold the engine's exit.

Environment: TSM_PYTHON_PLUGIN_DIR (python.so's build folder),
TSM_PYTHON_MODULE_PATH (where tokenspeed_metrics imports from),
TSM_TEST_TMPDIR.
"""
import glob
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

from prometheus_client.parser import text_string_to_metric_families

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from plugin_venv import make_venv, venv_environment  # noqa: E402

PYTHON_DIR = os.environ["TSM_PYTHON_PLUGIN_DIR"]
MODULE_PATH = os.environ["TSM_PYTHON_MODULE_PATH"]
TMP_ROOT = os.environ.get("TSM_TEST_TMPDIR") or None
RUN_TIMEOUT_S = 120  # hang guard only
VENV = {}

ENGINE = """
import multiprocessing, os, sys, urllib.request
import tokenspeed_metrics
if os.environ.get("TSM_TEST_ENGINE_INSTALLED"):
    import tokenspeed.runtime.metrics.registry as engine_registry

def work(index):
    requests = tokenspeed_metrics.Counter("py:requests", "Requests.", ["producer"])
    latency = tokenspeed_metrics.Histogram("py:latency_seconds", "Latency.", ["producer"],
                                           buckets=(0.01, 0.1, 1.0))
    for _ in range(300):
        requests.labels(str(index)).inc(index + 1)
        latency.labels(str(index)).observe(0.02, weight=3)
    # The packages were registered in this interpreter, not in a second one.
    assert "_tokenspeed_metrics_bridge" in sys.modules, "no bridge in the producer's interpreter"
    def test_beside_an_installed_tokenspeed_engine_the_example_registers_here_and_its_modules_stay_its(self):
        self.check_totals("spawn", venv="with_engine")

    def test_a_sink_that_raises_in_the_engine_is_disabled_and_the_example_still_gets_everything(self):
        tmp, result = self.check_totals("spawn", "prometheus,example_output,raising_emit_output")
        self.assertIn("RuntimeError: the destination rejected the event", result.stderr)
        producers = [line.split() for line in result.stderr.splitlines()
                     if " raising_emit_output " in line and line.startswith("SpawnProcess")]
        self.assertEqual(len(producers), 2, result.stderr)
        for row in producers:
            # Ten delivered, then the status column says why the output failed.
            self.assertEqual(row[4], "10", result.stderr)
            self.assertEqual(" ".join(row[7:]), "failed: disabled (emit failed)", result.stderr)
        self.assertEqual(len(glob.glob(os.path.join(tmp, "raising-*.json"))), 2)  # still closed

    def test_a_sink_whose_close_ignores_its_timeout_does_not_hold_the_engine(self):
        tmp, _ = self.run_engine("fork", "prometheus,stuck_close_output")
        self.assertEqual(len(glob.glob(os.path.join(tmp, "stuck-*.json"))), 2)  # close began


if __name__ == "__main__":
    config, plugin_dir, run_dir, method, reporters = sys.argv[1:6]
    tokenspeed_metrics.start(["--enable-metrics", "--metrics-port", "0",
                              "--metrics-reporters", reporters,
                              "--metrics-shutdown-timeout", "1",
                              "--metrics-reporter-config", config,
                              "--metrics-plugin-dir", plugin_dir,
                              "--metrics-multiproc-dir", run_dir])
    assert "_tokenspeed_metrics_bridge" in sys.modules, "no bridge in the engine's interpreter"
    if os.environ.get("TSM_TEST_ENGINE_INSTALLED"):
        import tokenspeed
        # The engine's modules stay the engine's; its registry got nothing.
        assert tokenspeed.ENGINE == "installed-tokenspeed-engine", tokenspeed.__file__
        assert sys.modules["tokenspeed.runtime.metrics.registry"] is engine_registry
        assert engine_registry.DECLARED == [], engine_registry.DECLARED
    context = multiprocessing.get_context(method)
    producers = [context.Process(target=work, args=(i,)) for i in range(2)]
    for producer in producers: producer.start()
    for producer in producers:
        producer.join()
        assert producer.exitcode == 0, producer.exitcode
    with urllib.request.urlopen(tokenspeed_metrics.metrics_url(), timeout=30) as response:
        sys.stdout.write(response.read().decode())
    report = tokenspeed_metrics.close()
    sys.stderr.write(report["table"])
"""


def setUpModule():
    os.makedirs(TMP_ROOT, exist_ok=True)
    root = tempfile.mkdtemp(prefix="venv-", dir=TMP_ROOT)
    VENV["path"] = make_venv(root, "engine", ["example_metrics", "fault_raising_emit",
                                              "fault_close_ignores_timeout"])
    VENV["with_engine"] = make_venv(root, "with_engine",
                                    ["example_metrics", "installed_tokenspeed_engine"])


class PythonEngineTest(unittest.TestCase):

    def run_engine(self, method, reporters="prometheus,example_output", venv="path"):
        tmp = tempfile.mkdtemp(dir=TMP_ROOT)
        os.chmod(tmp, 0o755)
        program = os.path.join(tmp, "engine.py")
        with open(program, "w") as file:
            file.write(ENGINE)
        config = os.path.join(tmp, "metrics.json")
        with open(config, "w") as file:
            json.dump({name: settings for name, settings in {
                "example_output": {
                    "endpoint": "file://" + os.path.join(tmp, "example-{pid}.jsonl")},
                "raising_emit_output": {"path": os.path.join(tmp, "raising-{pid}.json")},
                "stuck_close_output": {"path": os.path.join(tmp, "stuck-{pid}.json")},
            }.items() if name in reporters.split(",")}, file)
        run_dir = os.path.join(tmp, "run")
        os.mkdir(run_dir)
        extra = {"PYTHONPATH": MODULE_PATH}
        if venv == "with_engine":
            extra["TSM_TEST_ENGINE_INSTALLED"] = "1"
        env = venv_environment(VENV[venv], extra)
        result = subprocess.run([os.path.join(VENV[venv], "bin", "python"), program, config,
                                 PYTHON_DIR, run_dir, method, reporters],
                                capture_output=True, text=True,
                                env=env, timeout=RUN_TIMEOUT_S, check=False)
        self.assertEqual(result.returncode, 0, result.stderr)
        return tmp, result

    def check_totals(self, method, reporters="prometheus,example_output", venv="path"):
        tmp, result = self.run_engine(method, reporters, venv)
        scrape = {}
        for family in text_string_to_metric_families(result.stdout):
            for sample in family.samples:
                if sample.name.startswith("py:") and "le" not in sample.labels:
                    scrape[(sample.name, sample.labels.get("producer"))] = sample.value
        totals = {}
        files = glob.glob(os.path.join(tmp, "example-*.jsonl"))
        # Sinks are created lazily: the launcher records nothing here, so has none.
        self.assertEqual(len(files), 2, files)
        for path in files:
            with open(path) as lines:
                for line in lines:
                    event = json.loads(line)
                    key = (event["metric"], event["labels"]["producer"])
                    count, total = totals.get(key, (0, 0.0))
                    totals[key] = (count + event["weight"], total + event["value"] * event["weight"])
        for producer in ("0", "1"):
            self.assertEqual(totals[("py:requests_total", producer)][1],
                             scrape[("py:requests_total", producer)])
            count, total = totals[("py:latency_seconds", producer)]
            self.assertEqual(count, scrape[("py:latency_seconds_count", producer)])
            self.assertTrue(math.isclose(total, scrape[("py:latency_seconds_sum", producer)]))
        self.assertEqual(scrape[("py:latency_seconds_count", "1")], 900)
        return tmp, result

    def test_the_example_in_spawned_producers_gets_what_the_scrape_counts(self):
        self.check_totals("spawn")

    def test_the_example_in_forked_producers_gets_what_the_scrape_counts(self):
        self.check_totals("fork")

    def test_beside_an_installed_tokenspeed_engine_the_example_registers_here_and_its_modules_stay_its(self):
        self.check_totals("spawn", venv="with_engine")

    def test_a_sink_that_raises_in_the_engine_is_disabled_and_the_example_still_gets_everything(self):
        tmp, result = self.check_totals("spawn", "prometheus,example_output,raising_emit_output")
        self.assertIn("RuntimeError: the destination rejected the event", result.stderr)
        producers = [line.split() for line in result.stderr.splitlines()
                     if " raising_emit_output " in line and line.startswith("SpawnProcess")]
        self.assertEqual(len(producers), 2, result.stderr)
        for row in producers:
            # Ten delivered, then the status column says why the output failed.
            self.assertEqual(row[4], "10", result.stderr)
            self.assertEqual(" ".join(row[7:]), "failed: disabled (emit failed)", result.stderr)
        self.assertEqual(len(glob.glob(os.path.join(tmp, "raising-*.json"))), 2)  # still closed

    def test_a_sink_whose_close_ignores_its_timeout_does_not_hold_the_engine(self):
        tmp, _ = self.run_engine("fork", "prometheus,stuck_close_output")
        self.assertEqual(len(glob.glob(os.path.join(tmp, "stuck-*.json"))), 2)  # close began


if __name__ == "__main__":
    unittest.main()
