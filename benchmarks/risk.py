"""How fast the risk and the tornado run (methodology §8), against a plain loop of model runs.

In the same run on the same machine, for one site over 120 months:

1. ``risk(inputs, 10,000)``: every draw at once, in chunks, through the compiled model's NPV
   and cash-flow lines only, each draw's IRR found by ``risk.monthly_irr`` (goal: at most 1 s
   of CPU);
2. the plain way: ``run()`` once per draw with the drawn values (timed on ``--plain`` draws, the
   rate scaled to 10,000);
3. the tornado (21 variants in one pass) against 21 ``run()`` calls;
4. the command a finance user waits for: ``tokenfactory-xl risk --draws 10000`` against its
   baseline ``tokenfactory-xl summary`` (and ``python -c "import numpy"``), each a fresh
   process with a build cache of its own, filled by a first run that is not timed (goal:
   ``risk`` at most 1.4 × ``summary``);
5. where a draw's CPU goes, part by part, against one numpy pass per line.

CPU time is ``time.process_time`` of this process, its BLAS threads included (run it with
``OPENBLAS_NUM_THREADS=1``, as the command line runs, to leave out their spinning).
Usage::

    python benchmarks/risk.py              # 10,000 draws, 200 plain runs
    python benchmarks/risk.py --draws 2000 --plain 50 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def cpu(fn, repeat: int = 3) -> float:
    """The least CPU time of ``repeat`` calls (the others paid for a busy machine)."""
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        fn()
        best = min(best, time.process_time() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--draws", type=int, default=10_000)
    parser.add_argument("--plain", type=int, default=200, help="draws run one by one")
    parser.add_argument("--repeat", type=int, default=7,
                        help="runs of each command (the least CPU time counts)")
    args = parser.parse_args()

    from tokenfactory_xl.tfom import risk
    from tokenfactory_xl.tfom.evaluation import run
    from tokenfactory_xl.tfom.inputs import make_inputs

    print(f"one site, 120 months; {os.cpu_count()} cores; load average "
          f"{os.getloadavg()[0]:.1f} (the machine may be shared)")
    sites = {
        "default site": make_inputs({"horizon_months": 120}),
        "two cohorts, a contract, debt": make_inputs({
            "horizon_months": 120, "gpus": 2048, "measured_tps": 2_000_000,
            "contract_mtok_per_month": 50_000, "contract_price_per_mtok": 0.4,
            "contract_months": 36, "debt_share": 0.5,
            "cohorts": [{"cohort": "B200 2028", "online_month": 13, "gpus": 512,
                         "capex_per_gpu": 55_000}]}),
    }
    print(f"\n{'':32}{'draws':>8}{'CPU s':>8}{'per 10k':>9}{'× plain':>9}")
    for label, inputs in sites.items():
        risk.risk(inputs, 10)  # compile once, not timed
        vectorised = cpu(lambda inputs=inputs: risk.risk(inputs, args.draws))
        draws = risk.draw(inputs, args.plain)

        def plain(inputs=inputs, draws=draws):
            for i in range(args.plain):
                run(inputs.replace({name: (float(values[i]),) + tuple(inputs[name][1:])
                                    if isinstance(inputs[name], tuple) else float(values[i])
                                    for name, values in draws.items()}))

        looped = cpu(plain, repeat=1)
        per_10k, plain_10k = vectorised * 10_000 / args.draws, looped * 10_000 / args.plain
        print(f"{label:32}{args.draws:>8,}{vectorised:>8.2f}{per_10k:>9.2f}"
              f"{plain_10k / per_10k:>9.0f}")
        print(f"{'  plain run() per draw':32}{args.plain:>8,}{looped:>8.2f}{plain_10k:>9.2f}"
              f"{1:>9}")
        tornado = cpu(lambda inputs=inputs: risk.tornado(inputs))
        runs = cpu(lambda inputs=inputs: [run(inputs) for _ in range(21)], repeat=1)
        print(f"{'  tornado, 21 variants at once':32}{21:>8}{tornado:>8.3f}{'':>9}"
              f"{runs / tornado:>9.0f}")
    print("\ngoal: one site's 10,000 draws over 120 months in at most 1 s of one core")
    command_line(args.repeat)
    floor(sites["default site"], args.draws, "default site, 120 months")
    floor(make_inputs({}), args.draws, "the site `risk` runs by default, 60 months")


def command_line(repeat: int) -> None:
    """``tokenfactory-xl risk --draws 10000`` against ``summary`` and ``import numpy``: the least
    CPU time (the process and its threads) of ``repeat`` fresh processes each, in turn, with a
    build cache of their own (filled by a first run of each, not timed)."""
    import tempfile

    from measure import TOKENFACTORY_XL, child_cpu, tree_env

    tf = TOKENFACTORY_XL
    commands = {"python -c 'import numpy'": [sys.executable, "-c", "import numpy"],
                "tokenfactory-xl summary": [*tf, "summary"],
                "tokenfactory-xl risk --draws 10000": [*tf, "risk", "--draws", "10000"]}
    with tempfile.TemporaryDirectory(prefix="tfxl-risk-") as folder:
        env = tree_env(ROOT, Path(folder) / "cache")
        for argv in commands.values():
            child_cpu(argv, env, folder)  # fills the build cache (the compiled models)
        least = dict.fromkeys(commands, float("inf"))
        for _ in range(repeat):  # in turn, so that a busy moment costs each alike
            for label, argv in commands.items():
                least[label] = min(least[label], child_cpu(argv, env, folder))
    numpy, summary, risk = least.values()
    print(f"\nthe command line, least CPU seconds of {repeat} runs each (children included):")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("  (PYTHONDONTWRITEBYTECODE is set: modules whose bytecode is not cached are "
              "compiled in every run)")
    print(f"  python -c 'import numpy'                  {numpy:8.3f}")
    print(f"  tokenfactory-xl summary                   {summary:8.3f}  "
          f"{summary / numpy:5.2f}× import numpy")
    print(f"  tokenfactory-xl risk --draws 10000        {risk:8.3f}  "
          f"{risk / summary:5.2f}× summary (goal: at most 1.4×)")


def floor(inputs, draws: int, label: str) -> None:
    """Where a draw's CPU goes, against the least a pass over the same lines could cost.

    The draws' model computes, :data:`~tokenfactory_xl.tfom.risk.CHUNK` draws at a time, only
    the lines the drawn inputs reach (``tfom/variants.py``); the floor is one numpy operation
    (a subtraction into a new array) per such line, over arrays of the same shape: what any
    line costs at the least, numpy's call and one pass over its cells. The IRR grid's scan
    (:class:`~tokenfactory_xl.tfom.risk.IrrBrackets`) is timed on the passes' own cash flows,
    with its one matrix product (every draw's NPV at the grid's 221 rates) apart: the scan's
    floor.
    """
    import numpy as np

    from tokenfactory_xl.tfom import risk
    from tokenfactory_xl.tfom.evaluation import LISTS, _formula_constants, formula_inputs
    from tokenfactory_xl.tfom.formula import needed
    from tokenfactory_xl.tfom.operating_model import LINES
    from tokenfactory_xl.tfom.variants import split, variant_model

    values = risk.draw(inputs, draws)
    key = risk._scenario_key(inputs)[1]
    every = cpu(lambda: risk.risk(inputs, draws), 5)
    drawing = cpu(lambda: risk.draw(inputs, draws), 5)
    model = cpu(lambda: [None for _ in risk._passes(inputs, values, irr=False)], 5)
    passes = list(risk._passes(inputs, values, irr=True))
    site = variant_model(risk._targets(key, True), risk._moved(risk.RISK_DRIVERS)).site_values(
        formula_inputs(inputs), _formula_constants(), LISTS)
    grid = np.asarray(site[f"irr_rate_project_{key}"], dtype=float)
    flows = [b.cf for _, _, b in passes]
    scan = cpu(lambda: [risk.IrrBrackets(cf, grid) for cf in flows], 5)
    table = risk._discount_table(grid, flows[0].shape[-1])
    product = cpu(lambda: [cf @ table for cf in flows], 5)
    roots = cpu(lambda: [b.roots() for _, _, b in passes])
    _, moving = split(needed(LINES, list(risk._targets(key, True))),
                      risk._moved(risk.RISK_DRIVERS))
    lengths = [ln.table.length if ln.table is not None else 1 for ln in moving]
    chunks = [min(risk.CHUNK, draws - start) for start in range(0, draws, risk.CHUNK)]
    operands = {(n, m): (np.random.default_rng(1).random((n, m)), np.ones((n, m)))
                for n in set(chunks) for m in set(lengths)}

    def one_pass_per_line():
        for n in chunks:
            for m in lengths:
                a, b = operands[n, m]
                np.subtract(a, b)

    least = cpu(one_pass_per_line, 5)
    per = 1e6 / draws
    print(f"\nwhere a draw's CPU goes ({label}, {draws:,} draws, µs a draw, least of 5):")
    print(f"  risk() in all                               {every * per:8.1f}")
    print(f"  drawing the values (PCG64, triangular)     {drawing * per:8.1f}")
    print(f"  the model's lines the draws reach ({len(moving)})      {model * per:8.1f}")
    print(f"  the IRR grid's scan and brackets            {scan * per:8.1f}")
    print(f"    of which its matrix product               {product * per:8.1f}")
    print(f"  every draw's IRR searched (risk() searches only those near the median)"
          f" {roots * per:.1f}")
    print(f"  floor: one numpy pass per line reached      {least * per:8.1f}"
          f"  ({model / least:.1f}× below the model's lines)")


if __name__ == "__main__":
    main()
