"""CollectorRegistry and REGISTRY: which collectors a registry holds, with
prometheus_client's duplicate check, and their text as prometheus_client's
generate_latest writes it. In the launcher a registry reads the node's
merged exposition; one holding a MultiProcessCollector gives all of it, as
prometheus_client's multiprocess registry gives every process's files. In
any other process a registry without a MultiProcessCollector gives this
process's own figures of its families, as prometheus_client's registry does
there. Custom collectors (any object with collect()) are called as
prometheus_client calls them, in the order they were registered."""
import threading

# read_exposition stays a name of this module, where it was first.
from ._exposition_reader import (  # noqa: F401
    exposition_blocks, python_bound_text, read_exposition, respelled_exposition,
)
from ._node import collects_node, node_exposition, node_metrics
from .multiprocess import MultiProcessCollector

# The sample names a family of each type claims besides its own name, for
# the duplicate check (prometheus_client's table).
_TYPE_SUFFIXES = {
    "counter": ("_total", "_created"),
    "summary": ("_sum", "_count", "_created"),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "gaugehistogram": ("_bucket", "_gsum", "_gcount"),
    "info": ("_info",),
}

# Munging of OpenMetrics types into the text format's (generate_latest's).
_TEXT_TYPES = {"info": "gauge", "stateset": "gauge", "gaugehistogram": "histogram",
               "unknown": "untyped"}


def _escaped_help(text):
    return text.replace("\\", r"\\").replace("\n", r"\n")


def _sample_line(sample):
    labels = ""
    if sample.labels:
        labels = "{%s}" % ",".join(
            '%s="%s"' % (key, value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r'\"'))
            for key, value in sorted(sample.labels.items()))
    timestamp = ""
    if sample.timestamp is not None:
        timestamp = " %d" % int(float(sample.timestamp) * 1000)  # milliseconds
    return "%s%s %s%s\n" % (sample.name, labels, python_bound_text(sample.value), timestamp)


def text_of(metrics):
    """metrics in the text format (0.0.4), exactly as prometheus_client's
    generate_latest writes them: a counter named <name>_total, info and
    stateset as gauges, labels sorted by name, values by floatToGoString,
    and _created, _gsum and _gcount samples moved into gauge families of
    their own after their family."""
    out = []
    for metric in metrics:
        name, typ = metric.name, metric.type
        if typ == "counter":
            name += "_total"
        elif typ == "info":
            name += "_info"
        typ = _TEXT_TYPES.get(typ, typ)
        documentation = _escaped_help(metric.documentation)
        out.append("# HELP %s %s\n" % (name, documentation))
        out.append("# TYPE %s %s\n" % (name, typ))
        moved = {}
        for sample in metric.samples:
            for suffix in ("_created", "_gsum", "_gcount"):
                if sample.name == metric.name + suffix:
                    moved.setdefault(suffix, []).append(_sample_line(sample))
                    break
            else:
                out.append(_sample_line(sample))
        for suffix, lines in sorted(moved.items()):
            out.append("# HELP %s%s %s\n" % (metric.name, suffix, documentation))
            out.append("# TYPE %s%s gauge\n" % (metric.name, suffix))
            out.extend(lines)
    return "".join(out)


class Collector:
    """prometheus_client's Collector interface: collect() gives Metric
    objects; describe(), when there, the families it will give (for the
    duplicate check at registration)."""

    def collect(self):
        raise NotImplementedError

    def describe(self):
        return []


def _is_node_family(collector):
    """A family of this module: its figures are the host's (the node's
    exposition in the launcher, the process's own elsewhere)."""
    return getattr(collector, "_node_family", False)


def _exposed_names(collector, names):
    """The names the node exposes collector's families by: a family of this
    module's own as the host names it in this process (a view may rename
    it), the others' as registered."""
    exposed = getattr(collector, "_exposed_name", None)
    return {exposed} if isinstance(exposed, str) else set(names)


class CollectorRegistry(Collector):
    def __init__(self, auto_describe=False, target_info=None):
        if target_info:
            raise NotImplementedError(
                "CollectorRegistry(target_info=...) is not offered: put those labels on the "
                "scrape target instead")
        self._collector_to_names = {}
        self._names_to_collectors = {}
        self._multiprocess_collectors = []
        self._auto_describe = auto_describe
        self._lock = threading.Lock()

    def _get_names(self, collector):
        """The sample names collector claims, as prometheus_client counts
        them: from describe() when it has one, else from collect() in a
        registry with auto_describe (REGISTRY), else none."""
        describe = getattr(collector, "describe", None)
        if not describe and self._auto_describe:
            describe = collector.collect
        if not describe:
            return []
        names = []
        for metric in describe():
            names.append(metric.name)
            names.extend(metric.name + suffix for suffix in _TYPE_SUFFIXES.get(metric.type, ()))
        return names

    def register(self, collector):
        """Adds a family of this module, a MultiProcessCollector, or a custom
        collector (any object with collect()); a name another collector of
        this registry claims raises prometheus_client's ValueError
        ("Duplicated timeseries in CollectorRegistry")."""
        with self._lock:
            # A MultiProcessCollector's families are the node's: it claims no
            # name (its collect() would read the whole node here).
            multiprocess = isinstance(collector, MultiProcessCollector)
            names = [] if multiprocess else self._get_names(collector)
            duplicates = set(self._names_to_collectors).intersection(names)
            if duplicates:
                raise ValueError("Duplicated timeseries in CollectorRegistry: {}".format(
                    duplicates))
            for name in names:
                self._names_to_collectors[name] = collector
            self._collector_to_names[collector] = names
            if multiprocess:
                self._multiprocess_collectors.append(collector)

    def unregister(self, collector):
        """Forgets the collector here (a new one of the same name may be
        registered). A family's series stay on /metrics, as its file keeps
        them in prometheus_client's multiprocess mode."""
        with self._lock:
            for name in self._collector_to_names[collector]:
                del self._names_to_collectors[name]
            del self._collector_to_names[collector]
            if collector in self._multiprocess_collectors:
                self._multiprocess_collectors.remove(collector)

    def _snapshot(self):
        """(collectors in the order of registration, {collector: names},
        whether a MultiProcessCollector is among them)."""
        with self._lock:
            names = dict(self._collector_to_names)
            return list(names), names, bool(self._multiprocess_collectors)

    def collect(self):
        """The families of this registry as Metric objects (name,
        documentation, type, samples), collector by collector in the order
        of registration: a MultiProcessCollector's are every family of the
        node; a family of this module is the node's merged one in the
        launcher, this process's own elsewhere (with a MultiProcessCollector
        it is already among the node's); a custom collector's are what its
        collect() gives."""
        collectors, names, everything = self._snapshot()
        metrics, node, shown = [], None, set()
        for collector in collectors:
            if isinstance(collector, MultiProcessCollector):
                metrics.extend(collector.collect())
            elif not _is_node_family(collector):
                metrics.extend(collector.collect())
            elif everything:
                continue
            elif collects_node():
                if node is None:
                    node = node_metrics()
                # A view may rename a family, and give two families one name:
                # each of the node's families is shown once.
                wanted = _exposed_names(collector, names[collector]) - shown
                shown |= wanted
                metrics.extend(metric for metric in node if metric.name in wanted)
            else:
                metrics.append(collector._process_metric())
        return metrics

    def exposition_text(self):
        """The text of generate_latest(self): what collect() gives, written
        as prometheus_client writes it. The node's families are read from
        its exposition and re-spelled (labels sorted, values and le by
        floatToGoString, histogram samples in prometheus_client's order)."""
        collectors, names, everything = self._snapshot()
        parts, blocks = [], None
        for collector in collectors:
            if isinstance(collector, MultiProcessCollector):
                parts.append(respelled_exposition(collector.exposition_text(), "multiprocess"))
            elif not _is_node_family(collector):
                parts.append(text_of(collector.collect()))
            elif everything:
                continue
            elif collects_node():
                if blocks is None:
                    blocks = exposition_blocks(node_exposition())
                for name in names[collector]:
                    if name in blocks:
                        parts.append(respelled_exposition(blocks[name], "single"))
            else:
                parts.append(text_of([collector._process_metric()]))
        return "".join(parts)

    def get_sample_value(self, name, labels=None):
        labels = labels or {}
        for metric in self.collect():
            for sample in metric.samples:
                if sample.name == name and sample.labels == labels:
                    return sample.value
        return None

    def restricted_registry(self, names):
        raise NotImplementedError(
            "restricted_registry() is not offered: read generate_latest(registry) and keep the "
            "families you need")


REGISTRY = CollectorRegistry(auto_describe=True)
