"""How fast "what must be true" is found: the Risk sheet's twelve solves, against an earlier commit.

A ``template`` solves, for each of the twelve tornado drivers, the driver's value at which the
live NPV is 0 (:func:`tokenfactory_xl.workbook.risk_values.compute`). In the same run on the same
machine, this tree and a clone of ``--against`` (by default the commit before the solves were
made faster), each with a build cache of its own, their bytecode compiled first:

1. the twelve solves of each site in a fresh process (``--runs`` processes a tree, taking
   turns), as :func:`~tokenfactory_xl.workbook.risk_values.compute` makes them for a
   ``template``: the first call (the twelve variant models loaded from the build cache), the
   least of five calls after it (CPU time of the process, ``time.process_time``, with
   ``OPENBLAS_NUM_THREADS=1`` as the command line sets it), the passes of the model they make,
   and the tornado's CPU beside them (the solves now follow it and read its NPVs: what the
   first of the two to run loads moves with it);
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
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from measure import ROOT, TOKENFACTORY_XL, child_cpu, clone, compile_package, tree_env

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
    """In this process: the Risk sheet's figures of ``site`` as a ``template`` computes them
    (:func:`~tokenfactory_xl.workbook.risk_values.compute`, one draw), once (the first call)
    and five times more; prints as JSON the CPU seconds of its twelve solves and of its tornado
    (which the solves now follow and read), and the passes of the model the solves make. Runs
    against whichever tree ``PYTHONPATH`` names (an older one solves without the tornado)."""
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    from tokenfactory_xl.tfom import variants
    from tokenfactory_xl.tfom.evaluation import run
    from tokenfactory_xl.tfom.inputs import make_inputs
    from tokenfactory_xl.workbook import risk_values

    inputs = make_inputs(SITES[site])
    whole = run(inputs).values
    spent = {"solves": 0.0, "tornado": 0.0}
    passes = 0
    counting = False
    inside = ""  # the part running

    def timed(part, function):
        def call(*args, **kwargs):
            nonlocal inside
            started, inside = time.process_time(), part
            try:
                return function(*args, **kwargs)
            finally:
                spent[part] += time.process_time() - started
                inside = ""
        return call

    for name in ("solve", "solve_each"):  # the solves, whichever the tree calls
        if hasattr(risk_values, name):
            setattr(risk_values, name, timed("solves", getattr(risk_values, name)))
    risk_values.tornado = timed("tornado", risk_values.tornado)
    original = variants.VariantModel.__call__

    def counted(self, *args, **kwargs):
        nonlocal passes
        passes += counting and inside == "solves"
        return original(self, *args, **kwargs)

    variants.VariantModel.__call__ = counted
    risk_values.compute(inputs, 1, True, whole)
    first = dict(spent)
    warm = {part: float("inf") for part in spent}
    for run_ in range(5):
        spent.update(solves=0.0, tornado=0.0)
        counting, passes = run_ == 0, 0 if run_ == 0 else passes
        risk_values.compute(inputs, 1, True, whole)
        for part in spent:
            warm[part] = min(warm[part], spent[part])
        counting = False
    print(json.dumps({"first": first["solves"], "warm": warm["solves"],
                      "tornado first": first["tornado"], "tornado warm": warm["tornado"],
                      "passes": passes}))


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
        compile_package(ROOT)
        trees = {"this tree": ROOT, args.against: clone(args.against, Path(folder) / "before")[0]}
        envs = {label: {**tree_env(tree, Path(folder) / f"cache{i}"),
                        "OPENBLAS_NUM_THREADS": "1"}
                for i, (label, tree) in enumerate(trees.items())}
        tf = TOKENFACTORY_XL
        out = str(Path(folder) / "TFOM.xlsx")
        template = [*tf, "template", "-o", out, "--force"]
        for env in envs.values():
            child_cpu(template, env, folder)  # fills the build cache (workbook, model, variants)
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
                commands.setdefault((label, "summary"), []).append(
                    child_cpu([*tf, "summary"], env, folder))
                commands.setdefault((label, "template"), []).append(
                    child_cpu(template, env, folder))
            load.append(os.getloadavg()[0])
    print(f"{os.cpu_count()} cores; load average {min(load):.1f}–{max(load):.1f} (the machine "
          f"may be shared); {args.runs} runs a tree, taking turns")
    old, new = args.against, "this tree"
    print(f"\nthe Risk sheet's twelve solves, ms of CPU{old:>24}{new:>22}{'ratio':>8}")

    def row(site: str, label: str, figures: dict[str, list[float]]) -> None:
        a, b = (figures[t] * 1000 for t in (old, new))
        print(f"{site:26}{label:30}{a:>14.1f}{b:>22.1f}{b / a:>8.2f}×")

    for site in SITES:
        runs = {t: solves[(t, site)] for t in (old, new)}
        row(site, "first call (least)", {t: min(r["first"] for r in runs[t]) for t in runs})
        row("", "first call (median)", {t: sorted(r["first"] for r in runs[t])[args.runs // 2]
                                        for t in runs})
        row("", "warm (least of 5 × runs)", {t: min(r["warm"] for r in runs[t]) for t in runs})
        row("", "with the tornado, first (least)",
            {t: min(r["first"] + r["tornado first"] for r in runs[t]) for t in runs})
        print(f"{'':26}{'passes of the model':30}{runs[old][0]['passes']:>14}"
              f"{runs[new][0]['passes']:>22}")
    print(f"\ncommands, least CPU s      {old:>22}{new:>22}")
    for what in ("summary", "template"):
        print(f"{what:26}{min(commands[(old, what)]):>22.3f}{min(commands[(new, what)]):>22.3f}")
    ratios = [min(commands[(t, "template")]) / min(commands[(t, "summary")]) for t in (old, new)]
    print(f"{'template ÷ summary':26}{ratios[0]:>21.2f}×{ratios[1]:>21.2f}×   (goal: at most 3×)")


if __name__ == "__main__":
    main()
