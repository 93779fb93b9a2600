"""_tokenspeed_metrics_bridge — the Python half of the python.so output plugin:
discovers tokenspeed.plugins entry points, calls each register() once, checks
what it declared, and turns validate / start_node / create_sink results into
plain JSON for the host. Called by python.so with the GIL held; never called
on a collector thread and never starts a thread of its own."""
import collections.abc
import importlib.metadata
import importlib.util
import json
import math
import os
import re
import sys

ENTRY_POINT_GROUP = "tokenspeed.plugins"
RESERVED_NAME = "prometheus"
_NAME = re.compile(r"[a-z0-9_.-]{1,64}\Z")
_HERE = os.path.dirname(os.path.abspath(__file__))


def _load_own(module_name):
    """This project's copy of tokenspeed.runtime.metrics.<module_name>, loaded
    from beside this file whatever `import` would find (an installed TokenSpeed
    engine ships its own)."""
    path = os.path.join(_HERE, "tokenspeed", "runtime", "metrics", module_name + ".py")
    spec = importlib.util.spec_from_file_location(
        "tokenspeed.runtime.metrics." + module_name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# `import tokenspeed.runtime.metrics.events` (and the registry, during
# register()) finds this project's namespace portion last on sys.path: an
# installed TokenSpeed engine's regular package wins wherever it is. (python.so
# put this folder first only to import this module and takes that entry out.)
sys.path.append(_HERE)

registry = _load_own("registry")
events = _load_own("events")
MetricEvent = events.MetricEvent


def describe(error):
    """One line: the exception type and its message."""
    text = str(error).replace("\n", " ").strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _thread_count():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return -1


def plain_json(value, what):
    """JSON text of value, which must be a JSON object of plain data; raises
    ValueError naming the first part that is not (a live object, a non-str
    key, NaN)."""
    def check(item, where):
        if item is None or isinstance(item, (bool, str)):
            return
        if isinstance(item, (int, float)):
            if isinstance(item, float) and not math.isfinite(item):
                raise ValueError(f"{where} is {item!r}, not a JSON number")
            if type(item) not in (int, float):
                raise ValueError(f"{where} is a {type(item).__name__}, not plain JSON data")
            return
        if type(item) is dict:
            for key, child in item.items():
                if not isinstance(key, str):
                    raise ValueError(f"{where} has a key {key!r} that is not a string")
                check(child, f"{where}[{key!r}]")
            return
        if type(item) in (list, tuple):
            for index, child in enumerate(item):
                check(child, f"{where}[{index}]")
            return
        raise ValueError(f"{where} is a live object ({type(item).__module__}."
                         f"{type(item).__qualname__}), not plain JSON data; only plain "
                         f"configuration crosses to producer processes")

    if type(value) is not dict:
        raise ValueError(f"{what} is a {type(value).__name__}, not a JSON object")
    check(value, what)
    return json.dumps(value, allow_nan=False, separators=(",", ":"))


def close_quietly(obj, timeout):
    """obj.close(timeout); '' or the error as one line."""
    try:
        obj.close(timeout)
        return ""
    except Exception as error:  # noqa: BLE001 - every plugin error is reported
        return describe(error)


class Reporter:
    """One declared output name and its three factories."""

    def __init__(self, package, name, validate, create_sink, start_node, override):
        self.package = package
        self.name = name
        self.validate = validate
        self.create_sink_factory = create_sink
        self.start_node = start_node
        self.override = override

    def validate_json(self, config_text):
        config = json.loads(config_text)
        result = self.validate(config)
        return plain_json(result, "validate() result")

    def start_node_json(self, config_text):
        """(session, producer config JSON); the session is closed again when
        its producer_config is not plain JSON."""
        session = self.start_node(json.loads(config_text))
        try:
            producer_config = session.producer_config
            if not callable(getattr(session, "close", None)):
                raise TypeError("start_node() returned an object without close(timeout)")
            return session, plain_json(producer_config, "producer_config")
        except Exception:
            if callable(getattr(session, "close", None)):
                close_quietly(session, 1.0)
            raise

    def create_sink(self, producer_config_text):
        """(sink, sink.emit, sink.close, its figures reader or None)."""
        sink = self.create_sink_factory(json.loads(producer_config_text))
        emit = getattr(sink, "emit", None)
        close = getattr(sink, "close", None)
        if not callable(emit) or not callable(close):
            if callable(close):
                close_quietly(sink, 1.0)
            raise TypeError("create_sink() returned an object without emit(event) and "
                            "close(timeout)")
        return sink, emit, close, figures_reader(sink)


# The delivery figures a sink may report (docs/python-plugins.md), in the
# order the bridge hands them to the host.
FIGURES = ("sent", "refused", "lost", "retries", "pending")


def figures_reader(sink):
    """A function returning sink.figures() as a tuple of the FIGURES counts
    (a missing key is 0), raising with what is wrong; None when the sink has
    no figures()."""
    figures = getattr(sink, "figures", None)
    if not callable(figures):
        return None

    def read():
        result = figures()
        if not isinstance(result, collections.abc.Mapping):
            raise TypeError(f"figures() returned {type(result).__name__}, not a mapping of "
                            f"{', '.join(FIGURES)}")
        unknown = sorted(str(key) for key in result if key not in FIGURES)
        if unknown:
            raise ValueError(f"figures() returned unknown keys {', '.join(unknown)} "
                             f"(known: {', '.join(FIGURES)})")
        counts = []
        for key in FIGURES:
            value = result.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
                raise ValueError(f"figures()['{key}'] is {value!r}, not a count (an int from 0)")
            counts.append(value)
        return tuple(counts)

    return read


class Package:
    """One entry point of the group: what its register() declared, or why it
    declared nothing."""

    def __init__(self, entry_point):
        self.entry_point = entry_point.name
        dist = getattr(entry_point, "dist", None)
        self.distribution = f"{dist.name} {dist.version}" if dist is not None else "?"
        # Shown by `tokenspeed-metrics plugins` as the version of its reporters.
        self.version = (dist.version or "") if dist is not None else ""
        self.value = entry_point.value
        self.status = "failed"
        self.reason = ""
        self.reporters = []
        self.attempted = []

    def title(self):
        return (f"Python plugin package '{self.entry_point}' ({self.distribution}, "
                f"{self.value})")


def _declaration_checker(package, taken):
    """The function register_metric_reporter forwards to during package's
    register(): checks each declaration against the specification's rules."""
    def declare(name, *, validate, create_sink, start_node, override):
        package.attempted.append(str(name))
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"invalid reporter name {name!r} (1-64 characters of [a-z0-9_.-])")
        if name == RESERVED_NAME:
            raise ValueError("the name 'prometheus' is reserved for the built-in output")
        if not callable(validate) or not callable(create_sink):
            raise TypeError(f"reporter '{name}': validate and create_sink must be callable")
        if start_node is not None and not callable(start_node):
            raise TypeError(f"reporter '{name}': start_node must be callable or None")
        if not isinstance(override, bool):
            raise TypeError(f"reporter '{name}': override must be True or False")
        if name in taken and not override:
            raise ValueError(f"reporter '{name}' is already registered by {taken[name]} "
                             f"(pass override=True to replace it)")
        package.reporters.append(
            Reporter(package, name, validate, create_sink, start_node, override))
    return declare


def _entry_points():
    found = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    first = {}
    for entry_point in found:
        first.setdefault(entry_point.name, entry_point)  # sys.path order: first wins
    return [first[name] for name in sorted(first)]


def discover(disabled_text):
    """Calls register() of every enabled entry point once; returns the
    Packages in name order. A package whose register() raised, declared a bad
    name or started a thread keeps no reporter."""
    disabled = {part.strip() for part in disabled_text.split(",") if part.strip()}
    taken = {}  # reporter name -> title of the package that declared it
    packages = []
    for entry_point in _entry_points():
        package = Package(entry_point)
        packages.append(package)
        if package.entry_point in disabled:
            package.status = "disabled"
            package.reason = "disabled by TOKENSPEED_DISABLE_PLUGINS"
            continue
        _run_register(package, entry_point, taken)
        if package.status == "loaded":
            for reporter in package.reporters:
                taken[reporter.name] = package.title()
        else:
            package.reporters = []
    return packages


def _run_register(package, entry_point, taken):
    saved = sys.modules.get("tokenspeed.runtime.metrics.registry")
    sys.modules["tokenspeed.runtime.metrics.registry"] = registry
    registry._declare = _declaration_checker(package, taken)
    threads_before = _thread_count()
    try:
        register = entry_point.load()
        register()
        package.status = "loaded"
    except Exception as error:  # noqa: BLE001 - any failure is the package's
        package.reason = "register() failed: " + describe(error)
    finally:
        registry._declare = None
        if saved is None:
            sys.modules.pop("tokenspeed.runtime.metrics.registry", None)
        else:
            sys.modules["tokenspeed.runtime.metrics.registry"] = saved
    threads_after = _thread_count()
    if threads_before >= 0 and threads_after > threads_before:
        package.status = "failed"
        package.reason = (f"register() started a thread ({threads_before} threads before, "
                          f"{threads_after} after); registration must only declare factories")
