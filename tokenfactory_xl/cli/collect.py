"""The ``tokenfactory-xl collect`` command: filled-in TFOM workbooks collected into a portfolio,
with an audit report.

The reading, the audit and the outputs are :mod:`tokenfactory_xl.portfolio.collect`'s; this module
parses the options, claims the output folders, refuses outputs that would replace an input and
prints the short report.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import sys
from pathlib import Path

from ..files.disk import OutputClash, check_outputs, claim, describe_os_error
from ..files.safe_xlsx import MB, Limits, RefusedFile, open_xlsx
from ..portfolio.book import PORTFOLIO_SHEET
from ..portfolio.collect import (
    FILES_PER_WORKER,
    auto_jobs,
    collect,
    duplicates,
    find_workbooks,
    passed_over,
    report_short,
    same_file_key,
    write_outputs,
)
from ..portfolio.interrupts import Stopped, stop_on_signals
from ..sites.load import visible
from .common import EXIT_FAILED

#: Exit status of a collect that read every workbook: 0, or 1 when the audit found something.
EXIT_OK, EXIT_FINDINGS = 0, 1


# -- the command line ----------------------------------------------------------------------------
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """``"200MB"``, ``"1.5 GB"``, ``"5000000"`` → bytes (decimal units: 1 MB = 10⁶ bytes)."""
    match = _SIZE.match(text)
    if not match:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size; write e.g. 200MB, 1GB or a number of bytes")
    unit = (match.group(2) or "B").upper()
    return int(float(match.group(1)) * {"B": 1, "KB": 1000, "MB": MB, "GB": 1000 * MB}[unit])


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a ratio of at least 1, e.g. 100")
    return value


def default_report_path(portfolio: Path) -> Path:
    """``portfolio.xlsx`` → ``portfolio-report.md`` in the same folder."""
    return portfolio.with_name(portfolio.stem + "-report.md")


def _is_portfolio(path: Path) -> bool:
    """Whether ``path`` is a portfolio from batch or collect (no input names, first sheet
    Portfolio): the one kind of collected file an output may replace."""
    try:
        with open_xlsx(path) as content:
            return (not any(n.startswith("in_") for n in content.defined_names)
                    and [sh.title for sh in content.sheets][:1] == [PORTFOLIO_SHEET])
    except (RefusedFile, OSError):
        return False


def cmd_collect(args: argparse.Namespace) -> int:
    from ..core.errors import UsageError

    try:
        with stop_on_signals():
            return _collect_command(args)
    except OutputClash as exc:
        lines = ["an output would replace one of the workbooks read or another output, so "
                 "nothing was written:"] + [f"  - {visible(str(p))}" for p in exc.problems]
        raise UsageError("\n".join(lines)) from None
    except (Stopped, KeyboardInterrupt) as exc:
        stopped = exc if isinstance(exc, Stopped) else Stopped(signal.SIGINT)
        print(f"tokenfactory-xl: collect stopped by {stopped.name}; nothing was written",
              file=sys.stderr)
        return stopped.exit_status
    except BrokenPipeError:
        raise  # the outputs are written; the reader of the listing went away (cli.main)
    except OSError as exc:
        print(f"tokenfactory-xl: collect failed: {describe_os_error(exc)}; nothing was written "
              "(files that were there before are unchanged)", file=sys.stderr)
        return EXIT_FAILED


def _collect_command(args: argparse.Namespace) -> int:
    from ..core.errors import UsageError

    portfolio = Path(args.output)
    report = Path(args.report) if args.report else default_report_path(portfolio)
    summary_csv = Path(args.summary_csv) if args.summary_csv else None
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: needs at least 1 process")
    if portfolio.suffix.lower() != ".xlsx":
        raise UsageError(f"-o {portfolio}: the portfolio is a workbook; give a name ending in "
                        ".xlsx")
    outputs = [p for p in (portfolio, summary_csv, report) if p is not None]
    if len({same_file_key(p) for p in outputs}) < len(outputs):
        raise UsageError("the portfolio, the summary CSV and the report need different file names")
    for path in outputs:
        if not path.parent.is_dir():
            raise UsageError(f"{path.parent}: no such folder for {path.name}")
    # Two collects writing into one folder queue: the second finds the first's portfolio there
    # (and replaces it only with --force), never both thinking the name free.
    folders = sorted({os.path.realpath(p.parent) for p in outputs})
    with contextlib.ExitStack() as claims:
        for folder in folders:
            claims.enter_context(claim(folder, wait=True, what="into the folder",
                                       on_wait=lambda f=folder: print(
                                           f"tokenfactory-xl: note: waiting for another run "
                                           f"writing into {f}", file=sys.stderr, flush=True)))
        for path in outputs:
            if path.exists() and not args.force:
                raise UsageError(f"{path} exists; use --force to replace it")
        return _collect_into(args, portfolio, report, summary_csv, outputs)


def _collect_into(args: argparse.Namespace, portfolio: Path, report: Path,
                  summary_csv: Path | None, outputs: list[Path]) -> int:
    """The collect command once its output folders are its own."""
    from ..core.errors import UsageError

    found = find_workbooks(args.paths)
    # A portfolio this command wrote into a collected folder is replaced, never collected; any
    # other file found is an input and no output may replace it.
    output_keys = set()
    for p in outputs:
        with contextlib.suppress(OSError):
            output_keys.add((os.stat(p).st_dev, os.stat(p).st_ino))
    files = []
    for path in found:
        try:
            st = os.stat(path)
            key = (st.st_dev, st.st_ino)
        except OSError:
            key = None
        if key is not None and key in output_keys and path not in map(Path, args.paths) \
                and _is_portfolio(path):
            continue
        files.append(path)
    labelled = [("-o", portfolio), ("--report", report)]
    if summary_csv is not None:
        labelled.insert(1, ("--summary-csv", summary_csv))
    check_outputs(labelled, [("the workbook", f) for f in files])
    if not files:
        lines = ["no workbook found in " + ", ".join(map(visible, args.paths))
                 + " (folders are searched for .xlsx, .xlsm and .xls files)"]
        lines += [f"  - {visible(str(a.path))}: {visible(a.findings[0].message)}"
                  for a in passed_over(args.paths)]
        raise UsageError("\n".join(lines))
    limits = Limits(max_uncompressed=args.max_uncompressed, max_ratio=args.max_ratio)
    audits = collect(files, limits, args.jobs or auto_jobs(len(files)))
    audits += passed_over(args.paths, outputs)
    dups = duplicates(audits)
    if dups and not args.allow_duplicates:
        many = len(dups) != 1
        lines = [f"{len(dups)} workbook{'s' if many else ''} repeat{'' if many else 's'} a site "
                 "already collected, so nothing was written (the portfolio would count it "
                 "twice):"]
        lines += [f"  - {visible(str(d.first.path))} and {visible(str(d.second.path))}: "
                  f"{visible(d.reason)}" for d in dups]
        lines.append("remove one of each pair, or add --allow-duplicates to collect both")
        raise UsageError("\n".join(lines))
    write_outputs(audits, portfolio, report, summary_csv)
    print(report_short(audits))
    written = f"portfolio: {portfolio}" + (f"; CSV: {summary_csv}" if summary_csv else "")
    print(visible(f"{written}; report: {report}"))
    errors = any(a.count("error") for a in audits)
    return EXIT_FINDINGS if errors else EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``tokenfactory-xl collect``."""
    defaults = Limits()
    p = subparsers.add_parser(
        "collect",
        description="Read the inputs typed into each filled-in TFOM workbook (by their in_ "
                    "names), check them, recompute every site with the Python model and write "
                    "the portfolio; audit each workbook against the template (formulas edited or "
                    "typed over, sheets added or deleted, old template, stale stored values) and "
                    "write the findings to a Markdown report. Files that cannot be read are "
                    "listed and left out; the others are still collected. Exit status: 1 when "
                    "any error-level finding exists, 0 otherwise; 2 for a usage mistake.",
        epilog="examples:\n  tokenfactory-xl batch templates/sites-example.csv -o returned\n"
               "  tokenfactory-xl collect returned/ -o portfolio.xlsx "
               "--summary-csv portfolio.csv",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", metavar="FILE_OR_DIR",
                   help="workbooks, or folders searched for .xlsx/.xlsm/.xls files")
    p.add_argument("-o", "--output", required=True, metavar="PORTFOLIO.xlsx",
                   help="the portfolio workbook to write")
    p.add_argument("--summary-csv", metavar="FILE", help="also write the portfolio rows as CSV")
    p.add_argument("--report", metavar="FILE",
                   help="the Markdown audit report (default: PORTFOLIO-report.md beside it)")
    p.add_argument("--force", action="store_true", help="replace output files that exist")
    p.add_argument("--max-uncompressed", type=parse_size, default=defaults.max_uncompressed,
                   metavar="SIZE",
                   help="refuse a workbook whose zip members add up to more than SIZE "
                        "uncompressed (default 200MB)")
    p.add_argument("--max-ratio", type=_ratio, default=defaults.max_ratio, metavar="RATIO",
                   help="refuse a workbook with a member over 1 MB that expands more than RATIO "
                        f"times (default {defaults.max_ratio:g})")
    p.add_argument("--jobs", type=int, metavar="N",
                   help="worker processes auditing the files (default: one per processor core "
                        f"when there are at least {FILES_PER_WORKER} files for each; 1 audits "
                        "them in this process)")
    p.add_argument("--allow-duplicates", action="store_true",
                   help="collect two workbooks of the same site (same site name, or identical "
                        "files) as two rows, with a warning; without it such a run stops "
                        "before writing anything")
    p.set_defaults(func=cmd_collect)
