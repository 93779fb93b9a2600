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
