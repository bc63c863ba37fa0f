"""What the benchmarks share: the CPU time of a command run as a fresh process, and a checkout
of an earlier commit to run beside this tree.

The development machine is shared, so the benchmarks compare figures measured in the same run:
each command's CPU time (user and system, the process and every thread and process it starts:
``resource.getrusage(RUSAGE_CHILDREN)``), the least of several runs, the trees taking turns.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The package's command line, run by the Python of this benchmark (``PYTHONPATH`` says which
#: tree's package it runs).
TOKENFACTORY_XL = [sys.executable, "-m", "tokenfactory_xl"]


def child_cpu(argv: list[str], env: dict[str, str] | None, cwd: Path | str) -> float:
    """The CPU seconds of one run of ``argv`` in ``cwd``, children included; a failed run stops
    the benchmark with its error. ``python -m`` imports from ``cwd`` before ``PYTHONPATH``: a
    tree's package runs from a folder that holds none (a temporary one)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr[-300:]}")
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def clone(rev: str, where: Path) -> tuple[Path, str]:
    """A checkout of ``rev`` of this repository in ``where``, its bytecode compiled (a machine
    that sets ``PYTHONDONTWRITEBYTECODE`` would otherwise compile the package in every run),
    and the commit's short name."""
    subprocess.run(["git", "clone", "--quiet", "--shared", "--no-checkout", str(ROOT),
                    str(where)], check=True)
    subprocess.run(["git", "-C", str(where), "checkout", "--quiet", rev], check=True)
    compile_package(where)
    short = subprocess.run(["git", "-C", str(where), "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, check=True).stdout.strip()
    return where, short


def compile_package(tree: Path) -> None:
    """The bytecode of ``tree``'s package, written once before a run is timed."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "tokenfactory_xl")],
                   check=True)


def tree_env(tree: Path, cache: Path) -> dict[str, str]:
    """The environment that runs ``tree``'s package with a build cache of its own (the kept
    builds of two trees must not replace each other's)."""
    cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    return {**os.environ, "PYTHONPATH": str(tree), "TOKENFACTORY_XL_CACHE": str(cache)}
