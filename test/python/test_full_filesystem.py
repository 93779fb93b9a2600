"""The Prometheus store on a full file system and the space of exited
producers: recording never raises into the engine when the base directory
(--metrics-multiproc-dir) is full, and what could not be stored is counted
(on /metrics, in the close report, in a log line); a producer's metric file
shrinks to its records when the producer exits, which stay on /metrics.

The full file system is a small real tmpfs, mounted here: those tests need
root and are skipped otherwise (CI runs them as root)."""
import glob
import json
import os
import subprocess
import sys

import pytest
from prometheus_client.parser import text_string_to_metric_families

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT_S = 120  # hang guard only

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="needs root: mounts a small tmpfs as the full base directory")


@pytest.fixture
def small_tmpfs(workdir):
    """A 2 MiB tmpfs (mode 0700) mounted under workdir, unmounted afterwards."""
    path = os.path.join(workdir, "tmpfs")
    os.mkdir(path, 0o700)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2048k,mode=0700", "tmpfs", path],
                   check=True, capture_output=True)
    yield path
    subprocess.run(["umount", path], check=False, capture_output=True)


def fill(directory):
    """Writes a file into directory until the file system is full."""
    chunk = b"\0" * 4096
    with open(os.path.join(directory, "filler"), "wb", buffering=0) as filler:
        try:
            while True:
                filler.write(chunk)
        except OSError:
            pass


def samples(text):
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = dict(sample.labels)
            if "le" in labels:
                labels["le"] = repr(float(labels["le"]))
            out[(sample.name, tuple(sorted(labels.items())))] = sample.value
    return out


def run_program(workdir, text):
    path = os.path.join(workdir, "program.py")
    with open(path, "w") as program:
        program.write(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKENSPEED_")}
    return subprocess.run([sys.executable, path], capture_output=True, text=True,
                          timeout=TIMEOUT_S, env=env, check=False)


def record_on_full_disk(out_path):
    """A producer started once the disk is full: 5 series of 100 events each."""
    import tokenspeed_metrics
    errors = []
    report = None
    try:
        counter = tokenspeed_metrics.Counter("full:producer_events", "Events.", ["i"])
        for i in range(5):
            child = counter.labels(str(i))
            for _ in range(100):
                child.inc()
        report = tokenspeed_metrics.close()
        report.pop("table", None)
    except BaseException as error:  # noqa: BLE001 - every failure is the finding
        errors.append(repr(error))
    with open(out_path, "w") as out:
        json.dump({"errors": errors, "report": report}, out)


@needs_root
def test_a_full_base_directory_never_raises_into_the_engine_and_counts_what_it_could_not_store(
        workdir, small_tmpfs):
    producer_path = os.path.join(workdir, "producer.json")
    script = f"""
import json, multiprocessing, sys
sys.path.insert(0, {HERE!r})
import tokenspeed_metrics
from test_full_filesystem import fill, record_on_full_disk
if __name__ == "__main__":
    tokenspeed_metrics.start(["--enable-metrics", "--metrics-port", "0",
                              "--metrics-multiproc-dir", {small_tmpfs!r}])
    fill({small_tmpfs!r})
    # The launcher's file must grow past its first 1 MiB region: it cannot.
    big = tokenspeed_metrics.Counter("full:launcher_events", "Events.", ["key"])
    errors = []
    for i in range(600):
        try:
            big.labels(("%04d" % i) * 500).inc()
        except BaseException as error:
            errors.append(repr(error))
    producer = multiprocessing.get_context("spawn").Process(
        target=record_on_full_disk, args=({producer_path!r},))
    producer.start()
    producer.join()
    assert producer.exitcode == 0, producer.exitcode
    sys.stdout.write(json.dumps({{"errors": errors[:3],
                                 "metrics": tokenspeed_metrics.generate_latest().decode()}}))
    tokenspeed_metrics.close()
"""
    result = run_program(workdir, script)
    assert result.returncode == 0, result.stderr
    launcher = json.loads(result.stdout)
    assert launcher["errors"] == []
    scraped = samples(launcher["metrics"])
    stored = sum(1 for name, _ in scraped if name == "full:launcher_events_total")
    unstored = scraped[("tokenspeed_metrics_prometheus_unstored_events_total", ())]
    assert 0 < stored < 600
    assert stored + unstored == 600  # one event per series: each is on /metrics or counted

    with open(producer_path) as producer_result:
        producer = json.load(producer_result)
    assert producer["errors"] == []
    assert producer["report"]["unstored_series"] == 5
    assert producer["report"]["unstored_events"] == 500
    assert "cannot create the metric file" in result.stderr
    assert "No space left on device" in result.stderr
    assert "series kept in memory, not on /metrics" in result.stderr


def record_and_exit(index):
    import tokenspeed_metrics
    tokenspeed_metrics.Counter("reclaim:events", "Events.", ["producer"]).labels(str(index)).inc(
        index + 1)
    tokenspeed_metrics.Histogram("reclaim:latency_seconds", "Latency.", ["producer"],
                                 buckets=(0.1, 1.0)).labels(str(index)).observe(0.5)


def test_exited_producers_give_back_their_reserved_space_and_keep_their_counters(workdir):
    producers = 8
    script = f"""
import glob, json, multiprocessing, os, sys
sys.path.insert(0, {HERE!r})
import tokenspeed_metrics
from test_full_filesystem import record_and_exit
if __name__ == "__main__":
    tokenspeed_metrics.start(["--enable-metrics", "--metrics-port", "0",
                              "--metrics-multiproc-dir", {workdir!r}])
    context = multiprocessing.get_context("spawn")
    for index in range({producers}):
        producer = context.Process(target=record_and_exit, args=(index,))
        producer.start()
        producer.join()
        assert producer.exitcode == 0, producer.exitcode
    files = [f for f in glob.glob({workdir!r} + "/run-*/*.db")
             if not os.path.basename(f).startswith("launcher_")]
    blocks = sum(os.stat(f).st_blocks * 512 for f in files)
    sys.stdout.write(json.dumps({{"files": len(files), "bytes": blocks,
                                 "metrics": tokenspeed_metrics.generate_latest().decode()}}))
    tokenspeed_metrics.close()
"""
    result = run_program(workdir, script)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["files"] == producers
    # Each exited producer keeps a page or a few of records, not its 1 MiB.
    assert out["bytes"] <= producers * 64 * 1024, out["bytes"]
    scraped = samples(out["metrics"])
    for index in range(producers):
        label = (("producer", str(index)),)
        assert scraped[("reclaim:events_total", label)] == index + 1
        assert scraped[("reclaim:latency_seconds_count", label)] == 1
        assert scraped[("reclaim:latency_seconds_bucket", (("le", "1.0"),) + label)] == 1


def record_and_wait(ready):
    import time
    import tokenspeed_metrics
    tokenspeed_metrics.Counter("reclaim:killed_events", "Events.").inc(7)
    ready.set()
    time.sleep(600)  # alive until the test kills it: the kill is what is tested


def test_a_killed_producers_reserved_space_goes_back_at_the_next_scrape_and_its_counter_stays(
        workdir):
    script = f"""
import glob, json, multiprocessing, os, signal, sys
sys.path.insert(0, {HERE!r})
import tokenspeed_metrics
from test_full_filesystem import record_and_wait
if __name__ == "__main__":
    tokenspeed_metrics.start(["--enable-metrics", "--metrics-port", "0",
                              "--metrics-multiproc-dir", {workdir!r}])
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    producer = context.Process(target=record_and_wait, args=(ready,))
    producer.start()
    assert ready.wait(60)
    path, = glob.glob({workdir!r} + "/run-*/*_%d.db" % producer.pid)
    before = os.stat(path).st_blocks * 512
    os.kill(producer.pid, signal.SIGKILL)
    producer.join()
    first = tokenspeed_metrics.generate_latest().decode()   # reclaims
    after = os.stat(path).st_blocks * 512
    second = tokenspeed_metrics.generate_latest().decode()
    sys.stdout.write(json.dumps({{"before": before, "after": after, "first": first,
                                 "second": second}}))
    tokenspeed_metrics.close()
"""
    result = run_program(workdir, script)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["before"] >= 1 << 20
    assert out["after"] <= 64 * 1024, out["after"]
    for text in (out["first"], out["second"]):
        assert samples(text)[("reclaim:killed_events_total", ())] == 7
