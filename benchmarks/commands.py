"""How long a finance user waits for each command, against the floor of starting numpy.

Each command runs as a fresh process, ``--repeat`` times; the figure is the least CPU time of
its runs (``resource.getrusage(RUSAGE_CHILDREN)``: the process and every thread and worker it
started), so that a busy machine costs a run, not the figure. In the same run, on the same
machine:

1. ``python -c "import numpy"``: the floor any command of this package stands on;
2. ``tokenfactory-xl --help``, ``summary``, ``risk --draws 10000`` and ``template`` (its
   build cache warm: a first run, not timed, fills it), each with its baseline and the ratio.

Goals (version 3): ``summary`` at most 1.8 × ``import numpy``, ``risk --draws 10000`` at most
1.4 × ``summary``, a warm ``template`` at most 3 × ``summary``, ``--help`` at most 2 ×
``import numpy``. Usage::

    python benchmarks/commands.py              # 5 runs of each
    python benchmarks/commands.py --repeat 3
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cpu(argv: list[str], repeat: int, env: dict[str, str]) -> float:
    """The least CPU time, children included, of ``repeat`` runs of ``argv``."""
    best = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr[-300:]}")
        best = min(best, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each command")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    tf = [sys.executable, "-m", "tokenfactory_xl"]
    with tempfile.TemporaryDirectory(prefix="tfxl-commands-") as folder:
        template = [*tf, "template", "-o", str(Path(folder) / "TFOM.xlsx"), "--force"]
        cpu(template, 1, env)  # fills the build cache (workbook, stencil, compiled model)
        numpy = cpu([sys.executable, "-c", "import numpy"], args.repeat, env)
        summary = cpu([*tf, "summary"], args.repeat, env)
        rows = [
            ("python -c 'import numpy'", numpy, None, None, None),
            ("tokenfactory-xl --help", cpu([*tf, "--help"], args.repeat, env), numpy,
             "import numpy", 2.0),
            ("tokenfactory-xl summary", summary, numpy, "import numpy", 1.8),
            ("tokenfactory-xl risk --draws 10000",
             cpu([*tf, "risk", "--draws", "10000"], args.repeat, env), summary, "summary", 1.4),
            ("tokenfactory-xl template (warm)", cpu(template, max(2, args.repeat // 2), env),
             summary, "summary", 3.0),
        ]
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} (the machine may be "
          f"shared); least CPU seconds of {args.repeat} runs, children included")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("PYTHONDONTWRITEBYTECODE is set: modules whose bytecode is not cached are "
              "compiled in every run")
    print(f"\n{'command':38}{'CPU s':>8}  {'baseline':14}{'ratio':>7}{'goal':>7}")
    for label, seconds, base, base_label, goal in rows:
        if base is None:
            print(f"{label:38}{seconds:>8.3f}")
            continue
        ratio = seconds / base
        mark = "" if ratio <= goal else "  (short)"
        print(f"{label:38}{seconds:>8.3f}  {base_label:14}{ratio:>6.2f}×{goal:>6.1f}×{mark}")


if __name__ == "__main__":
    main()
