"""eventually.py — the one way the Python tests (test/cli, test/python,
test/integration, test/python_plugins) wait for something a process they
started brings about: poll a condition until it holds. The timeout is a hang
guard, generous for a busy CI machine; no test relies on it as a timing.

Each folder puts this one on its path: test/python in conftest.py, test/cli
in cli_harness.py, test/integration in simulate_harness.py."""
import time

# A run that has not got there within a minute has hung.
HANG_GUARD_S = 60


def eventually(condition, timeout=HANG_GUARD_S, interval=0.1, what=None):
    """condition()'s first true value, polled every interval seconds. When
    timeout passes first: condition()'s last value (for the caller to
    assert on), or, given what, an AssertionError naming it."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            if what is not None:
                raise AssertionError(f"not within {timeout} s: {what}")
            return value
        time.sleep(interval)
