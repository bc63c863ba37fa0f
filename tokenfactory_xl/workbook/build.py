"""The TFOM workbook: the Token Factory Operating Model as a self-contained Excel file.

A finance team lives in a workbook, not in Python. :func:`build_workbook` lays the operating
model of :mod:`tokenfactory_xl.tfom.operating_model` out the way financial modellers expect (the
FAST Standard): every input on the Inputs sheet, named ``in_<name>`` and validated from the input
catalogue; fixed constants in one labelled block, named ``k_<name>``; one monthly timeline
whose every row holds one formula copied across; the summary outputs of section 7 named
``out_<name>``; a Checks sheet with one master check. It opens in Excel 2016+, LibreOffice and
Google Sheets with no Python and no macros.

This module assembles the workbook: the order of its sheets, the builder of each (the sheet
modules decide *where* each line of the model goes and how it looks), the sheets' protection,
print and tab settings, and the deterministic ``.xlsx`` bytes. The formula of every cell is its
line's declaration rendered by :func:`tokenfactory_xl.tfom.excel.excel`, and
:func:`tokenfactory_xl.workbook.values.cell_values` gives, for every input and formula cell, the
value of the same declaration computed by the compiled model, which batch generation stores in
each site's file. The CLI commands ``template`` and ``render`` are in
:mod:`tokenfactory_xl.cli.workbook`.
"""

from __future__ import annotations

import functools
import io
import os
import zipfile
from pathlib import Path

from openpyxl import Workbook
from openpyxl.writer.excel import ExcelWriter

from ..files import build_cache, ooxml
from ..files.disk import write_atomically
from ..tfom import operating_model as om
from ..tfom.inputs import SiteInputs, default_inputs
from ..tfom.operating_model import MAX_MONTHS
from . import actuals_sheet as workbook_actuals
from . import risk_values as workbook_risk
from . import style as st
from .calculation_sheets import (
    TIMELINE_ROWS,
    YEAR_FIRST_COL,
    YEAR_UNIT_COL,
    build_capacity_sheet,
    build_statements_sheet,
    build_timeline_sheet,
    build_years_sheet,
)
from .front_sheets import (
    COVER_FIRST,
    COVER_TITLE,
    DOC_TIME,
    KPI_ROWS,
    build_checks_sheet,
    build_cover_sheet,
    build_dashboard_sheet,
)
from .inputs_sheet import NOTE_COLUMN, build_inputs_sheet
from .layout import _Builder, _protect
from .plan import (
    ACTUALS_SHEET,
    FIRST_MONTH_COL,
    IRR_SHEET,
    LAST_COL,
    MONTH0_COL,
    MONTH_COLS,
    RISK_SHEET,
    SHEETS,
    TIMELINE_SHEET,
    Plan,
    timeline_cells,
)
from .returns_sheets import (
    add_sensitivity_tornado,
    build_irr_sheet,
    build_returns_sheet,
    build_scenarios_sheet,
    build_sensitivity_sheet,
)
from .risk_sheet import build_risk_sheet

__all__ = [
    "SHEETS", "IRR_SHEET", "UNPRINTED_SHEETS", "build_workbook", "plan", "default_workbook",
    "default_workbook_bytes", "workbook_bytes", "save_workbook",
    # where the sheets put things, defined by the sheets' modules and read through this one by
    # the tests and tools that take it for the workbook
    "MAX_MONTHS", "MONTH0_COL", "FIRST_MONTH_COL", "LAST_COL", "MONTH_COLS", "TIMELINE_ROWS",
    "timeline_cells", "YEAR_UNIT_COL", "YEAR_FIRST_COL", "NOTE_COLUMN", "COVER_FIRST",
    "KPI_ROWS",
]

#: Sheets read on screen that print no page: the Timeline's 120 monthly columns would take a
#: ream (the model's years are printed on Years and Returns), and Capacity (constants and the
#: capacity a month rests on) and the IRR searches are working, not an answer (TEF, TFI and the
#: IRRs are on the Dashboard, Returns and Scenarios).
UNPRINTED_SHEETS: tuple[str, ...] = ("Capacity", TIMELINE_SHEET, IRR_SHEET)


# -- the workbook -----------------------------------------------------------------------------
def _build(inputs: SiteInputs, figures: workbook_risk.Figures | None = None
           ) -> tuple[Workbook, Plan]:
    wb = Workbook()
    wb.remove(wb.active)
    sheets = {name: wb.create_sheet(name) for name in SHEETS}
    b = _Builder(wb)
    build_inputs_sheet(b, sheets["Inputs"], inputs)
    build_capacity_sheet(b, sheets["Capacity"])
    build_timeline_sheet(b, sheets[TIMELINE_SHEET])
    build_years_sheet(b, sheets["Years"])
    build_statements_sheet(b, sheets["Statements"])
    build_returns_sheet(b, sheets["Returns"])
    build_scenarios_sheet(b, sheets["Scenarios"])
    build_irr_sheet(b, sheets[IRR_SHEET])
    build_sensitivity_sheet(b, sheets["Sensitivity"])
    build_risk_sheet(sheets[RISK_SHEET], inputs, figures, b.name)
    add_sensitivity_tornado(sheets["Sensitivity"], sheets[RISK_SHEET])
    workbook_actuals.build_actuals_sheet(sheets[ACTUALS_SHEET])
    build_checks_sheet(b, sheets["Checks"])
    build_cover_sheet(b, sheets["Cover"])
    build_dashboard_sheet(b, sheets["Dashboard"])
    missing = [ln.name for ln in om.LINES if ln.name not in b.plan.lines]
    assert not missing, f"lines without a place in the workbook: {missing}"
    b.render()
    for ws in wb.worksheets:
        _protect(ws)
        ws.sheet_view.zoomScale = 90
    for name in UNPRINTED_SHEETS:
        st.print_nothing(sheets[name])
    colours = {"Cover": "1F3864", "Inputs": "FFC000", "Dashboard": "1F3864", "Checks": "70AD47"}
    for name, colour in colours.items():
        sheets[name].sheet_properties.tabColor = colour
    wb.active = SHEETS.index("Cover")
    wb.calculation.fullCalcOnLoad = True
    return wb, b.plan


def build_workbook(inputs: SiteInputs | None = None,
                   risk_draws: int = workbook_risk.DEFAULT_DRAWS) -> Workbook:
    """The TFOM workbook with ``inputs`` typed in (the catalogue defaults when ``None``).

    Native formulas only, no stored values: Excel and LibreOffice compute on opening (the
    workbook asks for a full calculation on load). The Risk sheet holds the tornado and the
    Monte Carlo of ``risk_draws`` draws for these inputs (0: not computed).
    """
    inputs = inputs if inputs is not None else default_inputs()
    wb, _ = _build(inputs, workbook_risk.compute(inputs, risk_draws))
    return wb


@functools.lru_cache(maxsize=1)
def _default_build() -> tuple[Workbook, Plan]:
    """The default site's workbook without Risk figures, and its plan: built once per process
    for the plan, the batch's stencil and the audit's template alike (a build takes a second).
    Callers read it and never change it."""
    return _build(default_inputs())


@functools.lru_cache(maxsize=1)
def plan() -> Plan:
    """Where every input and formula cell of the workbook is (the same for every site): built
    with the default workbook, or read back as an earlier run of this code kept it. What a
    site's workbook is filled with is :mod:`.values`'s, at this plan's cells."""
    return build_cache.kept("workbook-plan", lambda: _default_build()[1])


def default_workbook() -> Workbook:
    """The default site's workbook with its Risk sheet not computed, shared: read, never change
    (nor save: openpyxl renumbers a workbook's drawings as it saves it; see
    :func:`default_workbook_bytes`).

    The same workbook as ``build_workbook(None, risk_draws=0)`` without a second build.
    """
    return _default_build()[0]


@functools.lru_cache(maxsize=1)
def default_workbook_bytes() -> bytes:
    """:func:`default_workbook` as ``.xlsx`` bytes, saved once per process."""
    return workbook_bytes(default_workbook())


#: The zip members' fixed times, so that the same inputs give the same bytes.
_ZIP_TIME = (2026, 1, 1, 0, 0, 0)


def workbook_bytes(wb: Workbook) -> bytes:
    """The ``.xlsx`` file of ``wb``, deterministic: fixed document dates, creator, zip times."""
    wb.properties.creator = "tokenfactory_xl"
    wb.properties.lastModifiedBy = "tokenfactory_xl"
    wb.properties.created = DOC_TIME
    wb.properties.modified = DOC_TIME
    wb.properties.title = COVER_TITLE
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        ExcelWriter(wb, archive).write_data()  # openpyxl's save() stamps the current time
    # (stored, not compressed: each member is compressed once, as it is copied below)
    # (and written in the spellings every reader expects: ooxml.conventions)
    out = io.BytesIO()
    with zipfile.ZipFile(raw) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        renames, rewrite = ooxml.conventions(src.namelist())
        for info in src.infolist():
            fixed = zipfile.ZipInfo(renames.get(info.filename, info.filename),
                                    date_time=_ZIP_TIME)
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = 0o600 << 16
            body = src.read(info.filename)
            if info.filename in rewrite:
                body = rewrite[info.filename](body)
            dst.writestr(fixed, body)
    return out.getvalue()


def save_workbook(wb: Workbook, path: str | os.PathLike, *, force: bool = True) -> Path:
    """Write ``wb`` to ``path`` deterministically and atomically (temp file, then rename).

    With ``force=False`` an existing file is left alone and ``FileExistsError`` raised.
    """
    path = Path(path)
    if path.exists() and not force:
        raise FileExistsError(str(path))
    return write_atomically(path, workbook_bytes(wb))
