"""The ``tokenfactory-xl batch`` command: one TFOM workbook per site of a sites file, and the
portfolio of them.

The work is :func:`tokenfactory_xl.portfolio.batch.run_batch`'s; this module parses the options,
turns what the batch refuses into messages and prints what was written.
"""

from __future__ import annotations

import argparse
import signal
import sys

from ..core.errors import InputError
from ..files.disk import (
    OutputClash,
    describe_os_error,
)
from ..portfolio.batch import (
    BATCH_RISK_DRAWS,
    PORTFOLIO,
    Progress,
    TargetsExist,
    end_progress,
    run_batch,
)
from ..portfolio.interrupts import Stopped, stop_on_signals
from ..sites.load import visible
from ..tfom.inputs import default_inputs
from .common import EXIT_FAILED


# -- command line --------------------------------------------------------------------------------
def cmd_batch(args: argparse.Namespace) -> int:
    from ..core.errors import UsageError
    from .common import is_stdio, read_stdin_as_file

    if args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: needs at least 1 process")
    if is_stdio(args.sites) and is_stdio(args.cohorts):
        raise UsageError("SITES - and --cohorts -: the standard input holds one file; give the "
                         "sites or the cohorts as a file name")
    stream = None if args.quiet else sys.stderr
    try:
        with stop_on_signals(), read_stdin_as_file(args.sites, "SITES") as sites_path, \
                read_stdin_as_file(args.cohorts, "--cohorts") as cohorts_path:
            report = run_batch(
                sites_path, args.outdir, sheet=args.sheet, skip_invalid=args.skip_invalid,
                force=args.force, jobs=args.jobs, summary_csv=args.summary_csv,
                progress=lambda n: Progress(n, stream), header_row=args.header_row,
                cohorts=cohorts_path, risk_draws=args.risk_draws, solve=args.solve)
    except TargetsExist as exc:
        raise UsageError(str(exc)) from None
    except OutputClash as exc:
        lines = ["an output would replace an input or another output, so nothing was "
                 "written:"] + [f"  - {visible(p)}" for p in exc.problems]
        raise UsageError("\n".join(lines)) from None
    except InputError as exc:
        count = len(exc.problems)
        files = ("the sites from standard input" if is_stdio(args.sites) else visible(args.sites)
                 ) + (" and the cohorts from standard input" if is_stdio(args.cohorts) else
                      f" and {visible(args.cohorts)}" if args.cohorts else "")
        lines = [f"{count} problem{'s' if count != 1 else ''} in {files}, so "
                 "nothing was written:"] + [f"  - {visible(p)}" for p in exc.problems]
        raise UsageError("\n".join(lines)) from None
    except (Stopped, KeyboardInterrupt) as exc:
        stopped = exc if isinstance(exc, Stopped) else Stopped(signal.SIGINT)
        end_progress(stream)
        print(f"tokenfactory-xl: batch stopped by {stopped.name}; nothing was written",
              file=sys.stderr)
        return stopped.exit_status
    except OSError as exc:
        end_progress(stream)
        print(f"tokenfactory-xl: batch failed: {describe_os_error(exc)}; nothing was written "
              "(files that were there before are unchanged)", file=sys.stderr)
        return EXIT_FAILED
    if not args.quiet:
        for note in report.notes:
            print(f"tokenfactory-xl: note: {visible(note)}", file=sys.stderr)
    if report.skipped:
        problems = [p for row in report.skipped for p in row.problems]
        print(f"tokenfactory-xl: skipped {len(report.skipped)} row"
              f"{'s' if len(report.skipped) != 1 else ''} with problems:", file=sys.stderr)
        for problem in problems:
            print(f"  - {visible(problem)}", file=sys.stderr)
    if not args.quiet:
        count = len(report.written)
        extra = f" and {report.summary_csv}" if report.summary_csv else ""
        print(f"wrote {count:,} workbook{'s' if count != 1 else ''} and {PORTFOLIO} to "
              f"{report.outdir}{extra} in {report.seconds:.1f} s")
    return report.exit_status


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "batch",
        description="Read a sites file (.csv or .xlsx: a header of input names, one row per "
                    "site), check every row, then write one TFOM workbook per site into OUTDIR, "
                    "named after the site, and OUTDIR/portfolio.xlsx with one row per site. "
                    "Nothing is written when a row is bad (exit status 2) unless --skip-invalid; "
                    "existing files are never replaced without --force, the sites file never. "
                    "A run that fails or is stopped writes none of its files (exit status 1, "
                    "130 for Ctrl-C, 143 for SIGTERM).",
        epilog="examples:\n  tokenfactory-xl batch templates/sites-example.csv -o out\n"
               "  tokenfactory-xl batch templates/sites-example.csv -o out --force --jobs 2 "
               "--summary-csv out/summary.csv",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sites", metavar="SITES",
                   help="the sites file (.csv or .xlsx); - reads it from standard input")
    p.add_argument("-o", "--output", "--outdir", dest="outdir", required=True, metavar="OUTDIR",
                   help="folder for the workbooks and portfolio.xlsx (created if needed)")
    p.add_argument("--sheet", metavar="NAME",
                   help="the worksheet of an .xlsx sites file (default: the sheet the workbook "
                        "opens on; a hidden sheet is read only when named)")
    p.add_argument("--skip-invalid", action="store_true",
                   help="write the valid rows, list the bad ones, exit with status 1 if any "
                        "was skipped")
    p.add_argument("--force", action="store_true", help="replace existing files")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="worker processes (default 1)")
    p.add_argument("--quiet", action="store_true",
                   help="no progress, no notes and no closing line (problems are still "
                        "reported)")
    p.add_argument("--summary-csv", metavar="FILE",
                   help="also write the portfolio table as CSV (one row per site)")
    p.add_argument("--header-row", type=_row_number, metavar="N",
                   help="the row of the sites file holding the input names (default: the first "
                        "row with a site_name cell)")
    p.add_argument("--risk-draws", type=_draws, default=BATCH_RISK_DRAWS, metavar="N",
                   help="Monte Carlo draws per site for the portfolio's npv_p10, npv_p50, "
                        f"npv_p90 and prob_npv_negative (default {BATCH_RISK_DRAWS:,}; 0: no "
                        "risk columns; `tokenfactory-xl risk` gives one site's with 10,000)")
    p.add_argument("--cohorts", metavar="FILE",
                   help="the sites' further cohorts (.csv or .xlsx: a site_name column, then "
                        "cohort, online_month, gpus and any cohort column; see `tokenfactory-xl "
                        "inputs`; - for the standard input); default: the sites workbook's sheet "
                        "named cohorts, if any")
    p.add_argument("--solve", type=_solve_inputs, default=(), metavar="INPUT,…",
                   help="what must be true: for each of these numeric inputs (comma-separated, "
                        "e.g. tef_target,price_factor) the value at which the site's live NPV "
                        "is 0, as a portfolio column <input>_at_npv0 (blank where no value of "
                        "the input's range gives NPV 0); see `tokenfactory-xl solve`")
    p.set_defaults(func=cmd_batch)


def _solve_inputs(text: str) -> tuple[str, ...]:
    """``--solve tef_target,price_factor``: numeric inputs of the catalogue, each once."""
    from ..tfom.solve import solvable

    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise argparse.ArgumentTypeError("give one or more input names, e.g. "
                                         "--solve tef_target,price_factor")
    for name in names:
        if "." in name:
            raise argparse.ArgumentTypeError(f"{name}: a column is one input of every site; "
                                             "per-scenario inputs are the live scenario's")
        try:
            solvable(name, default_inputs())
        except InputError as exc:
            raise argparse.ArgumentTypeError(str(exc).replace("--for=", "")) from None
    return names


def _draws(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value}: give 0 (no risk columns) or more draws")
    return value


def _row_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a row number (1, 2, 3 …)")
    return value
