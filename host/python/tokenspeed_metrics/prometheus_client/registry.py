"""CollectorRegistry and REGISTRY: which families a registry names, with
prometheus_client's duplicate check. In the launcher a registry reads the
node's merged exposition; one holding a MultiProcessCollector gives all of
it, as prometheus_client's multiprocess registry gives every process's
files. In any other process a registry without a MultiProcessCollector
gives this process's own figures of its families, as prometheus_client's
registry does there."""
import threading

import _tokenspeed_metrics as _native

import tokenspeed_metrics as _tsm

from ._exposition_reader import python_bound_text, read_exposition

_TYPE_SUFFIXES = {
    "counter": ("_total", "_created"),
    "summary": ("_sum", "_count", "_created"),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "info": ("_info",),
}


def node_exposition():
    """The merged text exposition of every process (tokenspeed_metrics.exposition_text)."""
    return _tsm.exposition_text()


def node_metrics():
    return read_exposition(node_exposition())


def collects_node():
    """Whether a registry without a MultiProcessCollector reads the node's
    merged exposition (in the launcher) or this process's own figures."""
    return _native.role() == "node"


def _escaped(text, quotes):
    text = text.replace("\\", r"\\").replace("\n", r"\n")
    return text.replace('"', r'\"') if quotes else text


def text_of(metrics):
    """metrics in the text format (0.0.4), as prometheus_client's
    generate_latest writes them."""
    out = []
    for metric in metrics:
        name, typ = metric.name, metric.type
        if typ == "counter":
            name += "_total"
        elif typ == "info":
            name, typ = name + "_info", "gauge"
        elif typ == "stateset":
            typ = "gauge"
        elif typ == "unknown":
            typ = "untyped"
        out.append("# HELP %s %s\n" % (name, _escaped(metric.documentation, False)))
        out.append("# TYPE %s %s\n" % (name, typ))
        for sample in metric.samples:
            labels = ""
            if sample.labels:
                labels = "{%s}" % ",".join('%s="%s"' % (key, _escaped(value, True))
                                           for key, value in sorted(sample.labels.items()))
            out.append("%s%s %s\n" % (sample.name, labels, python_bound_text(sample.value)))
    return "".join(out)


class Collector:
    """prometheus_client's Collector interface, for isinstance checks."""

    def collect(self):
        raise NotImplementedError

    def describe(self):
        return []


def _names_of(collector):
    """The sample names a family of this package claims, as prometheus_client's
    registry counts them for its duplicate check."""
    typ = getattr(collector, "_type", None)
    name = getattr(collector, "_name", None)
    if typ is None or name is None or not getattr(collector, "_node_family", False):
        raise ValueError(
            "tokenspeed_metrics.prometheus_client: %r is not a family of this module; custom "
            "collectors are not offered (the node merges what families record): record the "
            "values with a Gauge or a Counter of tokenspeed_metrics.prometheus_client instead"
            % (collector,))
    return [name] + [name + suffix for suffix in _TYPE_SUFFIXES.get(typ, ())]


class CollectorRegistry(Collector):
    def __init__(self, auto_describe=False, target_info=None):
        if target_info:
            raise NotImplementedError(
                "CollectorRegistry(target_info=...) is not offered: put those labels on the "
                "scrape target instead")
        self._collector_to_names = {}
        self._names_to_collectors = {}
        self._multiprocess_collectors = []
        self._lock = threading.Lock()

    def register(self, collector):
        from .multiprocess import MultiProcessCollector
        with self._lock:
            if isinstance(collector, MultiProcessCollector):
                self._multiprocess_collectors.append(collector)
                self._collector_to_names[collector] = []
                return
            names = _names_of(collector)
            duplicates = set(self._names_to_collectors).intersection(names)
            if duplicates:
                raise ValueError("Duplicated timeseries in CollectorRegistry: {}".format(
                    duplicates))
            for name in names:
                self._names_to_collectors[name] = collector
            self._collector_to_names[collector] = names

    def unregister(self, collector):
        """Forgets the family here (a new one of the same name may be
        registered). Its series stay on /metrics, as its file keeps them in
        prometheus_client's multiprocess mode."""
        with self._lock:
            for name in self._collector_to_names[collector]:
                del self._names_to_collectors[name]
            del self._collector_to_names[collector]
            if collector in self._multiprocess_collectors:
                self._multiprocess_collectors.remove(collector)

    def _shows_everything(self):
        return bool(self._multiprocess_collectors)

    def collect(self):
        """The families of this registry as Metric objects (name, documentation,
        type, samples): in the launcher with the node's merged values, in any
        other process with that process's own (with a MultiProcessCollector:
        every process's, launcher only)."""
        if self._shows_everything():
            return self._multiprocess_collectors[0].collect()
        if not collects_node():
            with self._lock:
                collectors = list(self._collector_to_names)
            return [collector._process_metric() for collector in collectors]
        metrics = node_metrics()
        with self._lock:
            names = set(self._names_to_collectors)
        return [metric for metric in metrics if metric.name in names]

    def exposition_text(self):
        """The text of generate_latest(self)."""
        if not self._shows_everything() and not collects_node():
            return text_of(self.collect())
        if self._shows_everything():
            return self._multiprocess_collectors[0].exposition_text()
        text = node_exposition()
        with self._lock:
            names = set(self._names_to_collectors)
        return _blocks_named(text, names)

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


def _blocks_named(text, names):
    """The families of text whose name (a counter's without _total) is in names."""
    kept, keep = [], False
    for line in text.splitlines(keepends=True):
        if line.startswith("# HELP "):
            sample_name = line[7:].split(" ", 1)[0]
            keep = sample_name in names or (sample_name.endswith("_total")
                                            and sample_name[:-6] in names)
        if keep:
            kept.append(line)
    return "".join(kept)


REGISTRY = CollectorRegistry(auto_describe=True)
