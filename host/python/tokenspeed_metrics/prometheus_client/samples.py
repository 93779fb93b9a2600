"""Sample: one line of an exposition, as prometheus_client.samples gives it
(engines import it to read REGISTRY.collect())."""
from typing import NamedTuple


class Sample(NamedTuple):
    name: str
    labels: dict
    value: float
    timestamp: object = None
    exemplar: object = None
