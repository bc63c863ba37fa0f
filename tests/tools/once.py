"""Make a costly test fixture once per test run, however many worker processes run the tests.

A fresh virtual environment, a batch run or LibreOffice recalculating a dozen workbooks takes
seconds. pytest-xdist's workers do not share session fixtures, and whether ``--dist loadgroup``
keeps the tests of one fixture on one worker depends on the pytest and xdist versions (with
pytest 9 it does not). :func:`build_once` does not rely on it: the first worker to need a
fixture builds it into a folder every worker of the run sees, under an exclusive lock on a file
beside it; the others wait on the lock and read back what it made. Nothing is shared between
two runs: the folder is inside the run's own temporary directory.

A build that fails, or skips, leaves nothing behind: the next worker tries again and fails or
skips the same way, with its own message.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TypeVar

import pytest

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: every worker keeps its own copy
    fcntl = None  # type: ignore[assignment]

T = TypeVar("T")


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder of this test run that every worker process shares.

    A worker's base folder is ``…/pytest-N/popen-gwK``; their parent is the run's. Without
    workers (``-n 0``, or no xdist) the base folder is the run's own.
    """
    base = tmp_path_factory.getbasetemp()
    if fcntl is not None and os.environ.get("PYTEST_XDIST_WORKER"):
        return base.parent
    return base


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if needed) within the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        if fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def build_once(tmp_path_factory: pytest.TempPathFactory, name: str,
               build: Callable[[Path], T]) -> T:
    """``build(folder)``'s value, computed by the first worker that asks and read back by the
    others. ``folder`` is empty and belongs to this fixture; the value must pickle (paths,
    numbers, texts, dicts of them)."""
    shared = run_folder(tmp_path_factory) / "built-once"
    folder = shared / name
    done = shared / f"{name}.pickle"
    with locked(shared / f"{name}.lock"):
        if done.exists():
            return pickle.loads(done.read_bytes())
        if folder.exists():  # an earlier attempt failed or skipped part way
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        value = build(folder)
        done.write_bytes(pickle.dumps(value))
        return value


class BuiltInGroups(Mapping[str, T]):
    """Name → a thing made together with the others of its group, each group by
    :func:`build_once` when a test first asks for one of its names.

    One build of everything would make the test that asks first wait for all of it (a
    spreadsheet engine recalculating ten workbooks); groups spread the wait over the tests
    that need each part, while each thing is still made once per run."""

    def __init__(self, factory: pytest.TempPathFactory, name: str, groups: list[list[str]],
                 build: Callable[[list[str], Path], dict[str, T]]) -> None:
        self._factory = factory
        self._name = name
        self._groups = groups
        self._build = build

    def __getitem__(self, key: str) -> T:
        for k, group in enumerate(self._groups):
            if key in group:
                made = build_once(self._factory, f"{self._name}-{k}",
                                  lambda folder, group=group: self._build(group, folder))
                return made[key]
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (key for group in self._groups for key in group)

    def __len__(self) -> int:
        return sum(map(len, self._groups))
