"""MultiProcessCollector and mark_process_dead: the launcher's exposition of
the node. The host merges every process's store itself (as
prometheus_client's multiprocess collector merges its files): no directory
is read from PROMETHEUS_MULTIPROC_DIR, and a dead process's live gauges
leave /metrics without mark_process_dead."""
from .registry import node_metrics


class MultiProcessCollector:
    """Registered in a CollectorRegistry, makes it show every family of every
    process of the node (the launcher's merged exposition). path is not
    read: the host knows its run directory."""

    def __init__(self, registry, path=None):
        self._path = path
        if registry:
            registry.register(self)

    def collect(self):
        return node_metrics()


def mark_process_dead(pid, path=None):
    """Does nothing, correctly: the host notices a process's end itself and
    drops its live gauges (liveall, livesum, livemax, livemin,
    livemostrecent) from /metrics, as this call makes prometheus_client do."""
    return None
