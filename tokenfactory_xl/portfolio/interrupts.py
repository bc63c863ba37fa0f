"""How a run ends when it is stopped (Ctrl-C, ``kill``, a scheduler's time limit): quietly.

While :func:`stop_on_signals` is active, SIGINT and SIGTERM raise :class:`Stopped` in the main
thread, so every ``finally`` and every clean-up of temporary files runs, and the command ends
with one line and the shell's customary status (128 + the signal's number: 130 for SIGINT, 143
for SIGTERM). A second signal during the clean-up is ignored. Worker processes
(:mod:`tokenfactory_xl.portfolio.workers`) ignore both signals: the parent decides, kills them and
removes what they left.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

#: The signals a run stops on.
SIGNALS: tuple[int, ...] = tuple(
    s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None)) if s)


class Stopped(BaseException):
    """The run received SIGINT or SIGTERM.

    A ``BaseException``, like ``KeyboardInterrupt``, so that code catching ``Exception`` to
    carry on with the next file does not swallow it.
    """

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(self.name)

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_status(self) -> int:
        """128 + the signal's number, as a shell reports a process ended by it."""
        return 128 + self.signum


def _raise(signum: int, _frame: object) -> None:
    for s in SIGNALS:  # the clean-up that follows must not be interrupted in turn
        signal.signal(s, signal.SIG_IGN)
    raise Stopped(signum)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise :class:`Stopped` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _raise) for s in SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
