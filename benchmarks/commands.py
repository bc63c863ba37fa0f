"""How long a finance user waits for each command, against the floor of starting numpy.

Each command runs as a fresh process, ``--repeat`` times; the figure is the least CPU time of
its runs (``resource.getrusage(RUSAGE_CHILDREN)``: the process and every thread and worker it
started), so that a busy machine costs a run, not the figure. In the same run, on the same
machine:

1. ``python -c "import numpy"``: the floor any command of this package stands on;
2. ``tokenfactory-xl --help``, ``summary``, ``risk --draws 10000`` and ``template`` (its
   build cache warm: a first run, not timed, fills it), each with its baseline and the ratio.

With ``--against REV``, a checkout of that commit runs every command too, the two trees taking
turns (each with a build cache of its own), so that both columns are measured at the same load.

Goals (version 3): ``summary`` at most 1.8 × ``import numpy``, ``risk --draws 10000`` at most
1.4 × ``summary``, a warm ``template`` at most 3 × ``summary``, ``--help`` at most 2 ×
``import numpy``. Usage::

    python benchmarks/commands.py                        # 5 runs of each
    python benchmarks/commands.py --repeat 12 --against v3.1.2
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from measure import ROOT, TOKENFACTORY_XL, child_cpu, clone, compile_package, tree_env

#: (label, command after ``tokenfactory-xl`` or None for the floor, baseline label, goal)
COMMANDS = (
    ("python -c 'import numpy'", None, None, None),
    ("tokenfactory-xl --help", ["--help"], "numpy", 2.0),
    ("tokenfactory-xl summary", ["summary"], "numpy", 1.8),
    ("tokenfactory-xl risk --draws 10000", ["risk", "--draws", "10000"], "summary", 1.4),
    ("tokenfactory-xl template (warm)", ["template", "-o", "{out}", "--force"], "summary", 3.0),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each command")
    parser.add_argument("--against", help="an earlier commit, branch or tag to run beside")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tfxl-commands-") as tmp:
        folder = Path(tmp)
        compile_package(ROOT)
        trees = {"this tree": tree_env(ROOT, folder / "cache")}
        if args.against:
            tree, short = clone(args.against, folder / "before")
            trees = {short: tree_env(tree, folder / "before-cache"), **trees}
        out = str(folder / "TFOM.xlsx")
        argv = {label: [sys.executable, "-c", "import numpy"] if rest is None
                else [*TOKENFACTORY_XL, *(a.format(out=out) for a in rest)]
                for label, rest, _, _ in COMMANDS}
        for env in trees.values():  # fills each build cache (workbook, stencil, model), untimed
            child_cpu(argv["tokenfactory-xl template (warm)"], env, folder)
        best: dict[tuple[str, str], float] = {}
        for _ in range(args.repeat):
            for label in argv:
                for name, env in trees.items():  # taking turns: the same load for both
                    seconds = child_cpu(argv[label], env, folder)
                    best[name, label] = min(best.get((name, label), seconds), seconds)
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} (the machine may be "
          f"shared); least CPU seconds of {args.repeat} runs, children included")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("PYTHONDONTWRITEBYTECODE is set: each tree's bytecode was compiled before timing")
    print(f"\n{'command':38}" + "".join(f"{name:>24}" for name in trees) + f"{'goal':>8}")
    baseline = {"numpy": "python -c 'import numpy'", "summary": "tokenfactory-xl summary"}
    for label, _, base, goal in COMMANDS:
        cells = []
        for name in trees:
            seconds = best[name, label]
            if base is None:
                cells.append(f"{seconds:>24.3f}")
                continue
            ratio = seconds / best[name, baseline[base]]
            mark = " " if ratio <= goal else "!"
            cells.append(f"{seconds:>8.3f} {ratio:>5.2f}× {base:>7}{mark}")
        print(f"{label:38}" + "".join(cells) + (f"{goal:>7.1f}×" if goal else ""))
    print("\n(ratio: to `import numpy` or to `summary`, as its goal names it; ! where above it)")


if __name__ == "__main__":
    main()
