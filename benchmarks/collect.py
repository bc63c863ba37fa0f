"""Benchmark: collecting filled-in TFOM workbooks against a plain openpyxl read of each file.

Generates N site workbooks with the batch (different inputs per site), then measures, in the
same run and on the same files:

- the baseline: ``openpyxl.load_workbook(path, read_only=True, data_only=True)`` of each file
  reading every cell of every sheet (the least a reader of the stored values does), and, for
  reference, a full ``openpyxl.load_workbook(path)``;
- collect: the whole audit of each file (defined names, inputs, every formula against the
  template, stored values against the recomputation, the model run) and the portfolio written,
  with the worker processes the command would use (``--jobs``, default one per core).

Prints files per second (wall clock, and CPU time of this process and its workers) and the
ratios, then the peak memory traced while collecting a sample in this process and while loading
one file with openpyxl.

    python benchmarks/collect.py                 # 1,000 workbooks
    python benchmarks/collect.py --files 300 --baseline-files 100 --jobs 1
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# one BLAS thread, as the command line sets it before numpy loads (a value set by hand is
# kept): the model's matrix products are small, and idle threads spinning count as CPU
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import openpyxl  # noqa: E402

from tokenfactory_xl.portfolio.collect import auto_jobs, collect, write_outputs  # noqa: E402

MB = 1e6


def sites_csv(count: int) -> str:
    """``count`` sites whose inputs differ (fleet, throughput, targets, horizon)."""
    lines = ["site_name,gpus,measured_tps,tef_target.Optimised,availability,horizon_months,"
             "ownership"]
    for i in range(count):
        gpus = 256 + 64 * (i % 50)
        tef_now = 0.2 + 0.01 * (i % 20)
        lines.append(f"Site {i:04d},{gpus},{gpus * 10_000 * tef_now:.0f},"
                     f"{0.55 + 0.01 * (i % 30):.2f},{0.99 + 0.0001 * (i % 90):.4f},"
                     f"{24 + 12 * (i % 6)},{'rent' if i % 4 == 0 else 'own'}")
    return "\n".join(lines) + "\n"


def cpu_seconds() -> float:
    """CPU time of this process and of its children that ended (the collect's workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(fn) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), cpu_seconds()
    out = fn()
    return time.perf_counter() - wall, cpu_seconds() - cpu, out


def main() -> None:
    from tokenfactory_xl.portfolio.batch import run_batch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000, help="workbooks to collect")
    parser.add_argument("--baseline-files", type=int, default=0,
                        help="files loaded with openpyxl (default: all of them)")
    parser.add_argument("--jobs", type=int, default=0,
                        help="collect's worker processes (default: as the command chooses)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "sites.csv").write_text(sites_csv(args.files), encoding="utf-8")
        wall, _, report = timed(lambda: run_batch(folder / "sites.csv", folder / "out",
                                                  jobs=2))
        files = sorted(report.written)
        size = sum(p.stat().st_size for p in files) / len(files)
        print(f"generated {len(files):,} workbooks with the batch in {wall:.1f} s "
              f"({size / 1000:.0f} kB each)")

        jobs = args.jobs or auto_jobs(len(files))

        def run_collect():
            audits = collect(files, jobs=jobs)
            write_outputs(audits, folder / "portfolio.xlsx", folder / "report.md")
            return audits

        wall, cpu, audits = timed(run_collect)
        rss_collect = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1000
        findings = sum(len(a.findings) for a in audits)
        included = sum(a.included for a in audits)
        print(f"collect: {len(files):,} files, {included:,} in the portfolio, {findings} findings")
        del audits

        def read_each(paths):
            for path in paths:  # every stored value read, then dropped: nothing kept
                workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
                for sheet in workbook.worksheets:
                    for _ in sheet.iter_rows(values_only=True):
                        pass
                workbook.close()

        def load_each(paths):
            for path in paths:
                openpyxl.load_workbook(path)  # loaded, then dropped: nothing kept

        sample = files[: args.baseline_files or len(files)]
        read_wall, read_cpu, _ = timed(lambda: read_each(sample))
        base_wall, base_cpu, _ = timed(lambda: load_each(sample))

        rows = [("openpyxl read-only, every cell", len(sample), read_wall, read_cpu),
                ("openpyxl.load_workbook", len(sample), base_wall, base_cpu),
                (f"collect, {jobs} process{'es' if jobs > 1 else ''}", len(files), wall, cpu)]
        print(f"{'':32s} {'files':>6s} {'files/s wall':>13s} {'files/s CPU':>12s}")
        for label, n, w, c in rows:
            print(f"{label:32s} {n:6,d} {n / w:13.1f} {n / c:12.1f}")
        for label, n, w, c in rows[:2]:
            print(f"collect vs {label}: {(len(files) / wall) / (n / w):.1f}x (wall), "
                  f"{(len(files) / cpu) / (n / c):.1f}x (CPU)")

        traced = files[:100]
        tracemalloc.start()
        collect(traced)  # in this process, where tracemalloc sees it
        _, peak_collect = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        tracemalloc.start()
        collect(traced[:1])
        _, peak_one = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        tracemalloc.start()
        openpyxl.load_workbook(files[0])
        _, peak_load = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"peak traced memory: collect of one file {peak_one / MB:.1f} MB, of "
              f"{len(traced)} files {peak_collect / MB:.1f} MB; openpyxl.load_workbook of one "
              f"file {peak_load / MB:.1f} MB")
        print(f"peak resident memory of this process after collecting (before the baseline): "
              f"{rss_collect:.0f} MB")


if __name__ == "__main__":
    main()
