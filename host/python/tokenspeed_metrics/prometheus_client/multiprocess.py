"""MultiProcessCollector and mark_process_dead: the exposition of every
process, as prometheus_client's multiprocess mode gives it. Under a launcher
(tokenspeed_metrics.start()) it is the launcher's node, in any process of
it; without one it is the directory the engine's processes record into,
PROMETHEUS_MULTIPROC_DIR, as there. A dead process's live gauges leave the
exposition without mark_process_dead."""
import os

from ._exposition_reader import read_exposition
from ._node import every_process_exposition, in_launched_node


class MultiProcessCollector:
    """Registered in a CollectorRegistry, makes it show every family of every
    process. Without a launcher, path (default PROMETHEUS_MULTIPROC_DIR) is
    the directory read, and ValueError says it is missing, as in
    prometheus_client; under a launcher the node's run directory is read."""

    def __init__(self, registry, path=None):
        if path is None:
            path = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
        if not in_launched_node() and (not path or not os.path.isdir(path)):
            raise ValueError("env PROMETHEUS_MULTIPROC_DIR is not set or not a directory")
        self._path = path
        if registry:
            registry.register(self)

    def exposition_text(self):
        """Every process's families in the text format (0.0.4)."""
        return every_process_exposition(self._path)

    def collect(self):
        return read_exposition(self.exposition_text())


def mark_process_dead(pid, path=None):
    """Takes what prometheus_client's takes (pid, and path: a directory,
    $PROMETHEUS_MULTIPROC_DIR there when None) and removes nothing, so a
    directory that is not set or does not exist is no error. The host
    notices a process's end itself and drops its live gauges (liveall,
    livesum, livemax, livemin, livemostrecent) from /metrics, which is what
    this call makes prometheus_client do by deleting the process's
    gauge_live*_<pid>.db files. The host's own file of that process also
    holds its counters and histograms, which stay on /metrics (as
    prometheus_client keeps their files): it is the host's to keep."""
    return None
