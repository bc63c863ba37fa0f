"""Collect filled-in TFOM workbooks into a portfolio, with an audit report finance can trust.

Site managers fill in the TFOM workbook and send it back. ``tokenfactory-xl collect`` takes
those files (or folders of them), audits each one against the template
(:mod:`tokenfactory_xl.portfolio.audit`), recomputes every site with the Python model from the
inputs typed into it — never from the values the file stores — and writes

- the portfolio, one row per site, in the batch's layout (:mod:`tokenfactory_xl.portfolio.book`);
- optionally the same rows as CSV;
- the audit report (Markdown), and a short form of it on the standard output.

Files are audited one by one, by one worker process per processor core when there are many
(``--jobs``); one that cannot be read (not a workbook, an ``.xls``, password-
protected, damaged, hostile, not a TFOM) gets its line in the report and the others are still
collected. The exit status is 1 when any error-level finding exists, 0 otherwise; the portfolio
is written either way, from the workbooks whose inputs are valid. Input files are only read.

What collect never does: count a site twice (two workbooks for one site name, or two identical
files, stop the run with both paths named unless ``--allow-duplicates``); replace one of the
workbooks it reads (whatever ``--force``); leave part of its outputs after a failure or a signal
(all are written under temporary names and renamed together); put a site's text into the report
as anything but text (Markdown and HTML characters are escaped, control and bidirectional
characters shown as ``\\u202e``).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..core import names
from ..files.disk import Outputs, open_regular
from ..files.safe_xlsx import Limits
from ..sites.load import CONTROL_OR_BIDI, visible
from .audit import Template, audit_workbooks, current_template
from .findings import SEVERITIES, Finding, WorkbookAudit
from .workers import Workers, cores, passes

#: Files a folder is searched for (any file named on the command line is read, whatever its name).
WORKBOOK_SUFFIXES = (".xlsx", ".xlsm", ".xls")



# -- finding the files -------------------------------------------------------------------------
def find_workbooks(paths: Iterable[str | Path], exclude: Iterable[Path] = ()) -> list[Path]:
    """The files to collect: each named file, and the workbooks in each named folder.

    Folders are searched recursively, in name order, for ``.xlsx``, ``.xlsm`` and ``.xls``
    files; hidden files and Excel's lock files (``~$name.xlsx``) are skipped. A name that is
    not a regular file (a FIFO, a device, a dangling link) is kept, so that the audit refuses
    it with its reason rather than skipping it unseen. ``exclude`` holds files to leave out.
    """
    from ..core.errors import UsageError

    skip = {same_file_key(p) for p in exclude}
    found: list[Path] = []
    for item in paths:
        path = Path(item)
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                rel = child.relative_to(path)
                if any(part.startswith((".", "~$")) for part in rel.parts):
                    continue
                if not child.is_dir() and child.suffix.lower() in WORKBOOK_SUFFIXES:
                    found.append(child)
        elif path.exists() or path.is_symlink():
            found.append(path)
        elif item == "-":
            raise UsageError("-: collect reads workbooks from files and folders, not from the "
                             "standard input (it names each by its file); save the workbook as "
                             "a file and collect that, or give ./- for a file named -")
        else:
            raise UsageError(f"{path}: no such file or folder")
    unique = list(dict.fromkeys(found))
    return [p for p in unique if same_file_key(p) not in skip]


#: Files of a folder that are not read, by suffix: how severe, and why.
_NOT_READ: dict[str, tuple[str, str]] = {
    ".ods": ("error", "an OpenDocument spreadsheet (LibreOffice, Google Sheets), not an Excel "
                      "workbook, so its site is not in the portfolio; open it and save it as "
                      "Excel 2007-365 (.xlsx)"),
    ".xlsb": ("error", "an Excel binary workbook, whose cells cannot be audited, so its site "
                       "is not in the portfolio; in Excel: File > Save As > Excel Workbook "
                       "(.xlsx)"),
    ".numbers": ("error", "an Apple Numbers document, so its site is not in the portfolio; in "
                          "Numbers: File > Export To > Excel (.xlsx)"),
    ".xltx": ("error", "an Excel template, not a filled-in workbook, so it is not in the "
                       "portfolio; save the filled-in workbook as .xlsx"),
}


def passed_over(paths: Iterable[str | Path], exclude: Iterable[Path] = ()
                ) -> list[WorkbookAudit]:
    """Every file of the named folders that :func:`find_workbooks` does not read, each with why
    (as a skipped audit): a spreadsheet in another format (.ods, .xlsb, .numbers) is an error,
    since a site is missing from the portfolio; Excel's lock file of an open workbook
    (``~$…``) a warning, since someone may be changing that workbook now; any other file a
    note. A Numbers document is a folder on a Mac: it is named, not searched. ``exclude``: the
    run's own outputs (a report written into the folder collected is no file passed over)."""
    skip = {same_file_key(p) for p in exclude}
    skipped: list[WorkbookAudit] = []
    for item in paths:
        folder = Path(item)
        if not folder.is_dir():
            continue
        for child in sorted(folder.rglob("*")):
            rel = child.relative_to(folder)
            if any(p.suffix.lower() == ".numbers" for p in rel.parents if str(p) != "."):
                continue  # inside a Numbers document: the document is named once
            if (child.is_dir() and child.suffix.lower() != ".numbers") \
                    or same_file_key(child) in skip:
                continue
            suffix = child.suffix.lower()
            if child.name.startswith("~$"):
                severity, why = ("warning", "an Excel lock file: a workbook of this folder is "
                                 "open in Excel, and changes not yet saved in it are not in "
                                 "the portfolio; collect again once it is closed")
            elif any(part.startswith(".") for part in rel.parts):
                severity, why = "info", "a hidden file, not read"
            elif suffix in WORKBOOK_SUFFIXES:
                continue
            elif suffix in _NOT_READ:
                severity, why = _NOT_READ[suffix]
            else:
                severity, why = "info", f"not a workbook ({suffix or 'no suffix'}), not read"
            audit = WorkbookAudit(child, skipped=True)
            audit.add(severity, "not_read", "", why)  # type: ignore[arg-type]
            skipped.append(audit)
    return skipped


def same_file_key(path: Path) -> str:
    return os.path.normcase(os.path.abspath(path))


# -- auditing ------------------------------------------------------------------------------------
#: How many files one more worker process must have to audit before it pays for its start.
FILES_PER_WORKER = 8


#: How many files a worker audits at a time: their sites are recomputed in one pass of the model
#: (:func:`~tokenfactory_xl.tfom.evaluation.run_many`), and their cells are held until then.
FILES_PER_PASS = 16


def collect(paths: Sequence[str | Path], limits: Limits | None = None,
            jobs: int = 1) -> list[WorkbookAudit]:
    """Audit every file of ``paths`` (files, not folders); the audits are in the order given.

    The template is built once for the whole run. Files are audited a few at a time
    (:data:`FILES_PER_PASS`), their sites recomputed together. A file whose audit fails
    unexpectedly is reported as such and the run goes on. With ``jobs`` > 1 the files are
    shared among that many worker processes (at most one per file); the audits are the same.
    """
    template = current_template()  # built before the workers start: forked ones inherit it
    paths = list(paths)
    jobs = min(jobs, len(paths))
    parts = passes(len(paths), jobs, FILES_PER_PASS)
    if jobs > 1:
        audits: list[WorkbookAudit] = [WorkbookAudit(Path(p)) for p in paths]
        with Workers(_audit_task, jobs) as pool:
            for first, done in pool.imap_unordered(
                    (part.start, [paths[i] for i in part], limits) for part in parts):
                audits[first:first + len(done)] = done
    else:
        audits = [audit for part in parts
                  for audit in _audit_some([paths[i] for i in part], template, limits)]
    for dup in duplicates(audits):
        dup.second.add("warning", "duplicate_site", "in_site_name",
                       f"{dup.reason} as {dup.first.path}: the portfolio has both rows")
    _flag_switched_scenarios(audits)
    return audits


def _flag_switched_scenarios(audits: Sequence[WorkbookAudit]) -> None:
    """Warn on each workbook whose live scenario is not the one most of the others have (the
    batch wrote them all with one; someone switched the Scenario cell before sending it back):
    the portfolio's live-scenario totals are then left blank, its per-scenario NPVs still add
    up (:func:`tokenfactory_xl.portfolio.contents.totals`)."""
    from .contents import live_scenarios

    included = [a for a in audits if a.included]
    scenarios = live_scenarios([(a.inputs, a.result) for a in included])  # type: ignore[misc]
    if len(scenarios) < 2:
        return
    usual, count = next(iter(scenarios.items()))
    for audit in included:
        live = str(audit.inputs["scenario"])  # type: ignore[index]
        if live != usual:
            audit.add("warning", "live_scenario", "in_scenario",
                      f"the live scenario is {live}, while {count:,} of the {len(included):,} "
                      f"workbooks' is {usual}: it was switched after the workbooks were made, so "
                      "its NPV, revenue and EBITDA columns are of another scenario than the "
                      "others'. The portfolio leaves the live-scenario totals blank; its NPV of "
                      "each scenario compares like with like. Set the Scenario cell back to "
                      f"{usual} (or collect it as it is, knowing this)")


def auto_jobs(files: int) -> int:
    """The worker processes for ``files`` workbooks: one per processor core, as long as each
    has :data:`FILES_PER_WORKER` files to audit; a few files are audited in this process."""
    return max(1, min(cores(), files // FILES_PER_WORKER))


def _audit_task(task: tuple[int, list[str | Path], Limits | None]
                ) -> tuple[int, list[WorkbookAudit]]:
    """A worker's part: the audits of a few consecutive files, with the place of the first."""
    first, paths, limits = task
    return first, _audit_some(paths, current_template(), limits)


def _audit_some(paths: list[str | Path], template: Template,
                limits: Limits | None) -> list[WorkbookAudit]:
    """The audits of ``paths``, in order: one file's failure is its own finding."""
    audits: list[WorkbookAudit | None] = [None] * len(paths)
    readable = []
    for i, path in enumerate(paths):
        if CONTROL_OR_BIDI.search(str(path)):
            audit = audits[i] = WorkbookAudit(Path(path), refused=True)
            audit.add("error", "file_name", "", f"the path {names.problem(str(path))}"
                      "; rename the file")
        else:
            readable.append(i)
    try:
        done: list = audit_workbooks([paths[i] for i in readable], template, limits)
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the others
        done = [exc] * len(readable)
    for i, audit in zip(readable, done, strict=True):
        if isinstance(audit, Exception):
            audit = _internal(paths[i], audit)
        audits[i] = audit
    return audits  # type: ignore[return-value]


def _internal(path: str | Path, exc: Exception) -> WorkbookAudit:
    audit = WorkbookAudit(Path(path), refused=True)
    audit.add("error", "internal", "",
              f"could not be audited ({type(exc).__name__}: {exc}); please report this")
    return audit


@dataclass(frozen=True)
class Duplicate:
    """Two workbooks that would put one site into the portfolio twice."""

    first: WorkbookAudit
    second: WorkbookAudit
    reason: str  # "the same content", "the same site name 'Frankfurt'", "a site name looking…"


def _content_hash(path: Path) -> str | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _hash_of(str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=1 << 16)  # collect and its command both look for duplicates
def _hash_of(path: str, *version: int) -> str | None:
    """The SHA-256 of the file ``path`` as it is at ``version`` (device, inode, size, time)."""
    try:
        digest = hashlib.sha256()
        with open_regular(path) as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        return digest.hexdigest()
    except OSError:
        return None


def duplicates(audits: Sequence[WorkbookAudit]) -> list[Duplicate]:
    """Pairs of workbooks in the portfolio with the same content, or the same site name.

    Names are compared by :func:`tokenfactory_xl.core.names.key` (composed, without regard to case,
    surrounding spaces and hidden characters), then by how they look
    (:func:`tokenfactory_xl.core.names.look`: a Cyrillic ``а`` is an ``a``); each later workbook is
    paired with the first one it repeats.
    """
    by_hash: dict[str, WorkbookAudit] = {}
    by_name: dict[str, WorkbookAudit] = {}
    by_look: dict[str, WorkbookAudit] = {}
    found: list[Duplicate] = []
    for audit in audits:
        if not audit.included:
            continue
        digest = _content_hash(audit.path)
        name = _site(audit)
        key, look = names.key(name), names.look(name)
        if digest is not None and digest in by_hash:
            found.append(Duplicate(by_hash[digest], audit, "the same content"))
        elif key in by_name:
            found.append(Duplicate(by_name[key], audit, f"the same site name {name!r}"))
        elif look in by_look:
            first = by_look[look]
            here, there = names.look_alikes(name), names.look_alikes(_site(first))
            found.append(Duplicate(first, audit, "a site name looking the same (" + (
                f"{name!r} holds {here}" if here else f"{_site(first)!r} holds {there}") + ")"))
        if digest is not None:
            by_hash.setdefault(digest, audit)
        by_name.setdefault(key, audit)
        by_look.setdefault(look, audit)
    return found


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


# Characters that Markdown (CommonMark, GitHub's tables) or HTML would take for markup.
_MARKUP = re.compile(r"([\\`*_{}\[\]()<>!|&~#])")


def _md(text: str) -> str:
    """A site's text as plain text in Markdown (and the HTML made of it): every character of
    markup escaped, so no link, image, HTML tag or table cell can come out of it."""
    text = _MARKUP.sub(r"\\\1", visible(text))
    # GitHub links bare addresses: break "://" and "www." so that none becomes a link
    return text.replace("://", ":\\/\\/").replace("www.", "www\\.")


def _code(text: str) -> str:
    """Text in a code span (no markup is read inside one; ``|`` still ends a table cell)."""
    if not text:
        return ""
    text = visible(text)
    if "`" in text:
        return _md(text)
    return "`" + text.replace("|", "\\|") + "`"


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
    lines += [f"- {label}: {_code(str(path))}" for label, path in outputs]
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
        lines += ["", f"## {i}. {_md(str(a.path))}", ""]
        facts = []
        if _site(a):
            facts.append(f"Site {_md(repr(_site(a)))}")
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
                         f"{_code(f.expected)} | {_code(f.found)} |")
    return "\n".join(lines) + "\n"


def _headline(f: Finding) -> str:
    where = f"{f.where}: " if f.where else ""
    extra = f" ({f.found})" if f.found and f.code.startswith("formula") else ""
    return visible(f"{where}{f.message}{extra}")


def report_short(audits: Sequence[WorkbookAudit]) -> str:
    """The short form printed on the standard output: one line per file, then the totals."""
    lines = []
    name_width = min(max((len(visible(str(a.path))) for a in audits), default=4), 48)
    for a in audits:
        worst = next((f for s in ("error", "warning", "info") for f in a.findings
                      if f.severity == s), None)
        counts = ", ".join(_plural(a.count(s), w) for s, w in
                           (("error", "error"), ("warning", "warning"), ("info", "note"))
                           if a.count(s))
        text = f"{a.status:<8} {visible(str(a.path)):<{name_width}}"
        if a.refused or a.skipped:
            text += f"  {_headline(worst)}" if worst else ""
        elif worst is None:
            text += f"  {visible(_site(a))}"
        else:
            text += f"  {counts}; first: {_headline(worst)}"
        lines.append(text)
    lines.append(_headcount(audits) + f"; {_totals(audits)}")
    return "\n".join(lines)


# -- writing the outputs --------------------------------------------------------------------------
def write_outputs(audits: Sequence[WorkbookAudit], portfolio: Path, report: Path,
                  summary_csv: Path | None = None) -> None:
    """Write the portfolio (and its CSV) from the included workbooks, and the report.

    Every file is written under a temporary name in its folder and all are renamed when the
    last is complete (:class:`tokenfactory_xl.files.disk.Outputs`): a failure or a signal leaves
    none of them, and a reader never sees half a file.
    """
    from . import book as pf

    entries = _with_actuals([(a.path, a.inputs, a.result) for a in audits if a.included])
    listed = [("portfolio", portfolio)]
    with Outputs() as out:
        out.add(portfolio,  # written as it is made, never held whole
                lambda handle: pf.write_portfolio_to(handle, entries))  # type: ignore[arg-type]
        if summary_csv is not None:
            out.add(summary_csv,  # written row by row
                    lambda handle: pf.write_summary_csv_to(handle, entries))  # type: ignore[arg-type]
            listed.append(("summary CSV", summary_csv))
        listed.append(("this report", report))
        out.add(report, report_markdown(audits, listed).encode("utf-8"))
        out.commit()


def _with_actuals(sites: Sequence[tuple[Path, object, object]]) -> list[tuple[object, object]]:
    """The portfolio's entries; when any workbook's Actuals sheet holds rows (``track``), every
    site's latest actual TEF, its variance and month as well (blank for a site without)."""
    from ..workbook.actuals_sheet import latest_actual
    from .contents import ACTUAL_COLUMNS, site_summary, summary_result

    latest = [latest_actual(path) for path, _, _ in sites]
    if not any(latest):
        return [(inputs, result) for _, inputs, result in sites]
    out = []
    for (_, inputs, result), row in zip(sites, latest, strict=True):
        summary = site_summary(result)  # type: ignore[arg-type]
        for column, field_name in zip(ACTUAL_COLUMNS, ("tef_actual", "variance",
                                                       "model_month"), strict=True):
            value = None if row is None else row.get(field_name)
            summary[column.name] = float(value) if isinstance(value, (int, float)) else None
        out.append((inputs, summary_result(inputs, summary)))  # type: ignore[arg-type]
    return out
