"""Metric: one family of what a registry collects (name, documentation,
type, unit, samples), as prometheus_client.metrics_core gives it."""
from .samples import Sample


class Metric:
    def __init__(self, name, documentation, typ, unit=""):
        self.name = name
        self.documentation = documentation
        self.type = typ
        self.unit = unit
        self.samples = []

    def add_sample(self, name, labels, value, timestamp=None, exemplar=None):
        self.samples.append(Sample(name, labels, value, timestamp, exemplar))

    def __eq__(self, other):
        return (isinstance(other, Metric) and self.name == other.name
                and self.documentation == other.documentation and self.type == other.type
                and self.unit == other.unit and self.samples == other.samples)

    def __repr__(self):
        return "Metric(%s, %s, %s, %s, %s)" % (self.name, self.documentation, self.type,
                                               self.unit, self.samples)
