"""SIGTERM and SIGINT in a Python launcher: close the node, then do what the
process did before.

Python's default action for SIGTERM (docker stop, kubectl delete) ends the
process without running atexit, which would leave the run directory and the
producers' files behind. start() installs these handlers in the launcher's
main thread: they close the node as close() does, then chain to the handler
that was there before (the engine's Python handler, KeyboardInterrupt for
SIGINT, or the default action, so the process still ends by the signal).
Never installed in a producer; a child forked from the launcher only chains.
"""
import os
import signal
import sys
import threading

_previous = {}  # signal number -> the handler ours replaced
_launcher_pid = None  # the process that installed them
_close_node = None  # tokenspeed_metrics.close


def install(close):
    """Installs the handlers when called from the main thread. A signal that
    is ignored (SIG_IGN) or handled outside Python (getsignal gives None)
    is left as it is, and so is SIGINT in an interactive interpreter, where
    Ctrl-C cancels a line rather than ends the process."""
    global _launcher_pid, _close_node
    if threading.current_thread() is not threading.main_thread():
        return
    _close_node = close
    _launcher_pid = os.getpid()
    signals = [signal.SIGTERM]
    if not (sys.flags.interactive or hasattr(sys, "ps1")):
        signals.append(signal.SIGINT)
    for signum in signals:
        previous = signal.getsignal(signum)
        if previous is None or previous == signal.SIG_IGN or previous is _on_signal:
            continue
        try:
            signal.signal(signum, _on_signal)
        except ValueError:  # not the main interpreter: signals are not ours to handle
            return
        _previous[signum] = previous


def restore():
    """Puts the previous handlers back where ours are still installed (the
    main thread of the launcher only; elsewhere ours stay and only chain)."""
    if os.getpid() != _launcher_pid or threading.current_thread() is not threading.main_thread():
        return
    for signum, previous in list(_previous.items()):
        if signal.getsignal(signum) is _on_signal:
            signal.signal(signum, previous)
        del _previous[signum]


def _on_signal(signum, frame):
    previous = _previous.get(signum, signal.SIG_DFL)
    try:
        if os.getpid() == _launcher_pid:
            _close_node()  # close() restores the previous handlers too
    finally:
        _chain(signum, frame, previous)


def _chain(signum, frame, previous):
    if callable(previous):  # the engine's handler, or default_int_handler
        previous(signum, frame)
    elif previous == signal.SIG_DFL:
        # End by the signal as before: the exit status still says SIGTERM.
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)
