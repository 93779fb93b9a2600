"""An engine embeds the host from the installed files alone: after
`meson install --destdir`, docs/examples/engine/ builds out of tree with
dependency('tokenspeed-metrics') through pkg-config; its launcher starts two
producer processes itself, each recording metrics of the engine's own names
with labels, and the launcher's /metrics holds each producer's series summed
correctly while the jsonl output received the same totals. The installed
executable runs an output isolated in the installed sink helper (found
relative to the installed library, no environment variable naming it).

Environment: TSM_BUILD_ROOT (this project's build directory), TSM_MESON (the
meson executable), TSM_SOURCE_ROOT, TSM_TEST_TMPDIR (a directory in the build
tree: plugin directories under /tmp would be refused as world-writable)."""
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest
import urllib.request

BUILD_ROOT = os.environ["TSM_BUILD_ROOT"]
MESON = os.environ.get("TSM_MESON", "meson")
SOURCE_ROOT = os.environ["TSM_SOURCE_ROOT"]
TMP_ROOT = os.environ["TSM_TEST_TMPDIR"]
EXAMPLE_SOURCE = os.path.join(SOURCE_ROOT, "docs", "examples", "engine")
# Hang guards only.
TOOL_TIMEOUT_S = 300
RUN_TIMEOUT_S = 60
REQUESTS = 1000
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')


def run_tool(command, env=None):
    result = subprocess.run(command, env=env, capture_output=True, text=True,
                            timeout=TOOL_TIMEOUT_S, check=False)
    return result


def samples(exposition):
    out = {}
    for line in exposition.splitlines():
        match = SAMPLE.match(line)
        if match:
            out[(match.group(1), match.group(2) or "")] = float(match.group(3))
    return out


class ExampleEngine(unittest.TestCase):

    def setUp(self):
        os.makedirs(TMP_ROOT, exist_ok=True)
        self.work = tempfile.mkdtemp(prefix="tsm-embed-", dir=TMP_ROOT)
        self.addCleanup(shutil.rmtree, self.work, ignore_errors=True)
        os.chmod(self.work, 0o755)

    def install(self):
        destdir = os.path.join(self.work, "destdir")
        install = run_tool([MESON, "install", "-C", BUILD_ROOT, "--no-rebuild", "--quiet",
                            "--destdir", destdir])
        self.assertEqual(install.returncode, 0, install.stdout + install.stderr)
        return destdir

    def find_one(self, destdir, pattern):
        found = glob.glob(os.path.join(destdir, "**", pattern), recursive=True)
        self.assertEqual(len(found), 1, f"{pattern}: {found}")
        return found[0]

    def test_an_out_of_tree_engine_with_two_producers_of_its_own_agrees_on_metrics_and_jsonl(self):
        destdir = self.install()
        pc_file = self.find_one(destdir, "tokenspeed-metrics.pc")
        library = glob.glob(os.path.join(destdir, "**", "libtokenspeed-metrics.so*"),
                            recursive=True)[0]
        jsonl = self.find_one(destdir, "jsonl.so")
        # No private header and no Boost header is installed for engines.
        headers = glob.glob(os.path.join(destdir, "**", "tokenspeed", "metrics", "*.hpp"),
                            recursive=True)
        self.assertTrue(headers)
        for header in headers:
            with open(header) as text:
                includes = re.findall(r'#include [<"]([^>"]+)[>"]', text.read())
            for include in includes:
                self.assertTrue(include.startswith("tokenspeed/metrics/") or "/" not in include
                                or include.startswith("sys/"),
                                f"{header} includes {include}")
                self.assertFalse(include.startswith("boost"), f"{header} includes {include}")

        env = dict(os.environ)
        env["PKG_CONFIG_PATH"] = os.path.dirname(pc_file)
        env["PKG_CONFIG_SYSROOT_DIR"] = destdir
        env.pop("PKG_CONFIG_LIBDIR", None)
        build = os.path.join(self.work, "engine-build")
        setup = run_tool([MESON, "setup", build, EXAMPLE_SOURCE], env=env)
        self.assertEqual(setup.returncode, 0, setup.stdout + setup.stderr)
        compile_ = run_tool([MESON, "compile", "-C", build], env=env)
        self.assertEqual(compile_.returncode, 0, compile_.stdout + compile_.stderr)

        # The installed executable finds its installed library by itself.
        binary = self.find_one(destdir, os.path.join("bin", "tokenspeed-metrics"))
        clean = {k: v for k, v in os.environ.items()
                 if not k.startswith("TOKENSPEED_") and k != "LD_LIBRARY_PATH"}
        version = subprocess.run([binary, "plugins", "--metrics-plugin-dir", os.path.dirname(jsonl)],
                                 env=clean, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        self.assertEqual(version.returncode, 0, version.stderr)
        self.assertIn("jsonl", version.stdout)

        config = os.path.join(self.work, "metrics.json")
        events = os.path.join(self.work, "events")
        os.mkdir(events)
        with open(config, "w") as out:
            json.dump({"jsonl": {"path": os.path.join(events, "events-{pid}.jsonl")}}, out)
        run_env = dict(clean)
        run_env["LD_LIBRARY_PATH"] = os.path.dirname(library)  # the engine has no RPATH
        engine = subprocess.Popen(
            [os.path.join(build, "example-engine"), "--requests", str(REQUESTS),
             "--enable-metrics", "--metrics-reporters", "prometheus,jsonl",
             "--metrics-reporter-config", config, "--metrics-plugin-dir", os.path.dirname(jsonl),
             "--metrics-port", "0", "--metrics-multiproc-dir", self.work,
             "--metrics-reporter-queue-size", "65536"],
            env=run_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        try:
            url = engine.stdout.readline().strip().removeprefix("metrics: ")
            self.assertTrue(url.startswith("http://"), url)
            finished = engine.stdout.readline()
            self.assertIn("workers finished (0 failed)", finished)
            with urllib.request.urlopen(url, timeout=RUN_TIMEOUT_S) as response:
                scrape = samples(response.read().decode())
            out, err = engine.communicate("\n", timeout=RUN_TIMEOUT_S)
        finally:
            engine.kill()
        self.assertEqual(engine.returncode, 0, out + err)

        for producer in range(2):
            tokens = scrape.get(("example:generated_tokens_total",
                                 f'{{worker="{producer}",model="tiny"}}'))
            self.assertEqual(tokens, REQUESTS * (producer + 1), scrape)
            labels = f'{{worker="{producer}"}}'
            self.assertEqual(scrape.get(("example:step_latency_seconds_count", labels)),
                             2 * REQUESTS)
            self.assertAlmostEqual(scrape.get(("example:step_latency_seconds_sum", labels)),
                                   0.04 * REQUESTS, places=6)
            self.assertEqual(scrape.get(("example:step_latency_seconds_bucket",
                                         f'{{worker="{producer}",le="0.05"}}')), 2 * REQUESTS)
            self.assertEqual(scrape.get(("example:step_latency_seconds_bucket",
                                         f'{{worker="{producer}",le="0.01"}}')), 0)

        totals = {}
        files = glob.glob(os.path.join(events, "events-*.jsonl"))
        self.assertEqual(len(files), 2, files)  # one per producer; the launcher recorded nothing
        for path in files:
            with open(path) as lines:
                for line in lines:
                    event = json.loads(line)
                    key = (event["metric"], event["labels"].get("worker"), event["operation"])
                    weight = event.get("weight", 1)
                    totals[key] = totals.get(key, 0) + (event["value"] * weight
                                                        if event["operation"] != "set" else 1)
        for producer in range(2):
            self.assertEqual(totals[("example:generated_tokens_total", str(producer), "inc")],
                             scrape[("example:generated_tokens_total",
                                     f'{{worker="{producer}",model="tiny"}}')])
            self.assertAlmostEqual(totals[("example:step_latency_seconds", str(producer),
                                           "observe")],
                                   scrape[("example:step_latency_seconds_sum",
                                           f'{{worker="{producer}"}}')], places=6)
        self.assertIn("worker-0", out)  # the summary table names the engine's processes

    def test_the_installed_executable_runs_an_isolated_output_in_the_installed_sink_helper(self):
        destdir = self.install()
        self.find_one(destdir, "tokenspeed-metrics-sink-helper")
        binary = self.find_one(destdir, os.path.join("bin", "tokenspeed-metrics"))
        jsonl = self.find_one(destdir, "jsonl.so")
        events = os.path.join(self.work, "events")
        os.mkdir(events)
        config = os.path.join(self.work, "metrics.json")
        with open(config, "w") as out:
            # {pid}: the process the sink runs in, here each output's helper.
            json.dump({"jsonl": {"path": os.path.join(events, "events-{pid}.jsonl"),
                                 "isolation": "process"}}, out)
        clean = {k: v for k, v in os.environ.items()
                 if not k.startswith("TOKENSPEED_") and k != "LD_LIBRARY_PATH"}
        run = subprocess.run(
            [binary, "simulate", "--enable-metrics", "--metrics-port", "0",
             "--metrics-reporters", "prometheus,jsonl", "--metrics-reporter-config", config,
             "--metrics-plugin-dir", os.path.dirname(jsonl), "--ranks", "1", "--duration", "2"],
            env=clean, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertNotIn("sink helper", run.stderr)  # found, never restarted

        # process pid output accepted delivered dropped discarded status
        rows = [line.split() for line in run.stdout.splitlines()]
        rows = [row for row in rows if len(row) == 8 and row[2] == "jsonl"]
        self.assertEqual({row[0] for row in rows}, {"launcher", "scheduler-0", "frontend"},
                         run.stdout)
        lines_by_pid = {}
        for path in glob.glob(os.path.join(events, "events-*.jsonl")):
            with open(path) as lines:
                pid = int(os.path.basename(path)[len("events-"):-len(".jsonl")])
                lines_by_pid[pid] = sum(1 for _ in lines)
        recording_pids = {int(row[1]) for row in rows}
        # Every file was written by a helper, one per process that delivered
        # an event (a sink and its helper start with the first event: on a
        # busy machine the scheduler may have none in its two seconds), none
        # by a recording process.
        delivering = [row for row in rows if int(row[4]) > 0]
        self.assertGreaterEqual(len(delivering), 2, run.stdout)  # the launcher and the frontend
        self.assertEqual(len(lines_by_pid), len(delivering), (lines_by_pid, run.stdout))
        self.assertFalse(recording_pids & set(lines_by_pid), (recording_pids, lines_by_pid))
        for row in rows:
            self.assertEqual(row[3], row[4], run.stdout)  # accepted == delivered
        self.assertEqual(sum(lines_by_pid.values()), sum(int(row[4]) for row in rows))


if __name__ == "__main__":
    unittest.main()
