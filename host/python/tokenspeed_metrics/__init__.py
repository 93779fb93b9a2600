"""tokenspeed_metrics: record an engine's metrics through the tokenspeed-metrics host.

The API a prometheus_client user knows::

    from tokenspeed_metrics import Counter, Gauge, Histogram
    REQUESTS = Counter("myengine:requests", "Requests served.", ["model"])
    REQUESTS.labels("llama").inc()

Without start() a process records as prometheus_client does: into
PROMETHEUS_MULTIPROC_DIR when it is set (every process of the engine there,
rendered by any of them), else in its memory. For the host's outputs and
its /metrics endpoint, one call at start-up in the launcher, with the flags
from the TOKENSPEED_METRICS_* environment or from an explicit list::

    import tokenspeed_metrics
    tokenspeed_metrics.start()                      # TOKENSPEED_METRICS_ENABLE=1, ...
    rest = tokenspeed_metrics.start(sys.argv[1:])   # or: --enable-metrics, --metrics-*

Processes the engine starts (multiprocessing with the spawn or fork start
method, subprocess) attach to the launcher's node from their environment on
their first recording; see docs/python.md.
"""
import atexit
import os
import sys
import threading

import _tokenspeed_metrics as _native
from _tokenspeed_metrics import ClosedError, StartupError

from . import _signals

__all__ = [
    "Counter", "Gauge", "Histogram", "Summary", "StartupError", "ClosedError", "start", "attach", "close",
    "metrics_url", "generate_latest", "extract_metrics_flags", "metrics_help", "role",
    "multiprocess_dir", "exposition_text", "CONTENT_TYPE_LATEST",
]

CONTENT_TYPE_LATEST = "text/plain; version=0.0.4; charset=utf-8"

# prometheus_client's default buckets.
DEFAULT_BUCKETS = (.005, .01, .025, .05, .075, .1, .25, .5, .75, 1.0, 2.5, 5.0, 7.5, 10.0,
                   float("inf"))

# The multiprocess_mode values a Gauge takes: every mode of prometheus_client.
MULTIPROCESS_MODES = ("livemax", "livesum", "max", "min", "livemin", "sum", "all", "liveall",
                      "mostrecent", "livemostrecent")


def _full_name(name, namespace, subsystem, unit):
    full = "_".join(part for part in (namespace, subsystem, name) if part)
    if unit and not full.endswith("_" + unit):
        full += "_" + unit
    return full


class Counter(_native.CounterFamily):
    """A monotonically increasing value: ``inc(amount=1)`` on the family (no
    labels) or on ``labels(...)``. A name given with ``_total`` loses it;
    the exposition and every output use ``<name>_total``."""

    def __init__(self, name, documentation, labelnames=(), namespace="", subsystem="",
                 unit="", registry=None, **_ignored):
        super().__init__(_full_name(name, namespace, subsystem, unit), documentation,
                         tuple(labelnames), unit)


class Gauge(_native.GaugeFamily):
    """A value that goes up and down: ``set``, ``inc``, ``dec``. The
    multiprocess_mode says how the launcher merges the processes' values
    (prometheus_client's modes: ``mostrecent`` takes the value set last in
    any process; the default is ``all``, as there)."""

    def __init__(self, name, documentation, labelnames=(), namespace="", subsystem="",
                 unit="", registry=None, multiprocess_mode="all", **_ignored):
        if multiprocess_mode not in MULTIPROCESS_MODES:
            raise ValueError("Invalid multiprocess mode: " + str(multiprocess_mode))
        super().__init__(_full_name(name, namespace, subsystem, unit), documentation,
                         tuple(labelnames), unit, None, multiprocess_mode)


class Histogram(_native.HistogramFamily):
    """A distribution: ``observe(amount, weight=1)`` records weight samples
    of amount (one value for n tokens); ``observe_many(values)`` records a
    sequence in one call. ``native=True`` gives it exponential buckets that
    follow the values (Prometheus' native histogram, OpenTelemetry's
    exponential histogram): at most ``native_max_buckets`` per sign, starting
    at scale ``native_max_scale`` and lowered to keep within them, values
    within ``native_zero_threshold`` of 0 counted as zero. ``buckets`` then
    only serve outputs that aggregate classic buckets (default: the powers
    of two from 2**-10 to 2**10)."""

    DEFAULT_BUCKETS = DEFAULT_BUCKETS

    def __init__(self, name, documentation, labelnames=(), namespace="", subsystem="",
                 unit="", registry=None, buckets=DEFAULT_BUCKETS, *, native=False,
                 native_max_buckets=160, native_max_scale=20, native_zero_threshold=0.0,
                 **_ignored):
        if native and buckets is DEFAULT_BUCKETS:
            buckets = ()
        super().__init__(_full_name(name, namespace, subsystem, unit), documentation,
                         tuple(labelnames), unit, [float(b) for b in buckets], "livemax",
                         native=bool(native), native_max_buckets=native_max_buckets,
                         native_max_scale=native_max_scale,
                         native_zero_threshold=float(native_zero_threshold))


class Summary(_native.SummaryFamily):
    """prometheus_client's summary: ``observe(amount, weight=1)`` grows
    ``<name>_count`` and ``<name>_sum`` (no quantiles). Outputs receive its
    observations as a histogram's without bucket bounds."""

    def __init__(self, name, documentation, labelnames=(), namespace="", subsystem="",
                 unit="", registry=None, **_ignored):
        super().__init__(_full_name(name, namespace, subsystem, unit), documentation,
                         tuple(labelnames), unit)


def extract_metrics_flags(args):
    """(metrics_flags, rest): the metrics flags of args and the others, untouched."""
    return _native.extract_metrics_flags(list(args))


def metrics_help():
    """The metrics flags with their defaults, for the engine's own --help."""
    return _native.metrics_help()


def start(argv=None, *, export=True):
    """Starts the metrics node of this process (the launcher, or the only
    process): validates every output, runs start_node, serves /metrics when
    prometheus is selected. The metrics flags come from argv when it is a
    list (the arguments without the program name; the others are returned,
    untouched and in order) and otherwise from the TOKENSPEED_METRICS_*
    environment (TOKENSPEED_METRICS_ENABLE=1 for --enable-metrics,
    TOKENSPEED_METRICS_<NAME> for --metrics-<name>); sys.argv is never read
    or changed. With export, the processes this one starts later inherit
    what they need to attach. Raises StartupError (.reporter, .file, .key)
    on a bad setup, and RuntimeError when this process already records
    standalone (start() comes before the first recording).

    Called from the main thread, it also installs handlers for SIGTERM and
    SIGINT that close the node (removing the run directory) and then chain
    to the handlers they replaced; see docs/python.md."""
    environment, rest, enabled = _native.start(None if argv is None else list(argv))
    if argv is None and not enabled:
        _warn_of_unread_argv_flags()
    if export:
        for variable in ("TOKENSPEED_METRICS_HANDOFF_FD", "TOKENSPEED_METRICS_HANDOFF_FILE",
                         "TOKENSPEED_METRICS_DISABLED"):
            os.environ.pop(variable, None)
        for name, value in zip(environment[::2], environment[1::2]):
            os.environ[name] = value
    atexit.register(close)
    _signals.install(close)
    return rest


def _warn_of_unread_argv_flags():
    """Metrics left disabled while the command line carries metrics flags:
    said once, as those flags may be the engine's own (SGLang's
    --enable-metrics) or meant for start(sys.argv[1:])."""
    named = [arg.split("=", 1)[0] for arg in sys.argv[1:]
             if arg.startswith(("--enable-metrics", "--metrics-"))]
    if named:
        sys.stderr.write(
            "tokenspeed-metrics: warning: the host's metrics are disabled: start() reads its "
            "flags from TOKENSPEED_METRICS_* variables or an explicit list, not from sys.argv "
            "(which has %s); pass start(sys.argv[1:]) to use them\n" % ", ".join(named))


def multiprocess_dir():
    """The directory the engine's processes share as prometheus_client's
    multiprocess mode does (PROMETHEUS_MULTIPROC_DIR, or the older lower-case
    prometheus_multiproc_dir), or ''."""
    return (os.environ.get("PROMETHEUS_MULTIPROC_DIR")
            or os.environ.get("prometheus_multiproc_dir") or "")


# multiprocessing is imported by the processes that record, when they
# record: importing it costs milliseconds, and multiprocessing.util registers
# an exit handler, which a process importing this package only to start()
# or render should not get.
def _process_name():
    try:
        import multiprocessing
        process = multiprocessing.current_process()
        if process.name != "MainProcess":
            return process.name
    except Exception:  # noqa: BLE001 - the name is a courtesy
        pass
    return "producer-%d" % os.getpid()


def attach(name=None):
    """Attaches this process to its launcher's node from the environment
    (done by itself on the first recording, once however many threads make
    it together). Returns True when metrics are enabled. Raises StartupError
    without a launcher's environment."""
    enabled = _native.attach_producer(name or _process_name())
    _close_at_exit()
    return enabled


def _close_at_exit():
    atexit.register(close)
    try:  # multiprocessing children leave through os._exit: close before it
        from multiprocessing import util
        util.Finalize(None, close, exitpriority=100)
    except Exception:  # noqa: BLE001
        pass


def _handoff_in_environment():
    return any(os.environ.get(variable) for variable in (
        "TOKENSPEED_METRICS_HANDOFF_FD", "TOKENSPEED_METRICS_HANDOFF_FILE",
        "TOKENSPEED_METRICS_DISABLED"))


def _in_launched_node():
    """Whether this process belongs to a launcher's node: it started it,
    attached, or (not having recorded yet) has the launcher's handoff, and
    then attaches now, as its first recording would."""
    current = _native.role()
    if current is None and _handoff_in_environment():
        attach()
        current = _native.role()
    return current in ("launcher", "producer")


def _attach_on_first_use():
    """The first recording of a process that neither started nor attached:
    it attaches to the launcher that exported a handoff, or else records
    standalone as prometheus_client would (into multiprocess_dir(), or in
    memory)."""
    if _handoff_in_environment():
        attach()
        return
    _native.record_standalone(_process_name(), multiprocess_dir())
    _close_at_exit()


# One close at a time: the SIGTERM handler, atexit and an engine thread may
# all call it; reentrant for a signal handler that runs inside a close.
_close_lock = threading.RLock()


def _new_close_lock_in_child():
    # A fork while another thread closes must not leave the child's lock held.
    global _close_lock
    _close_lock = threading.RLock()


def close(timeout=None):
    """Drains and closes this process's outputs within timeout seconds (the
    configured budget when None) and returns the report (a dict with
    'outputs', 'closed_in_time', 'elapsed', 'table', and 'unstored_series'
    and 'unstored_events': what this process's Prometheus store kept in
    memory because its metric file could not grow). Safe to repeat.
    Final: recording afterwards raises ClosedError, and the launcher's
    SIGTERM and SIGINT handlers go back to what they were before start()."""
    with _close_lock:
        report = _native.close(timeout)
        _signals.restore()
        return report


def metrics_url():
    """The node's /metrics URL, or '' (no endpoint, or not the launcher)."""
    return _native.metrics_url()


def exposition_text():
    """The merged text exposition of every process: this process's node (from
    any process of it), or the directory its processes share
    (multiprocess_dir(), whether this process records or not); a process
    recording in its memory gives its own series."""
    if _in_launched_node() or _native.role() is not None:
        return _native.render_metrics()
    directory = multiprocess_dir()
    return _native.render_directory(directory) if directory else ""


def generate_latest(registry=None):
    """exposition_text() as bytes, as prometheus_client.generate_latest
    gives it; any process may call it. registry is not read: this is the
    node's text as the host renders it (what a registry of
    tokenspeed_metrics.prometheus_client gives, written as prometheus_client
    writes it, is that module's generate_latest(registry))."""
    return exposition_text().encode()


def role():
    """'launcher' (start() ran here), 'producer' (attached to a launcher),
    'standalone' (recording without a launcher) or None (nothing yet)."""
    return _native.role()


def _startup_error_part(index):
    return property(lambda error: error.args[index] if len(error.args) > index else "",
                    doc="the %s at fault, '' if none" % ("reporter", "file", "key")[index - 1])


StartupError.reporter = _startup_error_part(1)
StartupError.file = _startup_error_part(2)
StartupError.key = _startup_error_part(3)


_native.set_attach_hook(_attach_on_first_use)
os.register_at_fork(after_in_child=_native.after_fork_in_child)
os.register_at_fork(after_in_child=_new_close_lock_in_child)
