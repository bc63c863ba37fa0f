"""The ``tokenfactory-xl track`` command: plan against actual, appended to a workbook's Actuals
sheet.

The work is :func:`tokenfactory_xl.portfolio.track.track`'s; this module parses the options and
prints what was added.
"""

from __future__ import annotations

import argparse

from ..portfolio.track import TrackError, parse_month, track


def cmd_track(args: argparse.Namespace) -> int:
    from ..core.errors import UsageError
    from ..sites.load import visible

    try:
        done = track(args.workbook, args.files, args.month, args.gpus, args.interval)
    except TrackError as exc:
        raise UsageError(f"{visible(str(exc))}; nothing was written") from None
    repeated: dict[tuple[str, str], int] = {}
    for source, when in done.already:
        repeated[(source, when)] = repeated.get((source, when), 0) + 1
    for (source, when), runs in repeated.items():
        what = f"{runs} runs of " if runs > 1 else ""
        print(f"already tracked: {what}{visible(source)} (in {when}); not added again")
    for row in done.added:
        print(f"added {row['month']:%Y-%m} (month {row['model_month']}): TEF actual "
              f"{row['tef_actual']:.2%} against plan {row['tef_plan']:.2%}, variance "
              f"{row['variance']:+.2%} (worth {done.currency} {row['revenue_worth']:,.0f} of "
              "revenue that month) — "
              f"{visible(str(row['source']))}")
        if row["tef_actual"] > 1:  # type: ignore[operator]
            print("  note: TEF above 100 %: the measurement beats cohort 1's theoretical TPS "
                  "per GPU; check theoretical_tps_per_gpu and the GPUs measured (--gpus)")
    count = len(done.added)
    print(f"{visible(str(done.workbook))}: {count} row{'s' if count != 1 else ''} added, "
          f"{len(done.rows)} on the Actuals sheet")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    from .common import add_print_output, positive_float, positive_int

    p = subparsers.add_parser(
        "track",
        description="Plan against actual: read benchmark result files or two Prometheus "
                    "scrapes (every format `actuals` reads) and append to the workbook's "
                    "Actuals sheet one dated row per measurement: measured TPS, TEF against "
                    "cohort 1's theoretical TPS per GPU, the plan's TEF that month, the "
                    "variance and the revenue it is worth at that month's price, with a chart "
                    "of plan against actual. The same file twice adds nothing; a month outside "
                    "the horizon is refused; the workbook is replaced atomically, nothing but "
                    "the Actuals sheet changed.",
        epilog="examples:\n  tokenfactory-xl track TFOM.xlsx "
               "tests/fixtures/actuals/vllm_bench_serve.json --month 2027-03 --gpus 2\n"
               "  tokenfactory-xl track TFOM.xlsx tests/fixtures/actuals/vllm_metrics_before.prom "
               "tests/fixtures/actuals/vllm_metrics_after.prom --gpus 2 --month 2027-04",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("workbook", metavar="WORKBOOK", help="the site's TFOM workbook (.xlsx)")
    p.add_argument("files", nargs="+", metavar="RESULT_FILE",
                   help="benchmark result files, or two Prometheus scrapes (before, after)")
    p.add_argument("--month", type=parse_month, metavar="YYYY-MM",
                   help="the month the files were measured in (default: the date each file "
                        "records; needed for files that record none)")
    p.add_argument("--gpus", type=positive_int, metavar="N",
                   help="GPUs of the measured instance (default: the count the file states, "
                        "such as a suite result's tp; needed where it states none)")
    p.add_argument("--interval", type=positive_float, metavar="SECONDS",
                   help="seconds between two Prometheus scrapes that carry no timestamps")
    add_print_output(p)
    p.set_defaults(func=cmd_track)
