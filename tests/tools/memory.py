"""What a process holds while it reads many sites: a sites file of many different sites, and
the most memory Python held at once while some work ran (``tracemalloc``: the objects' own
bytes, the same on a busy machine as on an idle one)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def many_sites(path: Path, count: int) -> Path:
    """A sites file of ``count`` different sites: each its own name and figures."""
    lines = ["site_name,gpus,measured_tps,ownership,capex_per_gpu,pue,tef_target,"
             "tef_target.Optimised,price_output_per_mtok"]
    for i in range(count):
        lines.append(f"Site {i:05d} of the fleet,{256 + i},{(256 + i) * 3000 + i},"
                     f"{'own' if i % 3 else 'rent'},"
                     f"{'' if i % 3 == 0 else 30000 + i},{1.1 + i % 40 / 100},"
                     f"{0.2 + i % 97 / 1000},{0.55 + i % 89 / 1000},{0.6 + i / 100_000}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def traced_peak(work: Callable[[], object]) -> int:
    """The most memory Python held at once while ``work`` ran [bytes]."""
    import tracemalloc

    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

