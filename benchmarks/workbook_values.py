"""How fast the workbook's cell values and files are made, against the plain model run.

``cell_values`` is called once per site by batch generation, for thousands of sites; the
baseline is :func:`operating_model.run` alone (the model the values come from), measured in the
same run. Prints milliseconds per site and the ratio.
"""

from __future__ import annotations

import time

from tokenfactory_xl import workbook
from tokenfactory_xl.inputs import make_inputs
from tokenfactory_xl.operating_model import run

SITES = [make_inputs({"gpus": 512 + 8 * i, "measured_tps": 1_000_000 + 1000 * i,
                      "horizon_months": 12 + i % 229}) for i in range(200)]


def per_site(fn, sites, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for site in sites:
            fn(site)
        best = min(best, (time.perf_counter() - start) / len(sites))
    return best * 1000


def main() -> None:
    workbook.plan()  # the layout is built once per process
    base = per_site(run, SITES)
    values = per_site(workbook.cell_values, SITES)
    build = per_site(lambda s: workbook.workbook_bytes(workbook.build_workbook(s)), SITES[:5], 1)
    cells = sum(len(v) for v in workbook.cell_values(SITES[0]).values())
    print(f"operating_model.run (baseline): {base:8.2f} ms/site")
    print(f"workbook.cell_values:           {values:8.2f} ms/site  ({cells:,} cells; "
          f"{values / base:.1f}x the baseline)")
    print(f"build_workbook + bytes:         {build:8.2f} ms/site  ({build / base:.0f}x the "
          f"baseline)")


if __name__ == "__main__":
    main()
