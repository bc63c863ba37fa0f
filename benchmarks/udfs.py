"""Every Excel function over 100,000 rows, against the plain cost of moving those rows in and out.

A finance user can fill 100,000 rows with ``=BREAKEVEN_UTIL(A2, B2, C2)`` (one call per cell) or
type ``=BREAKEVEN_UTIL(A2:A100001, B2:B100001, C2:C100001)`` once (one call, spilled). For each
function of :mod:`tokenfactory_xl.udfs` this script times one call over ``--rows`` rows with the
arguments shaped both ways a caller hands them over:

- as xlwings passes a range (``ndim=2``): a list of one-cell rows;
- as numpy arrays (a column each), as Python callers and xlwings' ``np.array`` converter do;

and, in the same run, the plain baseline: numpy converting the same lists of rows to arrays and
a column of floats going back as rows (``numpy.asarray`` and ``tolist``: what any function
must at least do). The goal is at most 50 ms for each function in either form. Single-cell
calls are timed for two functions, to show what one call over a range saves (Excel's own cost
per call, 3.8–13 ms in classic xlwings, comes on top of that figure).

Arguments are valid values drawn at random inside each argument's own rule (its range, its
choices), so every row computes.

    python benchmarks/udfs.py [--rows 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import inspect
import time
from collections.abc import Callable

import numpy as np

from tokenfactory_xl.addin import params, udfs
from tokenfactory_xl.core import roofline, specs

GOAL_SECONDS = 0.050

#: Values a text argument takes, and how arguments that depend on one another are drawn.
TEXTS: dict[str, tuple[str, ...]] = {
    "gpu": ("H100-SXM", "H200", "B200", "MI300X"),
    "model": ("Llama-3.1-8B", "Llama-3.1-70B", "Qwen3-30B-A3B", "DeepSeek-V3"),
    "precision": tuple(roofline.PRECISIONS),
}
FIELDS = {"GPU_SPEC": specs.GPU_FIELDS[2:6], "MODEL_SPEC": specs.MODEL_FIELDS[2:6]}


def valid_column(function: str, name: str, rows: int, rng: np.random.Generator,
                 drawn: dict[str, np.ndarray]) -> np.ndarray:
    """``rows`` values ``name`` accepts, drawn uniformly inside its rule."""
    if name == "field":
        return rng.choice(np.array(FIELDS[function], dtype=object), rows)
    if name in TEXTS:
        return rng.choice(np.array(TEXTS[name], dtype=object), rows)
    if name == "ttft_p99":  # above the median, as the function requires
        return drawn["ttft_p50"] * rng.uniform(1.2, 4.0, rows)
    if name == "salvage_per_gpu":  # at most the GPU's cost
        return drawn["capex_per_gpu"] * rng.uniform(0.0, 0.3, rows)
    if name == "cash_flows":  # an investment, then monthly cash in
        flows = rng.uniform(1e5, 1e6, rows)
        flows[0] = -flows[1:].sum() / 2
        return flows
    rule = params.PARAMS[name].rule
    low = 0.0 if rule.low is None else float(rule.low)
    high = low + 1000.0 if rule.high is None else float(rule.high)
    if rule.kind == "integer":
        return rng.integers(max(1, int(low)), int(min(high, 4096)) + 1, rows).astype(float)
    return rng.uniform(low + (high - low) * 0.05, low + (high - low) * 0.95, rows)


def plain(as_rows: list[list[list[object]]]) -> list[list[float]]:
    """The baseline: numpy converts each argument's rows, and one column of floats goes back as
    rows, with nothing checked or computed."""
    arrays = [np.asarray(rows) for rows in as_rows]
    return np.zeros((len(arrays[0]), 1)).tolist()


def timed(call: Callable[[], object], repeat: int) -> tuple[float, object]:
    """The best of ``repeat`` runs (the machine is shared) and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = call()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(4)
    slow = []
    print(f"{'function':<24}{'rows of cells':>15}{'arrays':>10}{'baseline':>10}{'ratio':>8}")
    for name in udfs.__all__:
        function = getattr(udfs, name)
        if not inspect.isfunction(function) or name.startswith("_"):
            continue
        params = list(inspect.signature(function).parameters)
        drawn: dict[str, np.ndarray] = {}
        for param in params:
            drawn[param] = valid_column(name, param, args.rows, rng, drawn)
        columns = [drawn[p] for p in params]
        as_rows = [[[x] for x in column.tolist()] for column in columns]
        as_arrays = [column.reshape(-1, 1) for column in columns]

        rows_time, result = timed(lambda: function(*as_rows), args.repeat)  # noqa: B023
        arrays_time, again = timed(lambda: function(*as_arrays), args.repeat)  # noqa: B023
        if isinstance(result, str) or result != again:
            raise SystemExit(f"{name}: the two forms disagree or the call failed: "
                             f"{str(result)[:200]}")
        baseline, _ = timed(lambda: plain(as_rows), args.repeat)  # noqa: B023
        worst = max(rows_time, arrays_time)
        if worst > GOAL_SECONDS:
            slow.append(name)
        print(f"{name:<24}{rows_time * 1000:>12.1f} ms{arrays_time * 1000:>7.1f} ms"
              f"{baseline * 1000:>7.1f} ms{worst / baseline:>7.1f}x")

    for name in ("BREAKEVEN_UTIL", "TEF"):
        function = getattr(udfs, name)
        params = list(inspect.signature(function).parameters)
        drawn = {}
        cells = [valid_column(name, p, args.rows, rng, drawn).tolist() for p in params]
        start = time.perf_counter()
        for i in range(args.rows):
            function(*(c[i] for c in cells))
        print(f"{name}: {args.rows:,} single-cell calls take "
              f"{time.perf_counter() - start:.2f} s")
    print(f"{len(slow)} of the functions over {GOAL_SECONDS * 1000:.0f} ms for {args.rows:,} rows"
          + (": " + ", ".join(slow) if slow else ""))


if __name__ == "__main__":
    main()
