"""Collect filled-in TFOM workbooks into a portfolio, with an audit report finance can trust.

Site managers fill in the TFOM workbook and send it back. ``tokenfactory-xl collect`` takes
those files (or folders of them), audits each one against the template
(:mod:`tokenfactory_xl.audit`), recomputes every site with the Python model from the inputs typed
into it — never from the values the file stores — and writes

- the portfolio, one row per site, in the batch's layout (:mod:`tokenfactory_xl.portfolio`);
- optionally the same rows as CSV;
- the audit report (Markdown), and a short form of it on the standard output.

Files are handled one by one: one that cannot be read (not a workbook, an ``.xls``, password-
protected, damaged, hostile, not a TFOM) gets its line in the report and the others are still
collected. The exit status is 1 when any error-level finding exists, 0 otherwise; the portfolio
is written either way, from the workbooks whose inputs are valid. Input files are only read.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from . import __version__
from .audit import SEVERITIES, Finding, WorkbookAudit, audit_workbook, current_template
from .safe_xlsx import MB, Limits

#: Files a folder is searched for (any file named on the command line is read, whatever its name).
WORKBOOK_SUFFIXES = (".xlsx", ".xlsm", ".xls")

EXIT_OK, EXIT_FINDINGS = 0, 1


# -- finding the files -------------------------------------------------------------------------
def find_workbooks(paths: Iterable[str | Path], exclude: Iterable[Path] = ()) -> list[Path]:
    """The files to collect: each named file, and the workbooks in each named folder.

    Folders are searched recursively, in name order, for ``.xlsx``, ``.xlsm`` and ``.xls``
    files; hidden files and Excel's lock files (``~$name.xlsx``) are skipped. ``exclude`` holds
    the run's own outputs, so a portfolio written into the folder is not collected next time.
    """
    from .cli import UserError

    skip = {_same_file_key(p) for p in exclude}
    found: list[Path] = []
    for item in paths:
        path = Path(item)
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                rel = child.relative_to(path)
                if any(part.startswith((".", "~$")) for part in rel.parts):
                    continue
                if child.is_file() and child.suffix.lower() in WORKBOOK_SUFFIXES:
                    found.append(child)
        elif path.is_file():
            found.append(path)
        else:
            raise UserError(f"{path}: no such file or folder")
    unique = list(dict.fromkeys(found))
    return [p for p in unique if _same_file_key(p) not in skip]


def _same_file_key(path: Path) -> str:
    return os.path.normcase(os.path.abspath(path))


# -- auditing ------------------------------------------------------------------------------------
def collect(paths: Sequence[str | Path], limits: Limits | None = None) -> list[WorkbookAudit]:
    """Audit every file of ``paths`` (files, not folders), one by one, in order.

    The template is built once for the whole run. A file whose audit fails unexpectedly is
    reported as such and the run goes on.
    """
    template = current_template()
    audits = []
    for path in paths:
        try:
            audit = audit_workbook(path, template, limits)
        except Exception as exc:  # noqa: BLE001 - one bad file must not stop the others
            audit = WorkbookAudit(Path(path), refused=True)
            audit.add("error", "internal", "",
                      f"could not be audited ({type(exc).__name__}: {exc}); please report this")
        audits.append(audit)
    _check_duplicates(audits)
    return audits


def _check_duplicates(audits: list[WorkbookAudit]) -> None:
    """Two workbooks for the same site would count it twice in the portfolio."""
    seen: dict[str, Path] = {}
    for audit in audits:
        if audit.inputs is None:
            continue
        name = str(audit.inputs["site_name"])
        key = name.casefold()
        if key in seen:
            audit.add("warning", "duplicate_site", "in_site_name",
                      f"the site name {name!r} is also that of {seen[key]}: the portfolio has "
                      "both rows")
        else:
            seen[key] = audit.path


# -- the report ----------------------------------------------------------------------------------
def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _totals(audits: Sequence[WorkbookAudit]) -> str:
    counts = Counter(f.severity for a in audits for f in a.findings)
    return (f"{_plural(counts['error'], 'error')}, {_plural(counts['warning'], 'warning')}, "
            f"{_plural(counts['info'], 'note')}")


def _headcount(audits: Sequence[WorkbookAudit]) -> str:
    """``6 files: 4 in the portfolio, 1 left out, 1 skipped``."""
    included = sum(a.included for a in audits)
    skipped = sum(a.skipped for a in audits)
    text = (f"{_plural(len(audits), 'file')}: {included:,} in the portfolio, "
            f"{len(audits) - included - skipped:,} left out")
    return text + (f", {skipped:,} skipped" if skipped else "")


def _site(audit: WorkbookAudit) -> str:
    return str(audit.inputs["site_name"]) if audit.inputs is not None else audit.site_name


def _md(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    if not text:
        return ""
    return f"`{text}`" if "`" not in text else _md(text)


def report_markdown(audits: Sequence[WorkbookAudit], outputs: Sequence[tuple[str, Path]] = (),
                    when: dt.datetime | None = None) -> str:
    """The audit report: a summary table, then every workbook with each of its findings."""
    template = current_template()
    when = when or dt.datetime.now(dt.timezone.utc)
    lines = [
        "# TFOM collect report",
        "",
        f"Collected on {when:%Y-%m-%d %H:%M} UTC with tokenfactory_xl {__version__} (template "
        f"version {template.version}). {_headcount(audits)}; {_totals(audits)}.",
        "",
    ]
    lines += [f"- {label}: `{path}`" for label, path in outputs]
    if outputs:
        lines.append("")
    lines += [
        "Severities: **error** — a figure of the workbook cannot be trusted, or the file cannot be "
        "used; **warning** — worth a look, the figures are right; **info** — a note. The "
        "portfolio is recomputed from each workbook's inputs, never from its stored values.",
        "",
        "| # | file | site | template | portfolio | errors | warnings | notes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, a in enumerate(audits, 1):
        lines.append(
            f"| {i} | {_md(str(a.path))} | {_md(_site(a))} | {_md(a.version or '')} | "
            f"{'yes' if a.included else 'skipped' if a.skipped else 'left out'} | "
            f"{a.count('error')} | "
            f"{a.count('warning')} | {a.count('info')} |")
    for i, a in enumerate(audits, 1):
        lines += ["", f"## {i}. {a.path}", ""]
        facts = []
        if _site(a):
            facts.append(f"Site {_site(a)!r}")
        if a.version:
            facts.append(f"template version {a.version}")
        facts.append("in the portfolio" if a.included else "skipped" if a.skipped
                     else "**left out of the portfolio**")
        sentence = "; ".join(facts)
        lines += [sentence[:1].upper() + sentence[1:] + ".", ""]
        if not a.findings:
            lines.append("No findings: the workbook matches the template and its stored values "
                         "match the recomputation.")
            continue
        lines += ["| severity | where | finding | expected | found |",
                  "|---|---|---|---|---|"]
        for f in sorted(a.findings, key=lambda f: SEVERITIES.index(f.severity)):
            lines.append(f"| {f.severity} | {_md(f.where)} | {_md(f.message)} | "
                         f"{_code(_md(f.expected))} | {_code(_md(f.found))} |")
    return "\n".join(lines) + "\n"


def _headline(f: Finding) -> str:
    where = f"{f.where}: " if f.where else ""
    extra = f" ({f.found})" if f.found and f.code.startswith("formula") else ""
    return f"{where}{f.message}{extra}"


def report_short(audits: Sequence[WorkbookAudit]) -> str:
    """The short form printed on the standard output: one line per file, then the totals."""
    lines = []
    name_width = min(max((len(str(a.path)) for a in audits), default=4), 48)
    for a in audits:
        worst = next((f for s in ("error", "warning", "info") for f in a.findings
                      if f.severity == s), None)
        counts = ", ".join(_plural(a.count(s), w) for s, w in
                           (("error", "error"), ("warning", "warning"), ("info", "note"))
                           if a.count(s))
        text = f"{a.status:<8} {str(a.path):<{name_width}}"
        if a.refused or a.skipped:
            text += f"  {_headline(worst)}" if worst else ""
        elif worst is None:
            text += f"  {_site(a)}"
        else:
            text += f"  {counts}; first: {_headline(worst)}"
        lines.append(text)
    lines.append(_headcount(audits) + f"; {_totals(audits)}")
    return "\n".join(lines)


# -- writing the outputs --------------------------------------------------------------------------
def write_outputs(audits: Sequence[WorkbookAudit], portfolio: Path, report: Path,
                  summary_csv: Path | None = None) -> None:
    """Write the portfolio (and its CSV) from the included workbooks, and the report.

    Each file is written under a temporary name in its folder and renamed when complete
    (:mod:`tokenfactory_xl.files`), so a reader never sees half a file.
    """
    from . import portfolio as pf
    from .files import write_atomically

    entries = [(a.inputs, a.result) for a in audits if a.included]
    pf.write_portfolio(portfolio, entries)  # type: ignore[arg-type]
    outputs = [("portfolio", portfolio)]
    if summary_csv is not None:
        pf.write_summary_csv(summary_csv, entries)  # type: ignore[arg-type]
        outputs.append(("summary CSV", summary_csv))
    outputs.append(("this report", report))
    write_atomically(report, report_markdown(audits, outputs).encode("utf-8"))


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


def cmd_collect(args: argparse.Namespace) -> int:
    from .cli import UserError

    portfolio = Path(args.output)
    report = Path(args.report) if args.report else default_report_path(portfolio)
    summary_csv = Path(args.summary_csv) if args.summary_csv else None
    if portfolio.suffix.lower() != ".xlsx":
        raise UserError(f"-o {portfolio}: the portfolio is a workbook; give a name ending in "
                        ".xlsx")
    outputs = [p for p in (portfolio, summary_csv, report) if p is not None]
    if len({_same_file_key(p) for p in outputs}) < len(outputs):
        raise UserError("the portfolio, the summary CSV and the report need different file names")
    for path in outputs:
        if path.exists() and not args.force:
            raise UserError(f"{path} exists; use --force to replace it")
        if not path.parent.is_dir():
            raise UserError(f"{path.parent}: no such folder for {path.name}")
    files = find_workbooks(args.paths, exclude=outputs)
    named = {_same_file_key(Path(p)) for p in args.paths}
    if named & {_same_file_key(p) for p in outputs}:
        raise UserError("an output file is also one of the workbooks to collect")
    if not files:
        raise UserError("no workbook found in " + ", ".join(args.paths)
                        + " (folders are searched for .xlsx, .xlsm and .xls files)")
    limits = Limits(max_uncompressed=args.max_uncompressed, max_ratio=args.max_ratio)
    audits = collect(files, limits)
    write_outputs(audits, portfolio, report, summary_csv)
    print(report_short(audits))
    written = f"portfolio: {portfolio}" + (f"; CSV: {summary_csv}" if summary_csv else "")
    print(f"{written}; report: {report}")
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
    p.set_defaults(func=cmd_collect)
