"""Worker processes for a batch or a collect, made so that stopping them can never hang.

``multiprocessing.Pool`` shares one task queue among its workers, guarded by a lock that a worker
holds while it waits for work. A worker killed while holding it (a service manager sending
SIGTERM to the whole process group) leaves the lock taken, and ``Pool.terminate`` then waits for
it forever. Here each worker has a pipe of its own and nothing is shared: the parent hands out
chunks of tasks, collects the results from whichever worker is ready, and on any exception —
:class:`~tokenfactory_xl.portfolio.interrupts.Stopped` included — kills every worker and waits for
it before the exception goes on, so the caller's clean-up runs after the last worker is gone.

Workers ignore SIGINT and SIGTERM: the parent decides. When the parent itself dies (killed
outright, or by the system when memory runs out), a worker finds its pipe closed at its next
hand-over and leaves: a forked worker first closes the copies it inherited of the parent's ends
of the pipes (its own and the earlier workers'), so that the parent's end is held by the parent
alone and closes with it.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from multiprocessing.connection import Connection, wait
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def cores() -> int:
    """The processor cores this process may run on (its CPU affinity, where the system has one)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def passes(count: int, jobs: int, most: int) -> list[range]:
    """``count`` consecutive items in passes of at most ``most`` (a worker's task): with several
    workers, ever fewer towards the end (a share of what is left), so that all finish together.
    Every item is in one pass, in order."""
    parts, start = [], 0
    while start < count:
        size = most if jobs <= 1 else max(1, min(most, -(-(count - start) // (jobs * 2))))
        parts.append(range(start, min(count, start + size)))
        start += size
    return parts


class WorkerFailed(RuntimeError):
    """A worker process ended without handing back its results."""


def _ignore_stops() -> None:
    for name in ("SIGINT", "SIGTERM"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)


def _serve(conn: Connection, func: Callable[[T], R],
           initializer: Callable[..., None] | None, initargs: tuple,
           parents: tuple[Connection, ...] = ()) -> None:
    """A worker's life: take a chunk, hand back its results (or the exception), until told to
    stop (``None``) or the parent is gone. ``parents``: the parent's ends of the pipes, which a
    forked worker holds copies of (closed here: else the worker's own pipe never closes)."""
    _ignore_stops()
    for inherited in parents:
        inherited.close()
    if initializer is not None:
        initializer(*initargs)
    # What the worker holds for its whole life (the template, the compiled model) is never
    # garbage: the collector no longer walks it each time the tasks' objects are collected.
    gc.freeze()
    try:
        while True:
            chunk = conn.recv()
            if chunk is None:
                return
            try:
                conn.send((True, [func(task) for task in chunk]))
            except Exception as exc:  # noqa: BLE001 - handed to the parent, which raises it
                conn.send((False, exc))
    except (EOFError, OSError):  # the parent is gone
        return
    finally:
        conn.close()


class Workers:
    """``jobs`` worker processes serving ``func``, started at once and ready for one run of
    :meth:`imap_unordered`.

    A batch starts them before it reads the sites: a forked worker then holds the template it
    inherits, never the sites the parent reads afterwards. ``func``, ``initializer`` and the
    tasks must be picklable where processes spawn (Windows, macOS). Use as a context manager:
    leaving it, normally or by any exception, kills the workers still running and waits for them.
    """

    def __init__(self, func: Callable[[T], R], jobs: int, *,
                 initializer: Callable[..., None] | None = None, initargs: tuple = ()):
        ctx = multiprocessing.get_context()
        # A forked worker starts with a copy of every descriptor the parent has; a spawned one
        # (or one forked from a server) only with what it is given.
        forked = ctx.get_start_method() == "fork"
        self.jobs = jobs
        self._workers: dict[Connection, multiprocessing.process.BaseProcess] = {}
        try:
            for _ in range(jobs):
                parent, child = ctx.Pipe()
                parents = (*self._workers, parent) if forked else ()
                process = ctx.Process(target=_serve, args=(child, func, initializer, initargs,
                                                           parents), daemon=True)
                process.start()
                child.close()
                self._workers[parent] = process
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def imap_unordered(self, tasks: Iterable[T], *, chunk: int = 1) -> Iterator[R]:
        """The result of every task, in the order they finish; the workers stop at the end.

        An exception raised by ``func`` is raised here; a worker that dies raises
        :class:`WorkerFailed`. Closing the iterator early, or any exception while it runs, kills
        the workers and waits for them.
        """
        workers = self._workers
        pending = iter(tasks)
        try:
            busy: set[Connection] = set()
            for conn in workers:
                work = list(islice(pending, chunk))
                if work:
                    conn.send(work)
                    busy.add(conn)
            while busy:
                for conn in wait(list(busy)):
                    try:
                        ok, value = conn.recv()  # type: ignore[union-attr]
                    except (EOFError, OSError):
                        process = workers[conn]  # type: ignore[index]
                        process.join(5)
                        raise WorkerFailed(f"a worker process ended unexpectedly (exit status "
                                           f"{process.exitcode})") from None
                    if not ok:
                        raise value
                    work = list(islice(pending, chunk))
                    if work:
                        conn.send(work)  # type: ignore[union-attr]
                    else:
                        busy.discard(conn)  # type: ignore[arg-type]
                    yield from value
            for conn in workers:
                conn.send(None)
            for process in workers.values():
                process.join()
        finally:
            self.close()

    def close(self) -> None:
        """Kill the workers still running and wait for each (safe to call again)."""
        for process in self._workers.values():
            if process.is_alive():
                process.kill()
        for conn, process in self._workers.items():
            process.join()
            conn.close()


def imap_unordered(func: Callable[[T], R], tasks: Iterable[T], jobs: int, *, chunk: int = 1,
                   initializer: Callable[..., None] | None = None,
                   initargs: tuple = ()) -> Iterator[R]:
    """``func`` of every task, computed by ``jobs`` worker processes, in the order they finish
    (:class:`Workers` started for this run)."""
    with Workers(func, jobs, initializer=initializer, initargs=initargs) as pool:
        yield from pool.imap_unordered(tasks, chunk=chunk)
