"""A warm ``template`` and a batch's workbook against an earlier commit's, in the same run.

Both trees run from clones of their commits (``PYTHONPATH``, each with a build cache of its
own, filled by a first ``template`` that is not timed) as fresh processes, the earlier commit
and this one taking turns, so that a busy machine costs both alike. Each figure is the least
CPU time of its runs, children included (``resource.getrusage(RUSAGE_CHILDREN)``):

1. ``summary`` and ``template -o F --force``: the ratio the version-3 goal names (a warm
   ``template`` at most 3 × ``summary``);
2. ``batch`` of ``--sites`` generated sites (``--jobs 1 --risk-draws 0``): its CPU a workbook.

Then the ratios of this commit's figures to the earlier one's. Usage::

    python benchmarks/template.py                    # against the commit before this work
    python benchmarks/template.py --against v3.1.2   # any commit, branch or tag
    python benchmarks/template.py --repeat 9 --sites 300

The clones and build caches are removed afterwards.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import tempfile
from pathlib import Path

from measure import TOKENFACTORY_XL, child_cpu, clone, tree_env

#: The commit this benchmark was written against: the kept workbook factory before it was
#: made compact.
BEFORE = "778ff9b"


def generate_sites(path: Path, count: int, seed: int = 12) -> None:
    """``count`` sites of a few inputs each, the same for the same ``seed``."""
    rnd = random.Random(seed)
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["site_name", "gpus", "measured_tps", "capex_per_gpu", "availability"])
        for i in range(count):
            gpus = rnd.randint(64, 4096)
            out.writerow([f"S{i:04d}", gpus, round(gpus * 10000 * rnd.uniform(0.15, 0.6)),
                          rnd.randint(20000, 60000), round(rnd.uniform(0.95, 0.999), 4)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", default=BEFORE,
                        help=f"the earlier commit, branch or tag (default {BEFORE})")
    parser.add_argument("--repeat", type=int, default=7, help="runs of each command")
    parser.add_argument("--sites", type=int, default=300, help="sites of the batch")
    parser.add_argument("--batch-repeat", type=int, default=2, help="runs of the batch")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tfxl-template-") as tmp:
        folder = Path(tmp)
        sites = folder / "sites.csv"
        generate_sites(sites, args.sites)
        trees = {}
        for label, rev in (("before", args.against), ("this commit", "HEAD")):
            where = folder / label.replace(" ", "-")
            tree, short = clone(rev, where / "tree")
            trees[label] = (short, tree_env(tree, where / "cache"), where)
        tf = TOKENFACTORY_XL
        runs: dict[tuple[str, str], list[float]] = {}
        for _, env, where in trees.values():  # fills each build cache, not timed
            child_cpu([*tf, "template", "-o", str(where / "warm.xlsx")], env, folder)
        for _ in range(args.repeat):
            for label, (_, env, where) in trees.items():
                runs.setdefault((label, "summary"), []).append(
                    child_cpu([*tf, "summary"], env, folder))
                runs.setdefault((label, "template"), []).append(child_cpu(
                    [*tf, "template", "-o", str(where / "t.xlsx"), "--force"], env, folder))
        for _ in range(args.batch_repeat):
            for label, (_, env, where) in trees.items():
                runs.setdefault((label, "batch"), []).append(child_cpu(
                    [*tf, "batch", str(sites), "-o", str(where / "out"), "--quiet", "--force",
                     "--jobs", "1", "--risk-draws", "0"], env, folder) / args.sites)
    best = {key: min(values) for key, values in runs.items()}
    middle = {key: sorted(values)[len(values) // 2] for key, values in runs.items()}
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} (the machine may be "
          f"shared); CPU seconds, children included, least (median) of {args.repeat} runs, "
          f"the batch's of {args.batch_repeat}")
    print(f"\n{'':12} {'commit':>8} {'summary s':>16} {'template s':>16} {'template/summary':>17} "
          f"{'batch ms a workbook':>20}")
    for label, (short, _, _) in trees.items():
        s, t, b = ((best[label, k], middle[label, k]) for k in ("summary", "template", "batch"))
        print(f"{label:12} {short:>8} {s[0]:7.3f} ({s[1]:.3f}) {t[0]:7.3f} ({t[1]:.3f}) "
              f"{t[0] / s[0]:16.2f}× {b[0] * 1000:10.1f} ({b[1] * 1000:.1f})")
    for key, name in (("template", "a warm template"), ("batch", "a batch's workbook")):
        ratio = best["this commit", key] / best["before", key]
        saved = best["before", key] - best["this commit", key]
        print(f"{name}: {ratio:.2f}× the earlier commit's CPU ({saved * 1000:+.0f} ms saved)"
              if saved >= 0 else f"{name}: {ratio:.2f}× the earlier commit's CPU")


if __name__ == "__main__":
    main()
