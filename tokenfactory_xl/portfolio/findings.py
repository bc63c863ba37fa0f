"""What the audit of a filled-in TFOM workbook finds: each finding, one workbook's findings and
recomputation, and how a finding prints a value or a formula.

:mod:`tokenfactory_xl.portfolio.audit` makes the findings (the template's formulas, names and
values against the file's) with :mod:`tokenfactory_xl.portfolio.workbook_inputs` (the inputs
read back); :mod:`tokenfactory_xl.portfolio.collect` reports them.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..core.catalogue import fmt_number
from ..tfom.evaluation import Result
from ..tfom.inputs import SiteInputs

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
    """One thing found in a workbook.

    Attributes
    ----------
    severity : ``error``, ``warning`` or ``info``.
    code : a short stable key (``formula_edited``, ``input``, ``sheet_added`` …).
    where : the cell (``Timeline!D14``), the sheet or the defined name; ``""`` for the file.
    message : what is wrong, in plain words, with the fix where there is one.
    expected, found : the template's formula or the recomputed value, and what the file has.
    """

    severity: Severity
    code: str
    where: str
    message: str
    expected: str = ""
    found: str = ""


@dataclass
class WorkbookAudit:
    """The audit of one file: its findings and, when its inputs are valid, the recomputation."""

    path: Path
    findings: list[Finding] = field(default_factory=list)
    version: str | None = None
    inputs: SiteInputs | None = None
    result: Result | None = None
    refused: bool = False
    skipped: bool = False
    site_name: str = ""

    @property
    def included(self) -> bool:
        """Whether the workbook goes into the portfolio (read, and its inputs valid)."""
        return self.result is not None

    def count(self, severity: Severity) -> int:
        return sum(f.severity == severity for f in self.findings)

    @property
    def status(self) -> str:
        """``refused``, ``error``, ``warning``, ``info`` or ``ok``: the worst thing found."""
        if self.refused:
            return "refused"
        if self.skipped:
            return "skipped"
        for severity in SEVERITIES:
            if self.count(severity):
                return severity
        return "ok"

    def add(self, severity: Severity, code: str, where: str, message: str,
            expected: str = "", found: str = "") -> None:
        self.findings.append(Finding(severity, code, where, message, expected, found))


def show_formula(text: str) -> str:
    """A formula as the report prints it: with its ``=``."""
    return "=" + text


def show_value(value: object) -> str:
    """A stored or recomputed value as the report prints it."""
    if value is None:
        return "(empty)"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        return f"{value:,.10g}"
    if isinstance(value, (int, dt.date)):
        return fmt_number(value) if isinstance(value, int) else value.isoformat()
    return repr(value) if isinstance(value, str) else str(value)
