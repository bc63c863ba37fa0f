"""How fast the capacity Excel functions answer a whole column, against the plain roofline.

A capacity planner fills a column with ``=THEORETICAL_TPS(A2:A100001, "Llama-3.1-70B", "fp8",
B2:B100001, 4096, 8, , , "roofline")``: a GPU name and a batch per row (the version-2 roofline,
the figure numpy computes in one pass; ``--mode attainable`` times the default figure, computed
once per distinct setup and batch). The Excel function reads the cells,
groups the rows by GPU and runs the roofline once per group. This script times that one call
against the baseline of the same computation done directly with numpy
(:func:`tokenfactory_xl.core.roofline.theoretical_tps` once per GPU over that GPU's batches), and
against single-cell calls (``=THEORETICAL_TPS(A2, …)`` filled down), and prints the ratios.

    python benchmarks/capacity.py [--rows 100000] [--cells 2000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from tokenfactory_xl.addin.udfs import THEORETICAL_TPS
from tokenfactory_xl.core import roofline, specs


def best_of(runs: int, f) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(runs):  # the best of a few: the machine is shared
        start = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--cells", type=int, default=2_000)
    parser.add_argument("--mode", default="roofline", choices=("roofline", "attainable"))
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    names = [g.name for g in specs.load_gpus().values() if g.name != "L40S"]
    gpus = rng.choice(names, args.rows)
    batches = rng.integers(1, 129, args.rows)
    gpu_column = [[str(g)] for g in gpus]            # a column range as xlwings passes it
    batch_column = [[float(b)] for b in batches]

    def baseline() -> np.ndarray:
        out = np.empty(args.rows)
        for name in names:
            rows = gpus == name
            out[rows] = roofline.theoretical_tps(name, "Llama-3.1-70B", "fp8", batches[rows],
                                                 4096, 8)
        return out

    plain, expected = best_of(3, baseline)
    spilled_time, spilled = best_of(3, lambda: THEORETICAL_TPS(
        gpu_column, "Llama-3.1-70B", "fp8", batch_column, 4096, 8, None, None, args.mode))
    if args.mode == "roofline":
        assert np.allclose([row[0] for row in spilled], expected)  # type: ignore[union-attr]

    start = time.perf_counter()
    for i in range(args.cells):
        THEORETICAL_TPS(str(gpus[i]), "Llama-3.1-70B", "fp8", float(batches[i]), 4096, 8, None,
                        None, args.mode)
    per_cell = (time.perf_counter() - start) / args.cells

    print(f"THEORETICAL_TPS over {args.rows:,} rows of {len(names)} GPUs: one call "
          f"{spilled_time:.3f} s; plain numpy roofline {plain:.3f} s "
          f"(the Excel function costs {spilled_time / plain:,.1f}x the baseline)")
    print(f"single-cell calls: {per_cell * 1e3:.2f} ms each, so {per_cell * args.rows:,.1f} s "
          f"for {args.rows:,} rows: {per_cell * args.rows / spilled_time:,.0f}x the one call "
          "(before Excel's own per-call overhead)")


if __name__ == "__main__":
    main()
