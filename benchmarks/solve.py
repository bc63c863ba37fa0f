"""How fast "what must be true" is found: the Risk sheet's twelve solves, against an earlier commit.

A ``template`` solves, for each of the twelve tornado drivers, the driver's value at which the
live NPV is 0 (:func:`tokenfactory_xl.workbook.risk_values.compute`). In the same run on the same
machine, this tree and a clone of ``--against`` (by default the commit before the solves were
made faster), each with a build cache of its own, their bytecode compiled first:

1. the twelve solves of each site in a fresh process (``--runs`` processes a tree, taking
   turns): the first call, as a ``template`` makes it (the twelve variant models loaded from
   the build cache), and the least of five calls after it (CPU time of the process,
   ``time.process_time``, with ``OPENBLAS_NUM_THREADS=1`` as the command line sets it), and the
   passes of the model the twelve make;
2. ``tokenfactory-xl template`` (warm build cache) and ``tokenfactory-xl summary``, each a
   fresh process taking turns with the other tree's, the least CPU time of its runs, children
   included (``resource.getrusage(RUSAGE_CHILDREN)``), and their ratio (goal: ``template`` at
   most 3 × ``summary``).

The machine may be shared: each figure is the least of its runs, and the ratios compare figures
measured at the same time. Usage::

    python benchmarks/solve.py                  # 7 runs a tree, against the earlier commit
    python benchmarks/solve.py --runs 3 --against HEAD~3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The commit before the solves were made faster (what the twelve solves are compared with).
BEFORE = "778ff9b"
#: The sites the solves are timed on: the default site (60 months), 120 months, cohorts.
SITES: dict[str, dict[str, object]] = {
    "default site": {},
    "120 months": {"horizon_months": 120},
    "cohorts, contract, debt": {
        "horizon_months": 120, "gpus": 2048, "measured_tps": 2_000_000,
        "contract_mtok_per_month": 50_000, "contract_price_per_mtok": 0.4,
        "contract_months": 36, "debt_share": 0.5,
        "cohorts": [{"cohort": "B200 2028", "online_month": 13, "gpus": 512,
                     "capex_per_gpu": 55_000}]},
}


def worker(site: str) -> None:
    """In this process: the twelve solves of ``site`` once (the first call), then five times;
    prints the CPU seconds as JSON. Runs against whichever tree ``PYTHONPATH`` names (an older
    one may have no ``solve_each``)."""
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    from tokenfactory_xl.tfom import solve as solving
    from tokenfactory_xl.tfom import variants
    from tokenfactory_xl.tfom.evaluation import run
    from tokenfactory_xl.tfom.inputs import make_inputs
    from tokenfactory_xl.tfom.risk import TORNADO_DRIVERS

    inputs = make_inputs(SITES[site])
    whole = run(inputs).values

    def twelve():
        if hasattr(solving, "solve_each"):
            return solving.solve_each(inputs, TORNADO_DRIVERS, "npv=0", whole)
        return tuple(solving.solve(inputs, name, "npv=0", whole) for name in TORNADO_DRIVERS)

    passes = 0

    original = variants.VariantModel.__call__

    def counted(self, *args, **kwargs):
        nonlocal passes
        passes += 1
        return original(self, *args, **kwargs)

    started = time.process_time()
    twelve()
    first = time.process_time() - started
    variants.VariantModel.__call__ = counted  # counted after the first call's timing
    twelve()
    variants.VariantModel.__call__ = original
    warm = float("inf")
    for _ in range(5):
        started = time.process_time()
        twelve()
        warm = min(warm, time.process_time() - started)
    print(json.dumps({"first": first, "warm": warm, "passes": passes}))


def cpu(argv: list[str], env: dict[str, str]) -> float:
    """CPU seconds of one run of ``argv``, its children included (run in the folder of the tree
    ``env`` names: ``python -m`` looks there first)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=env["PYTHONPATH"])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr[-300:]}")
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def clone(rev: str, where: Path) -> Path:
    """A checkout of ``rev`` of this repository in ``where``."""
    subprocess.run(["git", "clone", "--quiet", "--shared", "--no-checkout", str(ROOT),
                    str(where)], check=True)
    subprocess.run(["git", "-C", str(where), "checkout", "--quiet", rev], check=True)
    return where


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", default=BEFORE, help="the commit to compare with")
    parser.add_argument("--runs", type=int, default=7, help="fresh processes a tree and site")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    with tempfile.TemporaryDirectory(prefix="tfxl-solve-") as folder:
        trees = {"this tree": ROOT, args.against: clone(args.against, Path(folder) / "before")}
        envs = {}
        for i, (label, tree) in enumerate(trees.items()):
            envs[label] = {**os.environ, "PYTHONPATH": str(tree), "OPENBLAS_NUM_THREADS": "1",
                           "TOKENFACTORY_XL_CACHE": str(Path(folder) / f"cache{i}")}
            subprocess.run([sys.executable, "-m", "compileall", "-q", "tokenfactory_xl"],
                           cwd=tree, check=True)
        tf = [sys.executable, "-m", "tokenfactory_xl"]
        out = str(Path(folder) / "TFOM.xlsx")
        template = [*tf, "template", "-o", out, "--force"]
        for env in envs.values():
            cpu(template, env)  # fills the build cache: workbook, compiled model, variants
        load = [os.getloadavg()[0]]
        solves: dict[tuple[str, str], list[dict[str, float]]] = {}
        commands: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.runs):
            for label, env in envs.items():  # taking turns: the same load for both
                for site in SITES:
                    done = subprocess.run([sys.executable, __file__, "--worker", site],
                                          capture_output=True, text=True, env=env, check=True,
                                          cwd=env["PYTHONPATH"])
                    solves.setdefault((label, site), []).append(json.loads(done.stdout))
                commands.setdefault((label, "summary"), []).append(cpu([*tf, "summary"], env))
                commands.setdefault((label, "template"), []).append(cpu(template, env))
            load.append(os.getloadavg()[0])
    print(f"{os.cpu_count()} cores; load average {min(load):.1f}–{max(load):.1f} (the machine "
          f"may be shared); {args.runs} runs a tree, taking turns")
    old, new = args.against, "this tree"
    print(f"\nthe twelve solves, ms of CPU   {'':10}{old:>22}{new:>22}{'ratio':>8}")
    for site in SITES:
        for what, label in (("first", "first call (least)"), ("warm", "warm (least)")):
            a = min(r[what] for r in solves[(old, site)]) * 1000
            b = min(r[what] for r in solves[(new, site)]) * 1000
            print(f"{site:26}{label:22}{a:>14.1f}{b:>22.1f}{b / a:>8.2f}×")
        a = sorted(r["first"] for r in solves[(old, site)])[args.runs // 2] * 1000
        b = sorted(r["first"] for r in solves[(new, site)])[args.runs // 2] * 1000
        print(f"{'':26}{'first call (median)':22}{a:>14.1f}{b:>22.1f}{b / a:>8.2f}×")
        passes = [solves[(t, site)][0]["passes"] for t in (old, new)]
        print(f"{'':26}{'passes of the model':22}{passes[0]:>14}{passes[1]:>22}")
    print(f"\ncommands, least CPU s      {old:>22}{new:>22}")
    for what in ("summary", "template"):
        print(f"{what:26}{min(commands[(old, what)]):>22.3f}{min(commands[(new, what)]):>22.3f}")
    ratios = [min(commands[(t, "template")]) / min(commands[(t, "summary")]) for t in (old, new)]
    print(f"{'template ÷ summary':26}{ratios[0]:>21.2f}×{ratios[1]:>21.2f}×   (goal: at most 3×)")


if __name__ == "__main__":
    main()
