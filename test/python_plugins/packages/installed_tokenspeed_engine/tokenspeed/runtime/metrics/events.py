"""The engine's own events module."""
from typing import Any, Dict, Mapping, NamedTuple

MetricConfig = Dict[str, Any]


class MetricEvent(NamedTuple):
    timestamp_ns: int
    metric: str
    operation: str
    value: float
    labels: Mapping[str, str]
    weight: int = 1
