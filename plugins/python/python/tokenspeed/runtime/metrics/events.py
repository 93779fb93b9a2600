"""tokenspeed.runtime.metrics.events — what a metric output plugin receives:
MetricEvent, and the shapes of MetricEventSink, MetricNodeSession and
MetricConfig. Shipped by tokenspeed-metrics; plain types, no behaviour."""
from typing import Any, Dict, Mapping, NamedTuple, Protocol

# A reporter's settings, its normalized configuration and its producer
# configuration: a JSON object of plain data (str keys; str, int, float,
# bool, None, lists and objects of them).
MetricConfig = Dict[str, Any]


class MetricEvent(NamedTuple):
    """One observation before aggregation. Read-only (a tuple); labels is a
    read-only mapping. observe(0.01) with weight 3 is three samples of 0.01."""
    timestamp_ns: int          # wall clock of the observation, Unix ns
    metric: str                # metric name; counters end in _total
    operation: str             # "inc", "set" or "observe"
    value: float               # counter delta, gauge value or observation
    labels: Mapping[str, str]  # as supplied by the collection point
    weight: int = 1            # observation multiplicity; 1 for inc and set


class MetricEventSink(Protocol):
    """A process-local output. No base class is required."""

    def emit(self, event: MetricEvent) -> None:
        """Queue one event and return promptly (no I/O, no waiting)."""

    def close(self, timeout: float) -> None:
        """Stop accepting events, flush within timeout seconds, release everything."""


class MetricNodeSession(Protocol):
    """Launcher-owned resources shared by the node, returned by start_node."""

    producer_config: MetricConfig

    def close(self, timeout: float) -> None:
        """Release the node's resources within timeout seconds."""
