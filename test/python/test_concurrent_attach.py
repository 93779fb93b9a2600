"""A producer whose first recordings come from many threads at once attaches
once: one metric file, no exception in any thread, plugins registered once,
and every event on /metrics, in jsonl's file and in the close report.

Environment as test_tokenspeed_metrics.py: PYTHONPATH reaches the package
and the extension; TSM_JSONL_PLUGIN_DIR holds jsonl.so."""
import glob
import json
import os
import subprocess
import sys
import threading

import pytest
from prometheus_client.parser import text_string_to_metric_families

import tokenspeed_metrics

HERE = os.path.dirname(os.path.abspath(__file__))
JSONL_DIR = os.environ.get("TSM_JSONL_PLUGIN_DIR", "")
TIMEOUT_S = 120  # hang guard only
THREADS = 16
PER_THREAD = 200


def race_first_record(out_path):
    """In a fresh producer: THREADS threads released together make their first
    recording (labels() of a new family binds, which attaches), then record
    PER_THREAD events each. Writes the errors and the close report."""
    counter = tokenspeed_metrics.Counter("race:events", "Events.", ["thread"])
    barrier = threading.Barrier(THREADS)
    errors = []

    def run(index):
        try:
            barrier.wait()
            child = counter.labels(str(index))
            for _ in range(PER_THREAD):
                child.inc()
        except BaseException as error:  # noqa: BLE001 - every failure is the finding
            errors.append(repr(error))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    report = tokenspeed_metrics.close()
    report.pop("table", None)
    with open(out_path, "w") as out:
        json.dump({"pid": os.getpid(), "errors": errors, "report": report}, out)


@pytest.mark.parametrize("start_method", ["spawn", "fork"])
def test_sixteen_threads_racing_the_first_record_attach_once_and_lose_nothing(
        workdir, start_method):
    result_path = os.path.join(workdir, "producer.json")
    script = f"""
import multiprocessing, sys, urllib.request
sys.path.insert(0, {HERE!r})
import tokenspeed_metrics
from test_concurrent_attach import race_first_record
if __name__ == "__main__":
    tokenspeed_metrics.start(["--enable-metrics", "--metrics-reporters", "prometheus,jsonl",
                              "--metrics-reporter-config", {os.path.join(workdir, "m.json")!r},
                              "--metrics-plugin-dir", {JSONL_DIR!r}, "--metrics-port", "0",
                              "--metrics-multiproc-dir", {workdir!r}])
    context = multiprocessing.get_context({start_method!r})
    producer = context.Process(target=race_first_record, args=({result_path!r},))
    producer.start()
    producer.join()
    assert producer.exitcode == 0, producer.exitcode
    with open({os.path.join(workdir, "files.json")!r}, "w") as out:
        import glob, json
        out.write(json.dumps(sorted(glob.glob({workdir!r} + "/run-*/*.db"))))
    with urllib.request.urlopen(tokenspeed_metrics.metrics_url(), timeout=30) as r:
        sys.stdout.write(r.read().decode())
    tokenspeed_metrics.close()
"""
    with open(os.path.join(workdir, "m.json"), "w") as config:
        json.dump({"jsonl": {"path": os.path.join(workdir, "events-{pid}.jsonl")}}, config)
    path = os.path.join(workdir, "program.py")
    with open(path, "w") as program:
        program.write(script)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKENSPEED_")}
    result = subprocess.run([sys.executable, path], capture_output=True, text=True,
                            timeout=TIMEOUT_S, env=env, check=False)
    assert result.returncode == 0, result.stderr
    assert "already ran" not in result.stderr  # plugins registered once
    assert "already started" not in result.stderr

    with open(result_path) as producer_result:
        producer = json.load(producer_result)
    assert producer["errors"] == []
    pid = producer["pid"]
    with open(os.path.join(workdir, "files.json")) as files:
        mine = [f for f in json.load(files)
                if os.path.basename(f).rsplit(".", 1)[0].split("_")[1:2] == [str(pid)]]
    assert len(mine) == 1, mine  # one metric file for the process

    total = THREADS * PER_THREAD
    scraped = {}
    for family in text_string_to_metric_families(result.stdout):
        for sample in family.samples:
            if sample.name == "race:events_total":
                scraped[sample.labels["thread"]] = sample.value
    assert scraped == {str(i): PER_THREAD for i in range(THREADS)}

    rows = [row for row in producer["report"]["outputs"] if row["output"] == "jsonl"]
    assert len(rows) == 1, producer["report"]
    assert rows[0]["accepted"] == total and rows[0]["delivered"] == total, rows[0]
    assert rows[0]["plugin"]["sent"] == total, rows[0]
    events = 0
    for events_path in glob.glob(os.path.join(workdir, "events-%d*.jsonl" % pid)):
        with open(events_path) as lines:
            events += sum(1 for line in lines if json.loads(line)["metric"] == "race:events_total")
    assert events == total
