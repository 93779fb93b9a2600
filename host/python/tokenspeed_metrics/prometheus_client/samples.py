"""Sample, Exemplar and Timestamp: one line of an exposition and what may
ride on it, as prometheus_client.samples gives them (engines import them to
read REGISTRY.collect() and to build custom collectors' families)."""
from typing import NamedTuple


class Timestamp:
    """A time in whole seconds and nanoseconds (a Sample's timestamp may be
    one, or a float of seconds)."""

    def __init__(self, sec, nsec):
        if not 0 <= nsec < 1e9:
            raise ValueError("Invalid value for nanoseconds in Timestamp: %s" % (nsec,))
        if sec < 0:
            nsec = -nsec
        self.sec = int(sec)
        self.nsec = int(nsec)

    def __str__(self):
        return "%d.%09d" % (self.sec, self.nsec)

    def __repr__(self):
        return "Timestamp(%d, %d)" % (self.sec, self.nsec)

    def __float__(self):
        return float(self.sec) + float(self.nsec) / 1e9

    def __eq__(self, other):
        return isinstance(other, Timestamp) and (self.sec, self.nsec) == (other.sec, other.nsec)

    def __ne__(self, other):
        return not self == other

    def __gt__(self, other):
        # prometheus_client's comparison, kept as it is: either part greater.
        return self.sec > other.sec or self.nsec > other.nsec


class Exemplar(NamedTuple):
    labels: dict
    value: float
    timestamp: object = None


class Sample(NamedTuple):
    name: str
    labels: dict
    value: float
    timestamp: object = None
    exemplar: object = None
