"""How fast ``tokenfactory-xl batch`` writes workbooks, against a plain openpyxl build per site.

Generates a sites file of varied, valid sites, then in the same run and on the same machine:

1. the batch (template built once, each site filled into the stencil), with 1 and with N jobs;
2. the plain way: ``workbook.build_workbook(inputs)`` + ``workbook.save_workbook`` per site, on
   the first ``--plain`` sites of the same file (a full build takes about a second, so all 1,000
   would take a quarter of an hour; the rate per workbook is what is compared);
3. one workbook's CPU time against deflating its own XML parts with the compressor the batch
   uses (ISA-L where installed, else zlib), and the worksheets' deflate level: size and speed at
   levels 0 (stored), 1 (the default), 6;
4. peak memory with 1,000 and with 10,000 sites (and any further sizes ``--large`` names), to
   show that it does not grow with the sites.

Each measurement runs in a fresh child process, so that its peak resident memory
(``resource.getrusage``: the batch process itself, and the largest of its worker processes) is
its own. Usage::

    python benchmarks/batch.py                 # 1,000 sites, --jobs 2, 10,000 for memory
    python benchmarks/batch.py --sites 200 --large 0 --plain 5   # a quick look
    python benchmarks/batch.py --large 10000 30000               # memory at two more sizes
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GPUS = [("H100 SXM", 9_000, 30_000, 1.1), ("H200", 12_000, 35_000, 1.2),
        ("B200", 18_000, 50_000, 1.4), ("MI300X", 8_000, 24_000, 1.0), ("L40S", 3_000, 9_000, 0.5)]
CITIES = ["Frankfurt", "Virginia", "Oslo", "Texas", "Singapore", "Dublin", "Tokyo", "Santiago",
          "Madrid", "Montreal", "Mumbai", "Sydney"]


def generate_sites(path: Path, count: int, seed: int = 7) -> None:
    """A sites file of ``count`` different, valid sites (the same for the same seed)."""
    rng = random.Random(seed)
    header = ["site_name", "start_date", "horizon_months", "gpus", "gpu_model", "ownership",
              "capex_per_gpu", "salvage_per_gpu", "life_years", "rent_per_gpu_hour",
              "power_kw_per_gpu", "pue", "electricity_per_kwh", "theoretical_tps_per_gpu",
              "measured_tps", "tef_target", "tef_target.Optimised", "availability",
              "ttft_p50_ms", "ttft_p99_ms", "sell_through_start", "price_input_per_mtok",
              "price_output_per_mtok", "decline_per_quarter.Downside"]
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for i in range(count):
            model, tps, capex, kw = rng.choice(GPUS)
            gpus = rng.choice([256, 512, 1024, 2048, 4096, 8192])
            own = rng.random() < 0.6
            tef = rng.uniform(0.15, 0.45)
            p50 = rng.uniform(200, 600)
            writer.writerow([
                f"Site {i + 1:05d} {rng.choice(CITIES)}", f"{rng.choice([2027, 2028])}-"
                f"{rng.randint(1, 12):02d}-01", rng.choice([36, 48, 60, 84, 120]), gpus, model,
                "own" if own else "rent", capex if own else "", round(capex * 0.1) if own else "",
                rng.choice([4, 5, 6]) if own else "",
                "" if own else round(rng.uniform(1.6, 3.2), 2),
                kw, round(rng.uniform(1.1, 1.5), 2), round(rng.uniform(0.04, 0.2), 3), tps,
                round(gpus * tps * tef), round(tef, 3), round(rng.uniform(0.55, 0.7), 3),
                rng.choice([0.99, 0.995, 0.999]), round(p50), round(p50 * rng.uniform(2, 5)),
                round(rng.uniform(0.4, 0.6), 2), round(rng.uniform(0.15, 0.4), 2),
                round(rng.uniform(0.6, 1.6), 2), round(rng.uniform(0.2, 0.35), 2),
            ])


# -- the measurements, each in its own process -------------------------------------------------
def child_batch(sites: str, out: str, jobs: int, level: int, risk_draws: int = 0) -> dict:
    from tokenfactory_xl.portfolio import batch

    started = time.perf_counter()
    batch.shared_factory(level)
    template = time.perf_counter() - started
    cpu_before = _peaks()["cpu_s"]
    report = batch.run_batch(sites, out, jobs=jobs, level=level, force=True,
                             risk_draws=risk_draws)
    seconds = time.perf_counter() - started - template
    sizes = [p.stat().st_size for p in report.written]
    peaks = _peaks()
    peaks["cpu_s"] -= cpu_before
    return {"workbooks": len(report.written), "seconds": seconds, "template_s": template,
            "mean_kb": sum(sizes) / len(sizes) / 1024, **peaks}


def child_plain(sites: str, out: str, count: int) -> dict:
    from tokenfactory_xl.sites.load import read_sites
    from tokenfactory_xl.workbook import build as workbook

    rows = read_sites(sites)[:count]
    started, cpu_before = time.perf_counter(), _peaks()["cpu_s"]
    for row in rows:
        wb = workbook.build_workbook(row.inputs)
        workbook.save_workbook(wb, Path(out) / f"{row.file_stem}.xlsx")
    seconds = time.perf_counter() - started
    peaks = _peaks()
    peaks["cpu_s"] -= cpu_before
    return {"workbooks": len(rows), "seconds": seconds, **peaks}


def _peaks() -> dict:
    own = resource.getrusage(resource.RUSAGE_SELF)
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime
    return {"peak_mb": own.ru_maxrss / 1024, "worker_peak_mb": workers.ru_maxrss / 1024,
            "cpu_s": cpu}


def measure(*args: str) -> dict:
    # one BLAS thread, as the command line sets it (a value set by hand is kept): two threads
    # spin after each of the risk draws' matrix products and are counted as CPU, some 40 ms a
    # workbook of 500 draws that the command never spends
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "1")}
    proc = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True,
                          text=True, env=env, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark child failed: {' '.join(args)}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sites", type=int, default=1000)
    parser.add_argument("--large", type=int, nargs="+", default=[10_000],
                        help="sites for the memory comparison, one or more sizes (0: skip)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--plain", type=int, default=20,
                        help="sites built the plain way (openpyxl full build + save)")
    parser.add_argument("--risk-draws", type=int, default=500,
                        help="draws a site for the run with risk columns")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        if kind == "batch":
            result = child_batch(rest[0], rest[1], int(rest[2]), int(rest[3]),
                                 int(rest[4]) if len(rest) > 4 else 0)
        else:
            result = child_plain(rest[0], rest[1], int(rest[2]))
        print(json.dumps(result))
        return

    from tokenfactory_xl.workbook.stencil import COMPRESSION_LEVEL, DEFLATE

    work = Path(tempfile.mkdtemp(prefix="tfxl-bench-"))
    try:
        sites = work / "sites.csv"
        generate_sites(sites, args.sites)
        print(f"{args.sites:,} generated sites; {os.cpu_count()} cores; "
              f"load average {os.getloadavg()[0]:.1f} (the machine may be shared)")
        plain = measure("plain", str(sites), str(_fresh(work / "plain")), str(args.plain))
        one = measure("batch", str(sites), str(_fresh(work / "one")), "1",
                      str(COMPRESSION_LEVEL), "0")
        many = measure("batch", str(sites), str(_fresh(work / "many")), str(args.jobs),
                       str(COMPRESSION_LEVEL), "0")
        risky = measure("batch", str(sites), str(_fresh(work / "risk")), "1",
                        str(COMPRESSION_LEVEL), str(args.risk_draws))
        plain_rate = plain["workbooks"] / plain["seconds"]
        rows = [("plain openpyxl build + save", plain, 1),
                ("batch --jobs 1 --risk-draws 0", one, 1),
                (f"batch --jobs {args.jobs} --risk-draws 0", many, args.jobs),
                (f"batch --jobs 1 --risk-draws {args.risk_draws:,}", risky, 1)]
        plain_cpu = plain["workbooks"] / plain["cpu_s"]
        # Wall-clock rates depend on what else the machine runs; workbooks per CPU-second
        # (user + system time of the process and its workers) much less.
        print(f"\n{'':30}{'workbooks':>10}{'seconds':>8}{'wb/s':>8}{'× plain':>8}"
              f"{'wb/cpu-s':>9}{'× plain':>8}{'peak MB':>8}{'worker MB':>10}")
        for label, r, _ in rows:
            rate, cpu_rate = r["workbooks"] / r["seconds"], r["workbooks"] / r["cpu_s"]
            print(f"{label:30}{r['workbooks']:>10,}{r['seconds']:>8.1f}{rate:>8.1f}"
                  f"{rate / plain_rate:>8.1f}{cpu_rate:>9.1f}{cpu_rate / plain_cpu:>8.1f}"
                  f"{r['peak_mb']:>8.0f}{r['worker_peak_mb']:>10.0f}")
        print(f"(template built once per process: {one['template_s']:.2f} s, not counted)")
        xml_mb, deflate_s = deflate_cost(work / "one")
        per_workbook = one["cpu_s"] / one["workbooks"]
        print(f"one workbook: {per_workbook * 1000:.1f} ms of CPU; deflating its own XML "
              f"parts ({xml_mb:.1f} MB) with {DEFLATE} at level 1: {deflate_s * 1000:.1f} ms; "
              f"ratio {per_workbook / deflate_s:.1f}x (goal: at most 6x)")
        print(f"risk columns: {risky['cpu_s'] / one['cpu_s']:.2f}x the batch's CPU a workbook "
              f"without them ({args.risk_draws:,} draws a site; goal: at most 2.2x)")

        count = min(args.sites, 200)
        small = work / "small.csv"
        generate_sites(small, count)
        print(f"\nworksheet compression, {count} sites, --jobs 1:")
        for level in (0, 1, 6):
            r = measure("batch", str(small), str(_fresh(work / f"level{level}")), "1",
                        str(level))
            print(f"  level {level}: {r['workbooks'] / r['seconds']:7.1f} wb/s, "
                  f"{r['workbooks'] / r['cpu_s']:7.1f} wb/cpu-s, "
                  f"{r['mean_kb']:7.0f} KB per workbook")

        sizes = [n for n in args.large if n > 0]
        if sizes:
            print(f"\nmemory, --jobs {args.jobs}: {args.sites:,} sites peak "
                  f"{many['peak_mb']:.0f} MB (workers {many['worker_peak_mb']:.0f} MB)")
        for count in sizes:
            large = work / "large.csv"
            generate_sites(large, count)
            r = measure("batch", str(large), str(_fresh(work / "large")), str(args.jobs),
                        str(COMPRESSION_LEVEL))
            shutil.rmtree(work / "large", ignore_errors=True)  # about 1 MB a workbook
            print(f"  {count:,} sites peak {r['peak_mb']:.0f} MB "
                  f"(workers {r['worker_peak_mb']:.0f} MB), "
                  f"{r['workbooks'] / r['seconds']:.1f} wb/s, "
                  f"{r['workbooks'] / r['cpu_s']:.1f} wb/cpu-s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def deflate_cost(folder: Path, sample: int = 50) -> tuple[float, float]:
    """The mean size of the written workbooks' XML parts (worksheets, charts, styles, the
    relationships: every ``.xml`` and ``.rels`` member) [MB] and the mean time to deflate them
    with the batch's own compressor at its level [s] (the best of three per workbook)."""
    import zipfile

    from tokenfactory_xl.workbook.stencil import deflate

    sizes, times = [], []
    books = sorted(p for p in folder.glob("*.xlsx") if p.name != "portfolio.xlsx")
    for path in books[:sample]:
        with zipfile.ZipFile(path) as archive:
            sheets = [archive.read(n) for n in archive.namelist()
                      if n.endswith((".xml", ".rels"))]
        best = float("inf")
        for _ in range(3):
            started = time.process_time()
            for xml in sheets:
                deflate(xml)
            best = min(best, time.process_time() - started)
        sizes.append(sum(map(len, sheets)) / 1e6)
        times.append(best)
    return sum(sizes) / len(sizes), sum(times) / len(times)


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


if __name__ == "__main__":
    main()
