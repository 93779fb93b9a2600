"""The node as this module reads it: whether a registry shows the node's
merged figures (the launcher) or this process's own, the node's exposition
and its families as Metric objects, and the exposition of every process that
a MultiProcessCollector gives (the node under a launcher, else the directory
the engine's processes record into). The one module here that asks the
tokenspeed_metrics package about the node; registry, multiprocess and
metrics read it through these."""
import _tokenspeed_metrics as _native

import tokenspeed_metrics as _tsm

from ._exposition_reader import read_exposition


def collects_node():
    """Whether a registry without a MultiProcessCollector reads the node's
    merged exposition (in the launcher) or this process's own figures."""
    return _native.role() == "launcher"


def node_exposition():
    """The merged text exposition of every process (tokenspeed_metrics.exposition_text)."""
    return _tsm.exposition_text()


def node_metrics():
    return read_exposition(node_exposition())


def in_launched_node():
    """Whether this process belongs to a launcher's node (attaching now
    when it has the launcher's handoff and has not recorded yet)."""
    return _tsm._in_launched_node()


def every_process_exposition(directory):
    """Every process's families in the text format (0.0.4): the node's
    under a launcher, else those recorded into directory."""
    if in_launched_node():
        return _native.render_metrics()
    return _native.render_directory(directory)
