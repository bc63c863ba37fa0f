"""``tokenfactory-xl ARGS`` run in the test's own process, answered as ``subprocess.run`` answers.

A new interpreter costs a third of a second of CPU before the command does anything (Python,
numpy and its thread pool starting), and the suite runs some two hundred commands: most of its
command-line time. :func:`run` calls the same :func:`tokenfactory_xl.cli.main` the entry point
calls, in the folder and environment given, and gives back the status, the standard output and
the standard error as text. Whatever ``main`` lets through is what Python would show: a
traceback on the standard error and status 1, or the status of a ``SystemExit`` (argparse's
usage errors, ``--help``, ``--version``).

A test of what only a process has (a file that would block it, what its start imports, the
environment it starts with) starts one with :func:`process`.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path

from tokenfactory_xl.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


class _Output(io.StringIO):
    """A captured stream that, like a pipe, is not a terminal."""

    def isatty(self) -> bool:
        return False


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None) -> Iterator[None]:
    """``os.environ`` is ``env`` within the block (unchanged when ``None``), then as it was."""
    if env is None:
        yield
        return
    before = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(before)


def _status(exit: SystemExit, stderr: io.StringIO) -> int:
    """The status Python ends with on ``SystemExit``: a number as is, ``None`` as 0, a text
    printed to the standard error and 1."""
    if exit.code is None:
        return 0
    if isinstance(exit.code, int):
        return exit.code
    print(exit.code, file=stderr)
    return 1


def run(*args: str | os.PathLike, cwd: str | os.PathLike = ROOT,
        env: Mapping[str, str] | None = None, input: str = "") -> subprocess.CompletedProcess:
    """``tokenfactory-xl *args`` in ``cwd`` with the environment ``env`` (this process's when
    ``None``) and ``input`` on the standard input."""
    argv = [os.fspath(a) for a in args]
    stdout, stderr = _Output(), _Output()
    streams = sys.stdin, sys.stdout, sys.stderr
    here = os.getcwd()
    with _environment(env):
        os.chdir(cwd)
        sys.stdin, sys.stdout, sys.stderr = io.StringIO(input), stdout, stderr
        try:
            status = main(argv)
        except SystemExit as exc:
            status = _status(exc, stderr)
        except BaseException:  # noqa: BLE001 - shown as Python shows what ends a process
            traceback.print_exc(file=stderr)
            status = 1
        finally:
            sys.stdin, sys.stdout, sys.stderr = streams
            os.chdir(here)
    return subprocess.CompletedProcess(["tokenfactory-xl", *argv], status, stdout.getvalue(),
                                       stderr.getvalue())


def process(*args: str | os.PathLike, cwd: str | os.PathLike = ROOT,
            env: Mapping[str, str] | None = None, timeout: float = 120,
            input: str | bytes | None = None, text: bool = True
            ) -> subprocess.CompletedProcess:
    """``python -m tokenfactory_xl *args`` as a process of its own, in ``cwd`` with ``env``
    (this process's when ``None``) and this checkout's package, ended after ``timeout`` seconds
    (a run that would hang fails its test instead of the suite); ``input`` on its standard
    input, its output as text (or bytes, with ``text=False``)."""
    env = {**(os.environ if env is None else env), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "tokenfactory_xl", *map(os.fspath, args)],
                          cwd=cwd, env=env, capture_output=True, text=text, timeout=timeout,
                          input=input)
