"""The Risk sheet's figures and what each of its cells shows: the tornado and the Monte Carlo of
the live scenario's NPV (methodology §8), "what must be true" of each tornado driver, and the
copy of the inputs they were computed for.

Neither can be a formula in every engine (10,000 draws of a 120-month model), so the Python
model computes them (:mod:`tokenfactory_xl.tfom.risk`, :mod:`tokenfactory_xl.tfom.solve`) and
the sheet holds its figures beside a copy of the inputs they were computed for. A formula per
input compares today's value with that copy: as soon as one differs, the sheet's status (and the
Checks sheet) says **STALE** and how to refresh (``tokenfactory-xl refresh FILE``). A workbook
written without them (``batch --risk-draws 0``) says they were not computed.

Layout (fixed, the same for every site): the status on row 4; the tornado from row 7; the Monte
Carlo figures and the NPV histogram below; then "what must be true", each tornado driver's value
at which the live NPV is 0; the inputs the figures were computed for in columns U to AD. This
module says where each figure goes and what it shows (a site's workbook is filled from it with
no openpyxl); :mod:`.risk_sheet` draws the sheet: its titles, formats and charts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..core.catalogue import BY_NAME, COHORT_SPECS, INPUTS, MAX_COHORTS, SCENARIO_NAMES, fmt_number
from ..tfom.inputs import SiteInputs
from ..tfom.risk import DEFAULT_DRAWS, RISK_OUTPUTS, TORNADO_DRIVERS, Risk, Tornado, risk, tornado
from ..tfom.solve import Solution, solve_each
from .input_cells import fleet_cell_value, input_cell_value
from .plan import RISK_SHEET

#: Bins of the NPV histogram.
BINS = 20
STATUS = "B4"
DRAWS = "B5"
SEED_CELL = "D5"
CURRENT = "current"
NOT_COMPUTED = "not computed: run tokenfactory-xl refresh FILE"
STALE = ("STALE: an input changed since these figures were computed; run tokenfactory-xl "
         "refresh FILE")

TORNADO_HEADER = 7
CENTRE_ROW = TORNADO_HEADER + 1
FIRST_DRIVER = CENTRE_ROW + 1
RISK_TOP = FIRST_DRIVER + len(TORNADO_DRIVERS) + 1  # its section row
FIRST_FIGURE = RISK_TOP + 1
HIST_HEADER = FIRST_FIGURE + len(RISK_OUTPUTS) + 1
FIRST_BIN = HIST_HEADER + 1
LAST_ROW = FIRST_BIN + BINS - 1
#: "What must be true": each tornado driver's value at which the live NPV is 0, below the
#: histogram (its section row, header, then one row per driver).
MUST_TOP = LAST_ROW + 2
MUST_HEADER = MUST_TOP + 1
FIRST_MUST = MUST_HEADER + 1
LAST_MUST = FIRST_MUST + len(TORNADO_DRIVERS) - 1
#: The columns of a "what must be true" row: label, name, value now, value at NPV 0, the NPV
#: there, and what the search found.
MUST_COLUMNS = "ABCDEF"

#: Columns of the copy of the inputs: a label, up to seven values, the flag.
SNAP_LABEL = "U"
SNAP_VALUES = tuple("VWXYZ") + ("AA", "AB")  # Base/Optimised/Downside, or cohorts 2 … 8
SNAP_FLAG = "AC"
SNAP_HEADER = TORNADO_HEADER
FIRST_SNAP = SNAP_HEADER + 1


@dataclass(frozen=True)
class Figures:
    """What the sheet shows: the tornado and the risk of one site's inputs, and (when
    computed) what must be true of each tornado driver for the NPV to be 0."""

    tornado: Tornado
    risk: Risk
    must: tuple[Solution, ...] | None = None


def compute(inputs: SiteInputs, draws: int = DEFAULT_DRAWS, must_be_true: bool = False,
            whole: Mapping[str, np.ndarray] | None = None) -> Figures | None:
    """The sheet's figures for ``inputs`` (``None`` with no draws: not computed), with the
    "what must be true" block when ``must_be_true`` (a solve per driver, guided by the
    tornado's NPVs: about 4 ms each).
    ``whole``: the site's values from a run of the whole model, where the caller has them
    (``Result.values``): the tornado, the draws and the solves read from it the lines they do
    not move instead of each computing them again."""
    if draws <= 0:
        return None
    flexes = tornado(inputs, whole=whole)
    # the tornado's NPVs guide each solve's first pass toward NPV 0 (a guess only: a driver
    # flexed in every cohort alike is solved for the site's own value)
    near = {f.name: ((f.low, f.npv_low), (f.value, flexes.npv), (f.high, f.npv_high))
            for f in flexes.drivers}
    must = solve_each(inputs, TORNADO_DRIVERS, "npv=0", whole, near) if must_be_true else None
    return Figures(flexes, risk(inputs, draws, whole=whole), must)


def must_note(found: Solution) -> str:
    """What the search found, in words, for the block's last column."""
    if found.reached and found.output_beyond is None:
        return "NPV 0 here"
    if found.reached:
        return "nearest whole value to NPV 0"
    if found.jump:
        return "NPV jumps across 0 here (no value gives 0 exactly)"
    if found.value is None:
        return "no NPV in the allowed range"
    if any("does not change" in note for note in found.notes):
        return "does not move the NPV"
    return (f"none in the allowed range ({fmt_number(found.low)} … {fmt_number(found.high)}); "
            f"the {found.closest} end comes closest")


# -- the copy of the inputs ------------------------------------------------------------------------
@dataclass(frozen=True)
class _SnapRow:
    row: int
    label: str
    name: str  # the defined name compared: in_<input> or in_fleet_<column>
    width: int  # cells: 1, 3 (per scenario) or 7 (cohorts 2 … 8)

    @property
    def coords(self) -> list[str]:
        return [f"{col}{self.row}" for col in SNAP_VALUES[: self.width]]

    @property
    def flag(self) -> str:
        return f"{SNAP_FLAG}{self.row}"

    def formula(self) -> str:
        """1 when today's input equals the copy, else 0 (a blank equals a blank)."""
        first, last = self.coords[0], self.coords[-1]
        if self.width == 1:
            return f"=IF({self.name}={first},1,0)"
        return f"=IF(SUMPRODUCT(({self.name}<>{first}:{last})*1)=0,1,0)"


def snap_rows() -> tuple[_SnapRow, ...]:
    rows = []
    row = FIRST_SNAP
    for spec in INPUTS:
        rows.append(_SnapRow(row, spec.label, f"in_{spec.name}",
                             len(SCENARIO_NAMES) if spec.per_scenario else 1))
        row += 1
    for spec in COHORT_SPECS:
        rows.append(_SnapRow(row, f"Fleet: {spec.label} (cohorts 2–{MAX_COHORTS})",
                             f"in_fleet_{spec.name}", MAX_COHORTS - 1))
        row += 1
    return tuple(rows)


#: The rows of the copy of the inputs.
SNAP_ROWS = snap_rows()
LAST_SNAP = SNAP_ROWS[-1].row


def status_formula() -> str:
    flags = f"{SNAP_FLAG}{FIRST_SNAP}:{SNAP_FLAG}{LAST_SNAP}"
    return (f'=IF({DRAWS}="","{NOT_COMPUTED}",IF(SUM({flags})=COUNT({flags}),"{CURRENT}",'
            f'"{STALE}"))')


#: The Checks sheet's line for these figures: OK, STALE or "not computed".
CHECK_LABEL = ("Risk sheet: tornado and Monte Carlo computed for today's inputs (values from "
               "tokenfactory_xl; STALE → run tokenfactory-xl refresh FILE; not part of the "
               "master check)")


def check_formula() -> str:
    return (f'=IF({RISK_SHEET}!{STATUS}="{CURRENT}","OK",IF({RISK_SHEET}!{DRAWS}="","not computed",'
            f'"STALE"))')


#: Cells whose value depends on the copy of the inputs, not on the inputs alone: an audit cannot
#: recompute them from a returned file's inputs (sheet, coordinate).
def copy_dependent(check_cell: tuple[str, str]) -> frozenset[tuple[str, str]]:
    return frozenset({(RISK_SHEET, STATUS), check_cell} | {(RISK_SHEET, r.flag) for r in SNAP_ROWS})


# -- the values ---------------------------------------------------------------------------------
def _input_values(inputs: SiteInputs) -> dict[str, object]:
    out: dict[str, object] = {}
    by_name = {s.name: s for s in INPUTS}
    for r in SNAP_ROWS:
        if r.name.startswith("in_fleet_"):
            name = r.name.removeprefix("in_")
            for i, coord in enumerate(r.coords):
                out[coord] = fleet_cell_value(name, i, inputs)
            continue
        spec = by_name[r.name.removeprefix("in_")]
        value = inputs[spec.name]
        for i, coord in enumerate(r.coords):
            out[coord] = input_cell_value(spec, value[i] if spec.per_scenario else value)
    return out


def histogram(npv: np.ndarray, bins: int = BINS) -> list[tuple[float, float, int]]:
    """``bins`` equal bins from the smallest to the largest NPV: (from, to, draws)."""
    low, high = float(np.min(npv)), float(np.max(npv))
    if high == low:
        return [(low, high, len(npv))] + [(high, high, 0)] * (bins - 1)
    counts, edges = np.histogram(npv, bins=bins, range=(low, high))
    return [(float(edges[i]), float(edges[i + 1]), int(counts[i])) for i in range(bins)]


def risk_cell_values(inputs: SiteInputs, figures: Figures | None) -> dict[str, object]:
    """Coordinate → what each cell of the sheet the site changes shows (values and formulas)."""
    out: dict[str, object] = {STATUS: CURRENT if figures is not None else NOT_COMPUTED}
    out.update(_input_values(inputs))
    for r in SNAP_ROWS:
        out[r.flag] = 1.0
    blank = figures is None
    out[DRAWS] = "" if blank else figures.risk.draws  # type: ignore[union-attr]
    out[SEED_CELL] = "" if blank else figures.risk.seed  # type: ignore[union-attr]
    out[f"E{CENTRE_ROW}"] = "" if blank else figures.tornado.npv  # type: ignore[union-attr]
    drivers = () if blank else figures.tornado.drivers  # type: ignore[union-attr]
    for i in range(len(TORNADO_DRIVERS)):
        row = FIRST_DRIVER + i
        if i < len(drivers):
            f, centre = drivers[i], figures.tornado.npv  # type: ignore[union-attr]
            cells = (f.label, f.name, f.low, f.high, f.npv_low, f.npv_high, f.swing,
                     f.npv_low - centre, f.npv_high - centre)
        else:
            cells = ("",) * 9
        for col, value in zip("ABCDEFGHI", cells, strict=True):
            out[f"{col}{row}"] = value
    summary = {} if blank else figures.risk.summary()  # type: ignore[union-attr]
    for i, name in enumerate(RISK_OUTPUTS):
        value = summary.get(name)
        out[f"B{FIRST_FIGURE + i}"] = "" if blank else ("none" if value is None else value)
    bins = [] if blank else histogram(figures.risk.npv)  # type: ignore[union-attr]
    for i in range(BINS):
        row = FIRST_BIN + i
        cells = bins[i] if bins else ("", "", "")
        for col, value in zip("ABC", cells, strict=True):
            out[f"{col}{row}"] = value
    must = None if blank else figures.must  # type: ignore[union-attr]
    for i, name in enumerate(TORNADO_DRIVERS):
        row = FIRST_MUST + i
        found = must[i] if must else None
        cells = ("", "", "", "", "", NOT_COMPUTED if i == 0 else "") if found is None else (
            BY_NAME[name].label, name, found.current if found.current is not None else "",
            found.value if found.value is not None else "none",
            # a cent either side of 0 is the search's aim: shown as 0, not as a red -0
            "none" if found.output_at_value is None else round(found.output_at_value, 2) or 0.0,
            must_note(found))
        for col, value in zip(MUST_COLUMNS, cells, strict=True):
            out[f"{col}{row}"] = value
    return out
