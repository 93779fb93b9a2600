"""close() is final, and a Python launcher ended by SIGTERM or SIGINT closes
its node first: recording after close raises ClosedError (in the process and
in a child forked afterwards); SIGTERM removes the run directory and still
ends the launcher by SIGTERM; SIGINT closes, then raises KeyboardInterrupt;
an engine's handler installed before start() runs after the close.

Each launcher is a subprocess (close is process-wide). Waits poll for their
condition with a generous deadline: the machine may be busy."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import urllib.request

import pytest

import tokenspeed_metrics
from eventually import eventually

TMP_ROOT = os.environ.get("TSM_TEST_TMPDIR", tempfile.gettempdir())
DEADLINE_S = 60


@pytest.fixture
def workdir():
    os.makedirs(TMP_ROOT, exist_ok=True)
    path = tempfile.mkdtemp(prefix="tsm-py-close-", dir=TMP_ROOT)
    yield path
    subprocess.run(["rm", "-rf", path], check=False)


def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("TOKENSPEED_")}


def wait_for(condition, what, process):
    """condition()'s first truthy value (hang guard: DEADLINE_S); fails early
    when process has exited."""
    def holds_or_exited():
        value = condition()
        if not value and process.poll() is not None:
            out, err = process.communicate()
            pytest.fail(f"exited {process.returncode} before {what}:\n{out}\n{err}")
        return value

    value = eventually(holds_or_exited, DEADLINE_S, 0.02)
    if not value:
        pytest.fail(f"no {what} within {DEADLINE_S} s")
    return value


def test_closed_error_is_a_runtime_error():
    assert issubclass(tokenspeed_metrics.ClosedError, RuntimeError)


RECORD_AFTER_CLOSE = """
import os, sys
import tokenspeed_metrics as tsm
from tokenspeed_metrics import ClosedError
tsm.start(FLAGS)
counter = tsm.Counter("py:closed_requests", "Requests.", ["route"])
plain = tsm.Counter("py:closed_plain", "Plain.")
gauge = tsm.Gauge("py:closed_busy", "Busy.", multiprocess_mode="livesum")
histogram = tsm.Histogram("py:closed_latency", "Latency.", ["route"], buckets=(1.0,))
child = counter.labels("/a")
hchild = histogram.labels("/a")
child.inc(); plain.inc(); gauge.set(1); hchild.observe(0.5)
tsm.close()
calls = {
    "cached child inc": lambda: child.inc(),
    "labels(cached).inc": lambda: counter.labels("/a").inc(),
    "labels(new).inc": lambda: counter.labels("/b").inc(),
    "family inc": lambda: plain.inc(),
    "gauge set": lambda: gauge.set(2),
    "gauge inc": lambda: gauge.inc(),
    "gauge dec": lambda: gauge.dec(),
    "histogram observe": lambda: hchild.observe(0.1),
    "histogram observe_many": lambda: hchild.observe_many([0.1, 0.2]),
    "start again": lambda: tsm.start(FLAGS),
}
for name, call in calls.items():
    try:
        call()
        print(name, "=> no error")
    except ClosedError as error:
        print(name, "=>", error)
print("close again:", tsm.close() is not None)
pid = os.fork()
if pid == 0:
    try:
        child.inc()
    except ClosedError:
        os._exit(0)
    os._exit(1)
_, status = os.waitpid(pid, 0)
print("forked child:", "closed" if os.waitstatus_to_exitcode(status) == 0 else "recorded")
"""


@pytest.mark.parametrize("enabled", [True, False], ids=["enabled", "disabled"])
def test_recording_after_close_raises_closed_error_in_the_process_and_its_forked_child(
        workdir, enabled):
    flags = ["--enable-metrics", "--metrics-port", "0", "--metrics-multiproc-dir", workdir]
    script = "FLAGS = %r\n" % (flags if enabled else []) + RECORD_AFTER_CLOSE
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=DEADLINE_S, env=clean_env(), check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    outcomes = dict(line.split(" => ", 1) for line in lines if " => " in line)
    assert len(outcomes) == 10, result.stdout
    for name, outcome in outcomes.items():
        assert outcome.startswith("tokenspeed_metrics is closed: close() ran"), (name, outcome)
    assert "cannot start again" in outcomes["start again"]
    assert "close again: True" in lines
    assert "forked child: closed" in lines


LAUNCHER = """
import json, os, signal, sys, time
import tokenspeed_metrics
from tokenspeed_metrics import ClosedError
READY = {ready!r}
state = {{}}

def recording_state():
    try:
        REQUESTS.inc()
        return "recording"
    except ClosedError:
        return "closed"

def run_dir_state():
    return "present" if os.path.isdir(state["run_dir"]) else "gone"

{before_start}
tokenspeed_metrics.start(["--enable-metrics", "--metrics-port", "0",
                          "--metrics-multiproc-dir", {workdir!r}])
REQUESTS = tokenspeed_metrics.Counter("py:signalled_requests", "Requests.")
REQUESTS.inc()
state["run_dir"] = os.path.dirname(os.environ["TOKENSPEED_METRICS_HANDOFF_FILE"])

def announce_ready():  # once the engine's own handlers are in place
    with open(READY + ".tmp", "w") as out:
        json.dump({{"run_dir": state["run_dir"], "url": tokenspeed_metrics.metrics_url()}}, out)
    os.rename(READY + ".tmp", READY)
{main}
"""

SLEEP_UNTIL_INTERRUPTED = """
announce_ready()
try:
    while True:
        time.sleep(0.05)
except KeyboardInterrupt:
    print("KeyboardInterrupt: run dir", run_dir_state(), "metrics", recording_state(), flush=True)
    raise
"""


def start_launcher(workdir, before_start="", main=SLEEP_UNTIL_INTERRUPTED):
    """A launcher subprocess, once its run directory exists and its /metrics
    answers with its counter: (process, run directory)."""
    ready = os.path.join(workdir, "ready.json")
    script = LAUNCHER.format(ready=ready, workdir=workdir, before_start=before_start, main=main)
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=clean_env())

    def ready_file():
        if not os.path.exists(ready):
            return None
        with open(ready) as data:
            return json.load(data)

    info = wait_for(ready_file, "ready file", process)

    def scraped():
        try:
            with urllib.request.urlopen(info["url"], timeout=5) as response:
                return b"py:signalled_requests_total 1" in response.read()
        except OSError:
            return False

    wait_for(scraped, "answer of /metrics", process)
    assert os.path.isdir(info["run_dir"])
    return process, info["run_dir"]


def stop(process, signum):
    """Sends signum and waits for the exit: (stdout, stderr)."""
    try:
        process.send_signal(signum)
        return process.communicate(timeout=DEADLINE_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_sigterm_closes_the_launcher_removes_its_run_directory_and_ends_it_by_sigterm(workdir):
    process, run_dir = start_launcher(workdir)
    out, err = stop(process, signal.SIGTERM)
    assert process.returncode == -signal.SIGTERM, (process.returncode, out, err)
    assert not os.path.exists(run_dir), os.listdir(run_dir)


def test_sigint_closes_the_launcher_then_raises_keyboard_interrupt(workdir):
    process, run_dir = start_launcher(workdir)
    out, err = stop(process, signal.SIGINT)
    assert "KeyboardInterrupt: run dir gone metrics closed" in out, (out, err)
    assert "KeyboardInterrupt" in err
    # An uncaught KeyboardInterrupt ends Python by SIGINT.
    assert process.returncode == -signal.SIGINT, (process.returncode, out, err)
    assert not os.path.exists(run_dir)


def test_an_engine_sigterm_handler_installed_before_start_runs_after_the_close(workdir):
    before_start = """
def engine_handler(signum, frame):
    print("engine handler: run dir", run_dir_state(), "metrics", recording_state(), flush=True)
    sys.exit(3)
signal.signal(signal.SIGTERM, engine_handler)
"""
    process, run_dir = start_launcher(workdir, before_start)
    out, err = stop(process, signal.SIGTERM)
    assert "engine handler: run dir gone metrics closed" in out, (out, err)
    assert process.returncode == 3, (process.returncode, out, err)
    assert not os.path.exists(run_dir)


def test_an_asyncio_engine_with_its_own_sigterm_handler_exits_normally_and_atexit_cleans_up(
        workdir):
    main = """
import asyncio
async def serve():
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    announce_ready()
    await stop.wait()
    print("drained: metrics", recording_state(), flush=True)
asyncio.run(serve())
"""
    process, run_dir = start_launcher(workdir, main=main)
    out, err = stop(process, signal.SIGTERM)
    assert "drained: metrics recording" in out, (out, err)
    assert process.returncode == 0, (process.returncode, out, err)
    assert not os.path.exists(run_dir)


def test_an_ignored_signal_stays_ignored_and_close_restores_the_handlers():
    script = """
import signal, threading, tokenspeed_metrics
signal.signal(signal.SIGINT, signal.SIG_IGN)
tokenspeed_metrics.start([])
print("sigint ignored:", signal.getsignal(signal.SIGINT) is signal.SIG_IGN)
print("sigterm ours:", signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL)
tokenspeed_metrics.close()
print("sigterm restored:", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=DEADLINE_S, env=clean_env(), check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:3] == [
        "sigint ignored: True", "sigterm ours: True", "sigterm restored: True"], result.stdout


def test_start_from_another_thread_installs_no_handler():
    script = """
import signal, threading, tokenspeed_metrics
thread = threading.Thread(target=tokenspeed_metrics.start, args=([],))
thread.start(); thread.join()
print("role:", tokenspeed_metrics.role())
print("sigterm default:", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=DEADLINE_S, env=clean_env(), check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["role: launcher", "sigterm default: True"], result.stdout
