"""The helpers behind count_exceptions(), track_inprogress() and time(): each
is a context manager and a decorator, as prometheus_client's are."""
import functools
from timeit import default_timer


class _ContextDecorator:
    def __call__(self, function):
        @functools.wraps(function)
        def wrapped(*args, **kwargs):
            with self._fresh():
                return function(*args, **kwargs)
        return wrapped

    def _fresh(self):
        return self


class ExceptionCounter(_ContextDecorator):
    def __init__(self, counter, exception):
        self._counter = counter
        self._exception = exception

    def __enter__(self):
        return None

    def __exit__(self, typ, value, traceback):
        if isinstance(value, self._exception):
            self._counter.inc()
        return False


class InprogressTracker(_ContextDecorator):
    def __init__(self, gauge):
        self._gauge = gauge

    def __enter__(self):
        self._gauge.inc()

    def __exit__(self, typ, value, traceback):
        self._gauge.dec()


class Timer(_ContextDecorator):
    """Calls metric.<callback_name>(seconds) when the block ends."""

    def __init__(self, metric, callback_name):
        self._metric = metric
        self._callback_name = callback_name
        self._start = None

    def _fresh(self):
        # A decorated function may run in several threads at once.
        return Timer(self._metric, self._callback_name)

    def __enter__(self):
        self._start = default_timer()
        return self

    def __exit__(self, typ, value, traceback):
        duration = max(default_timer() - self._start, 0)  # time can go backwards
        getattr(self._metric, self._callback_name)(duration)

    def labels(self, *args, **kwargs):
        self._metric = self._metric.labels(*args, **kwargs)
