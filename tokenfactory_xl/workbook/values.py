"""The values the Python model gives every formula cell of the TFOM workbook, at the cells the
plan recorded: stored beside the formulas (batch, template, refresh), spelled as each line
shows them (``none`` or blank), blank beyond a table's guard.

Filling a workbook needs the plan (:class:`~.plan.Plan`: kept with the drawn workbook, see
:func:`tokenfactory_xl.workbook.build.plan`), never openpyxl: this module and those it imports
draw nothing.
"""

from __future__ import annotations

import datetime as dt
import operator
import os
from collections.abc import Callable, Sequence
from itertools import compress, repeat

import numpy as np

from ..core.catalogue import BY_NAME
from ..core.errors import InputError, Problem
from ..tfom import evaluation
from ..tfom import operating_model as om
from ..tfom.evaluation import Result
from ..tfom.formula import Line
from ..tfom.inputs import SiteInputs
from ..tfom.runtime import from_serial
from . import risk_values as workbook_risk
from .input_cells import fleet_cell_value, input_cell_value
from .plan import IRR_SHEET, SHEETS, Plan
from .stencil import Stencil


# -- cell values from the Python model -------------------------------------------------------
def _shown(line: Line, value: object) -> object:
    """A computed value as its cell shows it: NaN is the line's blank or "none"."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        if value != value:  # NaN
            return line.missing
        if line.kind == "month":
            return from_serial(value)
        return value
    if isinstance(value, (bool, int)):
        return float(value)
    return value


def irr_sheet_noise(values: dict[str, dict[str, object]]) -> float:
    """How far two engines may disagree on a number of the IRR sheet (``values``: what
    :func:`cell_values` gives).

    Near an IRR the NPV is a difference of large numbers: what is left is rounding noise (a few
    1e-16 of the largest NPV on the sheet), and its sign may steer a step to the other half of
    a bracket a few ulps wide. Such cells agree to 1e-10 of that largest NPV; the IRR itself, the
    search's result, agrees as every other output does.
    """
    cells = list(values.get(IRR_SHEET, {}).values())
    numbers = np.fromiter(compress(cells, map(isinstance, cells, repeat(float))), dtype=float)
    numbers = np.abs(numbers[np.isfinite(numbers)])
    return 1e-10 * max(float(numbers.max()) if numbers.size else 0.0, 1.0)


class CellSink:
    """Where :func:`fill_cells` puts the value each cell shows, a run of cells at a time.

    :class:`CellDict` keeps them as sheet → coordinate → value; the batch keeps them in its
    stencil's order (:class:`StencilCells`). A cell set twice shows the second value.
    """

    def one(self, sheet: str, coord: str, value: object) -> None:
        """One cell's value."""
        raise NotImplementedError

    def numbers(self, sheet: str, coords: Sequence[str], first: int, row: np.ndarray,
                missing: object) -> None:
        """Cells ``coords[first:]`` show the floats ``row[first:len(coords)]``; a NaN among
        them shows ``missing``."""
        raise NotImplementedError

    def shown(self, sheet: str, coords: Sequence[str], first: int,
              values: Sequence[object]) -> None:
        """Cells ``coords[first:]`` show ``values[first:len(coords)]``."""
        raise NotImplementedError

    def blanks(self, sheet: str, coords: Sequence[str], first: int,
               blank: Sequence[bool]) -> None:
        """Cells ``coords[first:]`` where ``blank[first:]`` holds are blank (``""``)."""
        raise NotImplementedError

    def sheet(self, sheet: str, values: dict[str, object]) -> None:
        """The whole sheet's cells: ``values`` (coordinate → value) and no other."""
        raise NotImplementedError

    def flush(self) -> None:
        """Set what :meth:`one`, :meth:`numbers` and :meth:`blanks` were given, if they held it
        back (each line and input has cells of its own, so their values may be set together
        once all are known)."""


class CellDict(CellSink):
    """The values as :func:`cell_values` gives them: sheet → coordinate → value."""

    def __init__(self) -> None:
        self.sheets: dict[str, dict[str, object]] = {name: {} for name in SHEETS}

    def one(self, sheet, coord, value):
        self.sheets[sheet][coord] = value

    def numbers(self, sheet, coords, first, row, missing):
        shown = row.tolist()
        for k in np.flatnonzero(np.isnan(row)).tolist():
            shown[k] = missing
        self.shown(sheet, coords, first, shown)

    def shown(self, sheet, coords, first, values):
        self.sheets[sheet].update(zip(coords[first:], values[first:len(coords)], strict=True))

    def blanks(self, sheet, coords, first, blank):
        self.sheets[sheet].update(dict.fromkeys(compress(coords[first:], blank[first:]), ""))

    def sheet(self, sheet, values):
        self.sheets[sheet] = values


class StencilCells(CellSink):
    """The values set straight in a stencil's order (a :class:`~.stencil.SheetValues` per
    sheet), as the batch fills a site's workbook: a line's row of numbers is one array
    assignment, not a dict entry per cell."""

    def __init__(self, stencil: Stencil, spots: dict[object, tuple[object, ...]]):
        self.sheets = stencil.values()
        self._spots = spots
        # sheet → the runs held back until :meth:`flush`: (coords, first, row, missing) and
        # (coords, first, blank)
        self._numbers: dict[str, list[tuple[Sequence[str], int, np.ndarray, object]]] = {}
        self._blanks: dict[str, list[tuple[Sequence[str], int, Sequence[bool]]]] = {}
        self._ones: dict[str, tuple[list[str], list[object]]] = {}  # sheet → coords, values

    def at(self, sheet: str, coords: Sequence[str], first: int) -> np.ndarray:
        """The stencil's positions of ``coords[first:]``, found once per list of coordinates
        (the workbook's plan gives the same list for a line, site after site)."""
        key = (id(coords), first)
        spot = self._spots.get(key)
        if spot is None or spot[0] is not coords:
            spot = (coords, self.sheets[sheet].positions(coords[first:]))
            self._spots[key] = spot
        return spot[1]

    def one(self, sheet, coord, value):
        coords, values = self._ones.setdefault(sheet, ([], []))
        coords.append(coord)
        values.append(value)

    def numbers(self, sheet, coords, first, row, missing):
        self._numbers.setdefault(sheet, []).append((coords, first, row, missing))

    def shown(self, sheet, coords, first, values):
        self.sheets[sheet].put(self.at(sheet, coords, first), values[first:len(coords)])

    def blanks(self, sheet, coords, first, blank):
        self._blanks.setdefault(sheet, []).append((coords, first, blank))

    def sheet(self, sheet, values):
        self.flush()
        self.sheets[sheet].replace(values)

    def flush(self):
        # Speed: a site's workbook has some 650 rows of numbers, 500 runs of blanks and 1,400
        # single cells; each sheet's are set in one assignment, at positions found once for the
        # plan's rows and cells.
        for sheet, (coords, values) in self._ones.items():
            key = (sheet, "ones", *coords)
            where = self._bulk().get(key)
            if where is None:
                where = self._bulk()[key] = self.sheets[sheet].positions(coords)
            self.sheets[sheet].put(where, values)
        self._ones = {}
        for sheet, runs in self._numbers.items():
            missing = ("numbers", *(run[3] for run in runs))
            where, shown = self._runs(sheet, runs, missing, lambda runs=runs: np.concatenate(
                [np.full(len(coords) - first, m, dtype=object) for coords, first, _, m in runs]))
            self.sheets[sheet].put_numbers(where, np.concatenate(
                [row[first:len(coords)] for coords, first, row, _ in runs]), shown)
        for sheet, blanks in self._blanks.items():
            where, _ = self._runs(sheet, blanks, ("blanks",), lambda: None)
            blank = np.concatenate([np.asarray(b[first:], dtype=bool) for _, first, b in blanks])
            self.sheets[sheet].put_same(where[blank], "")
        self._numbers, self._blanks = {}, {}

    def _runs(self, sheet: str, runs: list[tuple], what: tuple[object, ...],
              also: Callable[[], object]) -> tuple[np.ndarray, object]:
        """The stencil's positions of the cells of ``runs`` ((coords, first, …) each) one after
        the other, and ``also()``: found once for the same runs and ``what`` (the kind of runs
        and what they show), as :meth:`at` finds one's."""
        coords = [run[0] for run in runs]
        key = (sheet, what, tuple(map(id, coords)), tuple(run[1] for run in runs))
        spot = self._bulk().get(key)
        if spot is None or not all(map(operator.is_, spot[0], coords)):
            where = [self.at(sheet, run[0], run[1]) for run in runs]
            spot = (coords, np.concatenate(where) if where else np.zeros(0, dtype=np.intp),
                    also())
            self._bulk()[key] = spot
        return spot[1], spot[2]

    def _bulk(self) -> dict:
        """The positions of whole sheets' runs found so far: a few dozen sets for the sites of
        a batch (their horizons, the lines that are numbers), let go past :data:`_BULK_MOST`
        so that memory stays flat however many sites come."""
        bulk = self._spots.setdefault("bulk", {})
        if len(bulk) > _BULK_MOST:
            bulk.clear()
        return bulk

    @staticmethod
    def kept(spots: dict, plan: Plan) -> dict[str, list]:
        """``spots`` (the positions :meth:`at` and :meth:`_runs` found for ``plan``'s cells) in
        a form kept between runs (:mod:`tokenfactory_xl.files.build_cache`): each list of
        coordinates named by its line, where ``spots`` names it by the identity of the plan's
        list, which means nothing in another process. :meth:`read_back` makes them ``spots``
        again, so that a process's first site finds its cells without a lookup of each."""
        line_of = {id(place.coords): key for key, place in plan.placements()}
        at = [(line_of[id(spot[0])], key[1], spot[1]) for key, spot in spots.items()
              if key != "bulk" and id(spot[0]) in line_of]
        bulk = []
        for key, spot in spots.get("bulk", {}).items():
            if key[1] == "ones":  # named by the coordinates themselves
                bulk.append((key, spot))
            elif all(id(coords) in line_of for coords in spot[0]):
                lines = tuple(line_of[id(coords)] for coords in spot[0])
                bulk.append(((key[0], key[1], lines, key[3]), spot[1:]))
        return {"at": at, "bulk": bulk}

    @staticmethod
    def read_back(kept: dict[str, list], plan: Plan) -> dict:
        """The positions :meth:`kept` holds, for the lists of coordinates of ``plan``."""
        spots: dict = {}
        for line, first, where in kept["at"]:
            coords = plan.placement(line).coords
            spots[(id(coords), first)] = (coords, where)
        bulk = spots["bulk"] = {}
        for key, spot in kept["bulk"]:
            if key[1] == "ones":
                bulk[key] = spot
                continue
            sheet, what, lines, firsts = key
            coords = [plan.placement(line).coords for line in lines]
            bulk[(sheet, what, tuple(map(id, coords)), firsts)] = (coords, *spot)
        return spots


#: The most sets of a sheet's runs' positions the batch keeps (:meth:`StencilCells._bulk`).
_BULK_MOST = 256


def cell_values(plan: Plan, inputs: SiteInputs, result: Result | None = None,
                figures: workbook_risk.Figures | None = None) -> dict[str, dict[str, object]]:
    """Sheet → coordinate → the value each input and formula cell of the workbook ``plan``
    places shows, from the Python model.

    Numbers are floats (input counts ints, dates ``datetime``), texts are strings, ``"none"``
    where the spec says none, ``""`` for blanks (months beyond the horizon). ``result`` is
    ``run(inputs)`` when the caller has it already (the model is not run twice); ``figures``
    the Risk sheet's (``None``: not computed).
    """
    cells = CellDict()
    fill_cells(cells, plan, inputs, result, figures)
    return cells.sheets


def fill_cells(sink: CellSink, plan: Plan, inputs: SiteInputs, result: Result | None = None,
               figures: workbook_risk.Figures | None = None) -> None:
    """Put into ``sink`` the value each input and formula cell shows (see :func:`cell_values`):
    the one place that says what a cell of the workbook shows."""
    values = (result if result is not None else evaluation.run(inputs)).values
    for sheet, coord, name, index in plan.inputs:
        if name.startswith("fleet_"):
            sink.one(sheet, coord, fleet_cell_value(name, index, inputs))  # type: ignore[arg-type]
            continue
        spec = BY_NAME[name]
        value = inputs[name]
        sink.one(sheet, coord, input_cell_value(spec, value[index] if index is not None
                                                else value))
    notes = inputs.notes
    for sheet, coord, name in plan.notes:
        sink.one(sheet, coord, notes.get(name, ""))
    # a guarded table → the positions not in use, or None where it uses all of them
    unused: dict[str, np.ndarray | None] = {}
    for _, place in plan.placements():  # a copy shows what its line's cells show
        line = place.line
        v = values[line.name]
        if place.orient == "s":
            sink.one(place.sheet, place.coords[0],
                     _shown(line, np.asarray(v).reshape(()).item()))
            continue
        t = line.table
        first = 1 if line.skip_first else 0
        array = np.asarray(v)
        if line.kind != "month" and array.dtype.kind in "biuf":  # numbers: in bulk
            sink.numbers(place.sheet, place.coords, first, array.astype(float, copy=False),
                         line.missing)
        else:
            sink.shown(place.sheet, place.coords, first,
                       [_shown(line, x) for x in array.tolist()])
        if t is not None and t.guard is not None:
            if t.name not in unused:  # once per table and site, for all of its lines
                blank = ~np.asarray(_guard_values(t, values, place), dtype=bool)
                unused[t.name] = blank if blank.any() else None
            blank = unused[t.name]
            if blank is not None:
                sink.blanks(place.sheet, place.coords, first, blank[:len(place.coords)])
    sink.sheet(workbook_risk.RISK_SHEET, workbook_risk.risk_cell_values(inputs, figures))
    check_sheet, check_coord = plan.risk_check
    sink.one(check_sheet, check_coord, "OK" if figures is not None else "not computed")
    sink.one(*plan.build_date, dt.datetime.combine(build_date(), dt.time()))
    for sheet_name, coord, source in plan.echoes:
        if source.startswith("in_"):
            spec = BY_NAME[source[3:]]
            sink.one(sheet_name, coord, input_cell_value(spec, inputs[spec.name]))
        else:
            sink.one(sheet_name, coord, _shown(om_line(source), np.asarray(values[source]).item()))
    sink.flush()


def build_date() -> dt.date:
    """The date a workbook is built on, shown on the Cover: the UTC day of ``SOURCE_DATE_EPOCH``
    (seconds since 1970-01-01 UTC, the reproducible-builds convention) when that environment
    variable is set, today otherwise. Written as each workbook is filled, so a template kept
    between runs never carries yesterday's date."""
    text = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not text:
        return dt.date.today()
    try:
        seconds = int(text)
        return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).date()
    except (ValueError, OverflowError, OSError):
        raise InputError([Problem(
            "SOURCE_DATE_EPOCH", text,
            "the environment variable must be a whole number of seconds since 1970-01-01 UTC",
            "set it to e.g. 1767225600 (2026-01-01), or unset it to date workbooks today")]
        ) from None


def om_line(name: str) -> Line:
    return _LINES_BY_NAME[name]


_LINES_BY_NAME: dict[str, Line] = {ln.name: ln for ln in om.LINES}


def _guard_values(t, values, place) -> list[bool]:
    """Whether each position of a guarded table is in use (the guard's own value)."""
    if t is om.TIMELINE:
        return [bool(x) for x in np.asarray(values["in_horizon"]).tolist()]
    if t.name == "fiscal" or t.name.startswith("loss_pool_"):
        years = float(values["fiscal_years"])
        return [k + 1 <= years for k in range(t.length)]
    if t.name.startswith("irr_steps_"):
        found = t.guard.args[0]  # IF(found = 1): the search's bracket flag
        return [float(values[found.name]) == 1] * t.length
    if t is om.YEAR_TABLE:
        return [x == x for x in np.asarray(values["year_revenue"]).tolist()]
    raise AssertionError(f"no guard values for {t.name}")
