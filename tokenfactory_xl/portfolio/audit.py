"""The audit of one filled-in TFOM workbook: what changed against the template, and how badly.

Before finance trusts a number from a site's workbook it wants to know whether someone typed
over a formula, edited one, used an old template, typed 95 where 95 % was meant, or edited the
file outside Excel so that the figures it shows are not the ones its formulas give. This module
compares a workbook read by :mod:`tokenfactory_xl.files.safe_xlsx` with the template that
:func:`tokenfactory_xl.workbook.build.build_workbook` makes, reads its inputs back
(:mod:`tokenfactory_xl.portfolio.workbook_inputs`: by their ``in_`` defined names, checked with
the input catalogue), recomputes the site with the Python model and compares the recomputation
with the values the file stores.

Each finding (:class:`~tokenfactory_xl.portfolio.findings.Finding`) has a severity:

- ``error``: a figure of the workbook cannot be trusted, or the file cannot be used at all
  (unreadable, not a TFOM, a bad input, an input cell holding a formula, a name with control
  or bidirectional-override characters, a formula edited, replaced or deleted, a sheet
  deleted, a defined name missing, stored values that disagree with the recomputation);
- ``warning``: worth a look, the figures are still right (an old template, a sheet added, a
  formula added beside the model, an input cell left empty, a defined name that points
  somewhere else, two workbooks for the same site kept with ``--allow-duplicates``);
- ``info``: a note (no stored values: the file was saved by a program that does not calculate).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import operator
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import compress, repeat
from pathlib import Path

import numpy as np

from .. import __version__
from ..files.safe_xlsx import Limits, RefusedFile, XlsxContent, canonical_reference, open_xlsx
from ..files.safe_xlsx import parse_reference as _parse_reference
from ..tfom.evaluation import Result, run_each
from .book import PORTFOLIO_SHEET
from .contents import row_result
from .findings import Finding, WorkbookAudit, show_formula, show_value
from .workbook_inputs import check_inputs, read_inputs

VERSION_NAME = "tfom_version"

#: Stored values within this relative (or absolute) distance of the recomputation agree; Excel
#: and LibreOffice add the same months in another order and iterate IRR to about 1e-7.
VALUE_REL_TOL = 1e-6
VALUE_ABS_TOL = 1e-6

#: Stale stored values listed one by one before the rest are counted in a single finding.
MAX_VALUE_FINDINGS = 20


# -- the template ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Template:
    """What an untouched TFOM workbook of this version holds, for comparing.

    ``formulas`` maps sheet title → cell → formula (without ``=``); ``names`` maps each defined
    name to its reference, written as :func:`~tokenfactory_xl.files.safe_xlsx.canonical_reference`.
    """

    version: str
    sheets: tuple[str, ...]
    names: dict[str, str]
    formulas: dict[str, dict[str, str]]

    @classmethod
    def from_workbook(cls, wb) -> Template:  # type: ignore[no-untyped-def]
        """Read the template from an openpyxl workbook (:func:`workbook.build_workbook`)."""
        names = {name: canonical_reference(d.attr_text) for name, d in wb.defined_names.items()}
        formulas: dict[str, dict[str, str]] = {}
        for ws in wb.worksheets:
            sheet: dict[str, str] = {}
            # the cells the sheet has: ``iter_rows`` would add every empty one of its range to
            # a workbook that is shared (:func:`workbook.default_workbook`)
            for _, cell in sorted(ws._cells.items()):
                text = _formula_of(cell.value)
                if text is not None:
                    sheet[cell.coordinate] = text
            formulas[ws.title] = sheet
        version = __version__
        ref = _parse_reference(wb.defined_names[VERSION_NAME].attr_text) \
            if VERSION_NAME in wb.defined_names else None
        if ref is not None and ref[0] in wb.sheetnames:
            version = str(wb[ref[0]][ref[1][0]].value)
        return cls(version, tuple(wb.sheetnames), names, formulas)

    def name_at(self, sheet: str, coord: str) -> str:
        """The defined name of a one-cell reference to ``sheet!coord`` (``out_npv``), or ``""``."""
        if not hasattr(self, "_by_cell"):
            by_cell = {}
            for name, ref in self.names.items():
                parsed = _parse_reference(ref)
                if parsed is not None and len(parsed[1]) == 1:
                    by_cell.setdefault((parsed[0], parsed[1][0]), name)
            object.__setattr__(self, "_by_cell", by_cell)
        return self._by_cell.get((sheet, coord), "")  # type: ignore[attr-defined]

    def about(self, sheet: str, coord: str) -> str:
        """`` (out_npv)`` when the cell has a defined name, to say what a finding concerns."""
        name = self.name_at(sheet, coord)
        return f" ({name})" if name else ""


def _formula_of(value: object) -> str | None:
    if isinstance(value, str):
        return value[1:] if value.startswith("=") else None
    text = getattr(value, "text", None)  # openpyxl's ArrayFormula
    if isinstance(text, str):
        return text[1:] if text.startswith("=") else text
    return None


@lru_cache(maxsize=1)
def current_template() -> Template:
    """The template of this version, built by the workbook builder once (kept between runs of
    this same code: :mod:`tokenfactory_xl.files.build_cache`)."""
    from ..files.build_cache import kept
    from ..workbook.build import default_workbook

    # The Risk sheet's figures are values, not formulas: the template is the same without them.
    return kept("audit-template", lambda: Template.from_workbook(default_workbook()))


# -- comparing formulas -------------------------------------------------------------------------
_STRING_OR_SPACE = re.compile(r'("(?:[^"]|"")*")|\s+')
_NEEDLESS_QUOTES = re.compile(r"'([A-Za-z_][A-Za-z0-9_.]*)'!")
# LibreOffice writes the constants TRUE and FALSE as the functions TRUE() and FALSE().
_LOGICAL_CALL = re.compile(r"(?<![A-Z0-9_.])(TRUE|FALSE)\(\)")


def normalise_formula(text: str) -> str:
    """A formula as Excel means it: no ``=``, no spaces, upper case outside string literals.

    Excel and LibreOffice rewrite a formula they save in small ways (case of function names,
    needless quotes around a sheet name, the ``_xlfn.`` prefix of newer functions, ``TRUE()``
    for ``TRUE``, a function's Excel 2010 name for its older one: ``NORM.S.INV`` for
    ``NORMSINV``); none of those is an edit.
    """
    text = text.strip()
    if text.startswith("="):
        text = text[1:]
    parts = []
    last = 0
    for match in _STRING_OR_SPACE.finditer(text):
        parts.append(_formula_words(text[last:match.start()]))
        if match.group(1):
            parts.append(match.group(1))
        last = match.end()
    parts.append(_formula_words(text[last:]))
    out = "".join(parts)
    return _NEEDLESS_QUOTES.sub(r"\1!", out)


# Excel 2010's names of functions that take the same arguments as their older names, which
# a program may write for the older one (Gnumeric saves NORMSINV as _xlfn.NORM.S.INV).
_SAME_FUNCTION = {"NORM.S.INV": "NORMSINV", "NORM.INV": "NORMINV", "NORM.DIST": "NORMDIST",
                  "LOGNORM.INV": "LOGINV", "STDEV.S": "STDEV", "STDEV.P": "STDEVP",
                  "VAR.S": "VAR", "VAR.P": "VARP", "PERCENTILE.INC": "PERCENTILE",
                  "QUARTILE.INC": "QUARTILE", "MODE.SNGL": "MODE", "RANK.EQ": "RANK"}
_NEWER_NAME = re.compile(r"(?<![A-Z0-9_.])(" + "|".join(
    re.escape(n) for n in sorted(_SAME_FUNCTION, key=len, reverse=True)) + r")\(")


def _formula_words(text: str) -> str:
    """A stretch of formula outside string literals, as compared."""
    text = text.upper().replace("_XLFN.", "").replace("_XLWS.", "")
    if "." in text:
        text = _NEWER_NAME.sub(lambda m: _SAME_FUNCTION[m.group(1)] + "(", text)
    return _LOGICAL_CALL.sub(r"\1", text) if "()" in text else text



# -- the parts of the audit ----------------------------------------------------------------------
def _version_tuple(text: str) -> tuple[int, ...] | None:
    match = re.fullmatch(r"\s*v?(\d+(?:\.\d+)*)\s*", text)
    return tuple(int(x) for x in match.group(1).split(".")) if match else None


def _check_version(content: XlsxContent, template: Template, audit: WorkbookAudit) -> None:
    text = content.defined_names.get(VERSION_NAME)
    ref = _parse_reference(text) if text else None
    if ref is None:
        audit.add("warning", "version_unknown", VERSION_NAME,
                  f"the template version cannot be read (no defined name {VERSION_NAME}); "
                  f"formulas are compared with template {template.version}")
        return
    sheet, coords = ref
    value = content.cells(sheet).values.get(coords[0])
    shown = show_value(value) if not isinstance(value, str) else value
    audit.version = shown
    mine, theirs = _version_tuple(template.version), _version_tuple(str(shown))
    if str(shown) == template.version:
        return
    where = f"{sheet}!{coords[0]}"
    if theirs is None or mine is None:
        audit.add("warning", "version_unknown", where,
                  f"unknown template version {shown}; formulas are compared with template "
                  f"{template.version}", expected=template.version, found=shown)
    elif theirs < mine:
        audit.add("warning", "version_old", where,
                  f"made from the old template {shown} (current: {template.version}); formulas "
                  "are compared with the current template: send the site a new workbook",
                  expected=template.version, found=shown)
    elif theirs > mine:
        audit.add("warning", "version_newer", where,
                  f"made from template {shown}, newer than this tokenfactory_xl "
                  f"({template.version}): upgrade tokenfactory_xl",
                  expected=template.version, found=shown)


def _check_sheets(content: XlsxContent, template: Template, audit: WorkbookAudit) -> None:
    found = [s.title for s in content.sheets]
    for title in template.sheets:
        if title not in found:
            audit.add("error", "sheet_deleted", title,
                      f"the sheet {title} of the template is missing (deleted or renamed)")
    for title in found:
        if title not in template.sheets:
            audit.add("warning", "sheet_added", title,
                      f"the sheet {title} is not in the template (added)")


def _check_names(content: XlsxContent, template: Template, audit: WorkbookAudit) -> None:
    for name, expected in template.names.items():
        text = content.defined_names.get(name)
        if text is None:
            audit.add("error", "name_missing", name,
                      f"the defined name {name} is missing"
                      + (", so the input cannot be read" if name.startswith("in_") else ""),
                      expected=expected)
        elif _parse_reference(text) is None:
            if not name.startswith("in_"):  # a broken in_ name is reported with the inputs
                audit.add("error", "name_broken", name,
                          f"the defined name {name} refers to {text}, not to a cell",
                          expected=expected, found=text)
        elif canonical_reference(text) != expected:
            audit.add("warning", "name_moved", name,
                      f"the defined name {name} points to {canonical_reference(text)}, not to "
                      f"{expected} as in the template"
                      + (" (the input is read from there)" if name.startswith("in_") else ""),
                      expected=expected, found=canonical_reference(text))


def _check_formulas(content: XlsxContent, template: Template, audit: WorkbookAudit,
                    input_cells: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """Formula findings; returns the cells whose formula is not the template's."""
    changed: set[tuple[str, str]] = set()
    titles = {s.title for s in content.sheets}
    for title, expected_cells in template.formulas.items():
        if title not in titles:
            continue
        sheet = content.cells(title)
        if sheet.formulas == expected_cells:
            continue  # the untouched case, compared in one step
        for coord, expected in expected_cells.items():
            where = f"{title}!{coord}"
            found = sheet.formulas.get(coord)
            if found == expected:
                continue
            about = template.about(title, coord)
            if found is None and coord not in sheet.values:
                audit.add("error", "formula_deleted", where,
                          f"formula deleted: the cell is empty{about}", show_formula(expected),
                          "(empty)")
            elif found is None:
                value = sheet.values[coord]
                kind = "number" if isinstance(value, float) else "text" \
                    if isinstance(value, str) else "value"
                audit.add("error", "formula_replaced", where,
                          f"formula replaced by a typed {kind}{about}", show_formula(expected),
                          show_value(value))
            elif normalise_formula(found) != normalise_formula(expected):
                audit.add("error", "formula_edited", where, f"formula edited{about}",
                          show_formula(expected), show_formula(found))
            else:
                continue
            changed.add((title, coord))
        for coord, found in sheet.formulas.items():
            if coord not in expected_cells and (title, coord) not in input_cells:
                audit.add("warning", "formula_added", f"{title}!{coord}",
                          "formula added where the template has none", "",
                          show_formula(found))
                changed.add((title, coord))
    return changed


_ABSENT = object()


def _no_result(value: object) -> bool:
    """Whether a value says "no result": an error value, or the workbook's ``none``."""
    return isinstance(value, str) and (value.startswith("#") or value == "none")


_EXCEL_DAY0 = dt.datetime(1899, 12, 30)  # day 0 of Excel's 1900 date system, after 1900-02-28


def _same_value(expected: object, stored: object, date1904: bool = False) -> bool:
    """Whether a stored value shows the recomputed one (dates as Excel serial numbers)."""
    if isinstance(expected, dt.date):
        moment = expected if isinstance(expected, dt.datetime) else \
            dt.datetime.combine(expected, dt.time(0))
        expected = (moment - _EXCEL_DAY0) / dt.timedelta(days=1) - (1462 if date1904 else 0)
    if expected is None or expected == "":
        return stored is None or stored == ""
    if isinstance(expected, bool) or isinstance(stored, bool):
        return bool(expected) == stored if isinstance(stored, bool) else False
    if isinstance(expected, (int, float)):
        if isinstance(expected, float) and not math.isfinite(expected):
            return _no_result(stored)
        if not isinstance(stored, float):
            return False
        return math.isclose(float(expected), stored, rel_tol=VALUE_REL_TOL,
                            abs_tol=VALUE_ABS_TOL)
    if _no_result(expected):
        # No result either way: the model's "none", Excel's #NUM!, LibreOffice's #N/A.
        return _no_result(stored)
    return str(expected) == str(stored)


def _close_numbers(want: list[object], stored: list[object], noise: float) -> list[bool]:
    """Whether each stored value is a number that shows the recomputed finite number (as
    :func:`_same_value` or, with ``noise``, the IRR sheet's rule says), for many cells in bulk;
    ``False`` leaves the cell to the cell-by-cell comparison."""
    numbers = list(map(operator.and_, map(operator.is_, map(type, want), repeat(float)),
                       map(operator.is_, map(type, stored), repeat(float))))
    a = np.fromiter(compress(want, numbers), dtype=float)
    b = np.fromiter(compress(stored, numbers), dtype=float)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - b)
        # math.isclose: |a - b| <= max(rel_tol·|a|, rel_tol·|b|, abs_tol)
        close = np.isfinite(a) & np.isfinite(b) & (
            (diff <= np.maximum(VALUE_REL_TOL * np.maximum(np.abs(a), np.abs(b)), VALUE_ABS_TOL))
            | (diff <= noise))
    out = np.zeros(len(want), dtype=bool)
    out[np.fromiter(numbers, dtype=bool, count=len(numbers))] = close
    return out.tolist()


def _check_values(content: XlsxContent, template: Template, audit: WorkbookAudit,
                  expected: Mapping[str, Mapping[str, object]],
                  changed: set[tuple[str, str]]) -> None:
    from ..workbook.build import plan
    from ..workbook.plan import IRR_SHEET, RISK_SHEET
    from ..workbook.values import irr_sheet_noise

    risk_check = plan().risk_check

    titles = {s.title for s in content.sheets}
    compared = absent = 0
    stale: list[tuple[str, object, object, str]] = []
    noise = irr_sheet_noise(expected)  # type: ignore[arg-type]
    for title, formulas in template.formulas.items():
        if title not in titles or title == RISK_SHEET:
            continue  # the Risk sheet's formulas read its copy of the inputs, not the inputs
        sheet = content.cells(title)
        stored_values, found = sheet.values, sheet.formulas
        values = expected.get(title, {})
        # The formula cells whose stored value is not exactly the recomputed one: nearly every
        # cell of a workbook that was calculated is not among them.
        odd = list(compress(formulas, map(operator.ne, map(stored_values.get, formulas,
                                                           repeat(_ABSENT)),
                                          map(values.get, formulas))))
        if len(odd) > 64:  # recalculated by Excel: most cells differ in their last digits
            odd = list(compress(odd, map(operator.not_, _close_numbers(
                list(map(values.get, odd)), list(map(stored_values.get, odd)),
                noise if title == IRR_SHEET else 0.0))))
        present = len(found.keys() & formulas.keys())
        for coord in odd:
            if coord not in found or coord not in values:
                continue  # a formula deleted or replaced is reported as such
            if coord not in stored_values:
                absent += 1
                continue
            want, stored = values[coord], stored_values[coord]
            if (title, coord) == risk_check:
                continue  # reads the Risk sheet's copy of the inputs
            if (title == IRR_SHEET and isinstance(want, float) and isinstance(stored, float)
                    and abs(want - stored) <= noise):
                continue  # rounding noise of an NPV near its IRR (irr_sheet_noise)
            if (title, coord) not in changed and not _same_value(want, stored,
                                                                 content.date1904):
                stale.append((f"{title}!{coord}", want, stored, template.about(title, coord)))
        compared += present
    compared -= absent
    if compared == 0 and absent:
        audit.add("info", "values_absent", "",
                  "the file stores no calculated values (saved by a program that does not "
                  "calculate, such as openpyxl): nothing to compare; the portfolio uses the "
                  "recomputation")
        return
    if absent:
        audit.add("info", "values_absent", "",
                  f"{absent:,} formula cells store no value; the others were compared")
    if not stale:
        return
    if changed:
        audit.add("warning", "values_differ", stale[0][0],
                  f"{len(stale):,} stored values differ from the recomputation, as the formula "
                  "changes above explain; the portfolio uses the recomputation")
        return
    for where, want, got, about in stale[:MAX_VALUE_FINDINGS]:
        audit.add("error", "values_stale", where,
                  f"the stored value{about} disagrees with the recomputation from the file's "
                  "inputs: the file was edited outside Excel, or not recalculated",
                  show_value(want), show_value(got))
    if len(stale) > MAX_VALUE_FINDINGS:
        audit.add("error", "values_stale", "",
                  f"and {len(stale) - MAX_VALUE_FINDINGS:,} more stored values disagree with "
                  "the recomputation")


# -- one workbook, or many ------------------------------------------------------------------------
def audit_workbook(path: str | Path, template: Template | None = None,
                   limits: Limits | None = None) -> WorkbookAudit:
    """Audit one file and, when its inputs are valid, recompute it with the Python model.

    Parameters
    ----------
    path : the workbook; it is only read.
    template : what it is compared with (default: :func:`current_template`).
    limits : the size limits for untrusted zips.

    Returns
    -------
    WorkbookAudit
        the findings; ``inputs`` and ``result`` are set when the workbook goes into the portfolio.
    """
    audit = audit_workbooks([path], template, limits)[0]
    if isinstance(audit, Exception):
        raise audit
    return audit


def audit_workbooks(paths: Sequence[str | Path], template: Template | None = None,
                    limits: Limits | None = None) -> list[WorkbookAudit]:
    """:func:`audit_workbook` of each file, in order, with the same findings; the sites whose
    inputs are valid are recomputed together
    (:func:`~tokenfactory_xl.tfom.evaluation.run_many`), which takes a fraction of the time one
    model run per site does.

    A file whose audit fails unexpectedly raises only for itself: it is returned as an
    ``Exception`` in its place, and the others are audited.
    """
    template = template or current_template()
    audits: list[WorkbookAudit | Exception] = []
    with contextlib.ExitStack() as files:
        pending: list[tuple[WorkbookAudit, XlsxContent, set[tuple[str, str]]]] = []
        places: list[int] = []
        for path in paths:
            try:
                audit, content, changed = _audit_formulas(path, template, limits, files)
            except Exception as exc:  # noqa: BLE001 - reported in its place by the caller
                audits.append(exc)
                continue
            audits.append(audit)
            if content is not None and audit.inputs is not None:
                pending.append((audit, content, changed))
                places.append(len(audits) - 1)
        results = run_each([audit.inputs for audit, _, _ in pending])
        for place, (audit, content, changed), result in zip(places, pending, results,
                                                              strict=True):
            try:
                if isinstance(result, Exception):
                    raise result
                _audit_values(audit, content, template, changed, result)
            except Exception as exc:  # noqa: BLE001
                audits[place] = exc
    return audits  # type: ignore[return-value]


def _audit_formulas(path: str | Path, template: Template, limits: Limits | None,
                    files: contextlib.ExitStack
                    ) -> tuple[WorkbookAudit, XlsxContent | None, set[tuple[str, str]]]:
    """Everything of a file's audit but its stored values: the file stays open (in ``files``)
    for those when its inputs are valid."""
    audit = WorkbookAudit(Path(path))
    try:
        content = files.enter_context(open_xlsx(path, limits))
        if not any(name.startswith("in_") for name in content.defined_names):
            if [sh.title for sh in content.sheets][:1] == [PORTFOLIO_SHEET]:
                # The batch writes its portfolio beside the site workbooks it collects.
                audit.skipped = True
                audit.add("info", "portfolio", "",
                          "a portfolio from batch or collect, not a site workbook")
                return audit, None, set()
            audit.refused = True
            audit.add("error", "not_tfom", "",
                      "not a TFOM workbook: it has no in_ defined names (the names of the "
                      "input cells); was the right file sent?")
            return audit, None, set()
        _check_version(content, template, audit)
        _check_sheets(content, template, audit)
        _check_names(content, template, audit)
        values, where, input_cells = read_inputs(content, audit)
        if values:
            check_inputs(values, where, audit)
        return audit, content, _check_formulas(content, template, audit, input_cells)
    except RefusedFile as exc:
        _refused(audit, exc)
        return audit, None, set()


def _audit_values(audit: WorkbookAudit, content: XlsxContent, template: Template,
                  changed: set[tuple[str, str]], result: Result) -> None:
    """The stored values of a file against ``result``, the model's run of its inputs."""
    from ..workbook.build import plan
    from ..workbook.values import cell_values

    try:
        audit.result = result
        _check_values(content, template, audit, cell_values(plan(), audit.inputs, result),
                      changed)
        if audit.result is not None:  # kept for the portfolio: its row, not the months
            audit.result = row_result(result)
    except RefusedFile as exc:
        _refused(audit, exc)


def _refused(audit: WorkbookAudit, exc: RefusedFile) -> None:
    audit.refused = True
    audit.result = audit.inputs = None
    audit.findings = [Finding("error", "refused", "", str(exc))]


__all__ = [
    "Finding", "Template", "WorkbookAudit", "audit_workbook", "audit_workbooks",
    "current_template",
    "normalise_formula",
]

