"""The inputs a filled-in TFOM workbook holds, read back by their defined names: each input of
the catalogue (``in_<name>``: one cell, or Base, Optimised and Downside), the fleet block's
cohorts (``in_fleet_<column>``) and each input's source note, then checked by the catalogue.

What cannot be trusted becomes a finding of the workbook's audit (a formula typed over an input,
a number typed as text that reads two ways, a defined name that no longer points at its cells, a
cohort column after a blank one, a value outside what the catalogue allows), and the site is
left out of the portfolio; an empty input takes its default with a warning.
"""

from __future__ import annotations

import datetime as dt
import re

from ..core import names
from ..core.catalogue import COHORT_SPECS, INPUTS, MAX_COHORTS, SCENARIO_NAMES
from ..core.errors import InputError
from ..core.number_text import two_readings
from ..files.safe_xlsx import XlsxContent, parse_reference
from ..sites.load import CONTROL_OR_BIDI
from ..tfom.inputs import NOTE, NOTES_NAME, make_inputs
from .findings import WorkbookAudit, show_formula, show_value


def _excel_date(value: object, date1904: bool) -> object:
    """A date input stored as an Excel serial number → a date; anything else unchanged."""
    if isinstance(value, float) and not isinstance(value, bool):
        from openpyxl.utils.datetime import CALENDAR_MAC_1904, CALENDAR_WINDOWS_1900, from_excel

        try:
            day = from_excel(value, CALENDAR_MAC_1904 if date1904 else CALENDAR_WINDOWS_1900)
        except (ValueError, OverflowError):
            return value
        return day.date() if isinstance(day, dt.datetime) and day.time() == dt.time(0) else day
    return value


def read_inputs(content: XlsxContent, audit: WorkbookAudit) -> tuple[dict, dict, set]:
    """Input values by name, cell address by input key, and the cells that hold inputs."""
    values: dict[str, object] = {}
    where: dict[str, str] = {}
    input_cells: set[tuple[str, str]] = set()
    missing = False
    titles = {s.title for s in content.sheets}
    for spec in INPUTS:
        name = f"in_{spec.name}"
        text = content.defined_names.get(name)
        ref = parse_reference(text) if text is not None else None
        width = len(SCENARIO_NAMES) if spec.per_scenario else 1
        if text is None:
            missing = True  # reported with the other defined names
            continue
        if ref is None or ref[0] not in titles or len(ref[1]) != width:
            audit.add("error", "name_broken", name,
                      f"the defined name {name} refers to {text}, not to "
                      f"{'a row of ' + str(width) + ' cells' if width > 1 else 'one cell'} of a "
                      "sheet, so the input cannot be read",
                      found=text)
            missing = True
            continue
        sheet, coords = ref
        cells = content.cells(sheet)
        read = []
        for index, coord in enumerate(coords):
            key = f"{spec.name}.{SCENARIO_NAMES[index]}" if spec.per_scenario else spec.name
            address = f"{sheet}!{coord}"
            where[key] = address
            input_cells.add((sheet, coord))
            value = cells.values.get(coord)
            formula = cells.formulas.get(coord)
            if formula is not None:
                # An input must be typed: a formula's stored value may be stale (a file edited
                # outside Excel, or a link to another workbook), and the model cannot tell.
                stored = ("no stored value" if value is None
                          else f"a stored value of {show_value(value)} that may be stale")
                audit.add("error", "input_formula", address,
                          f"{key} holds the formula ={formula} ({stored}), not a typed value, "
                          "so the workbook is left out; type the value itself",
                          found=show_formula(formula))
                missing = True
            elif (spec.kind in ("number", "integer", "fraction") and isinstance(value, str)
                    and two_readings(value)):
                thousands, decimal = two_readings(value)  # type: ignore[misc]
                audit.add("error", "input", address,
                          f"{key}={value!r} is a number typed as text that reads two ways: "
                          f"{thousands} with a thousands separator, {decimal} with a decimal "
                          "separator; type the number itself", found=repr(value))
                missing = True
            elif (spec.kind in ("text", "choice", "currency") and isinstance(value, str)
                    and CONTROL_OR_BIDI.search(value)):
                audit.add("error", "input", address,
                          f"{key}={value!r} {names.problem(value)}; type it again on one line "
                          "without them", found=repr(value))
                missing = True
            if value is None or (isinstance(value, str) and not value.strip()):
                default = spec.default_for(SCENARIO_NAMES[index]) if spec.per_scenario \
                    else spec.default
                if formula is None and not spec.optional:  # a blank optional input is "none"
                    audit.add("warning", "input_empty", address,
                              f"{key} is empty, so the default {show_value(default)} is used")
            if spec.kind == "date":
                value = _excel_date(value, content.date1904)
            read.append(value)
        values[spec.name] = tuple(read) if spec.per_scenario else read[0]
        if spec.name == "site_name" and read[0] is not None:
            audit.site_name = str(read[0])  # shown even when the inputs are not valid
    missing |= not _read_fleet(content, audit, values, where, input_cells)
    if not missing:
        _read_notes(content, values, where)
    if missing:
        return {}, where, input_cells
    return values, where, input_cells


def _read_fleet(content: XlsxContent, audit: WorkbookAudit, values: dict,
                where: dict[str, str], input_cells: set[tuple[str, str]]) -> bool:
    """The cohorts after the site's own GPUs, from the fleet block (``in_fleet_<column>``: one
    row of cells per cohort column, one cell per cohort): a cohort is a column with any cell
    filled. Sets ``values["cohorts"]`` and ``where[(cohort, column)]``; False when the block
    cannot be read (reported)."""
    rows: dict[str, tuple[str, list[str]]] = {}
    for spec in COHORT_SPECS:
        name = f"in_fleet_{spec.name}"
        text = content.defined_names.get(name)
        if text is None:
            return False  # reported with the other defined names
        ref = parse_reference(text)
        if ref is None or ref[0] not in {s.title for s in content.sheets} \
                or len(ref[1]) != MAX_COHORTS - 1:
            audit.add("error", "name_broken", name,
                      f"the defined name {name} refers to {text}, not to the fleet block's row "
                      f"of {MAX_COHORTS - 1} cells, so the cohorts cannot be read", found=text)
            return False
        rows[spec.name] = ref
    cohorts: list[dict[str, object]] = []
    labels: list[str] = []
    ok = True
    blank = ""  # the first cohort column left blank
    for index in range(MAX_COHORTS - 1):
        label = f"cohort {index + 2}"
        row: dict[str, object] = {}
        for spec in COHORT_SPECS:
            sheet, coords = rows[spec.name]
            coord = coords[index]
            cells = content.cells(sheet)
            input_cells.add((sheet, coord))
            where[(label, spec.name)] = f"{sheet}!{coord}"
            formula = cells.formulas.get(coord)
            if formula is not None:
                audit.add("error", "input_formula", f"{sheet}!{coord}",
                          f"{label} {spec.name} holds the formula ={formula}, not a typed value, "
                          "so the workbook is left out; type the value itself",
                          found=show_formula(formula))
                ok = False
                continue
            value = cells.values.get(coord)
            if value is not None and not (isinstance(value, str) and not value.strip()):
                row[spec.name] = value
        sheet, coords = rows["cohort"]
        if not row:
            blank = blank or f"{label} ({sheet}!{coords[index]} and the cells under it)"
            continue
        if blank:  # the model numbers cohorts in order: a gap would shift every later one
            audit.add("error", "input", f"{sheet}!{coords[index]}",
                      f"{label} is filled but {blank} is blank; fill the fleet block's cohort "
                      "columns from the left, without gaps", found=str(row.get("cohort", "")))
            ok = False
        cohorts.append(row)
        labels.append(label)
    if cohorts:
        values["cohorts"] = cohorts
        where["(cohorts)"] = labels
    return ok


def _read_notes(content: XlsxContent, values: dict, where: dict) -> None:
    """Each input's source note (methodology §10.7) into ``values`` as ``gpus.note``: the cell
    of the notes column (the defined name :data:`~tokenfactory_xl.tfom.inputs.NOTES_NAME`) on the
    row of the input's first cell. A workbook without the column (made before it) has none; a
    formula typed there is reported with the other formulas, not read."""
    text = content.defined_names.get(NOTES_NAME)
    ref = parse_reference(text) if text is not None else None
    if ref is None or not ref[1]:
        return
    sheet, coords = ref
    column = re.match(r"[A-Z]+", coords[0]).group()  # type: ignore[union-attr]
    cells = content.cells(sheet)
    for spec in INPUTS:
        address = where.get(f"{spec.name}.{SCENARIO_NAMES[0]}" if spec.per_scenario else spec.name)
        if address is None or not address.startswith(f"{sheet}!"):
            continue
        coord = column + re.sub(r"^[A-Z]+", "", address[len(sheet) + 1:])
        value = cells.values.get(coord)
        if value is not None and cells.formulas.get(coord) is None:
            values[f"{spec.name}.{NOTE}"] = value
            where[f"{spec.name}.{NOTE}"] = f"{sheet}!{coord}"


def check_inputs(values: dict, where: dict, audit: WorkbookAudit) -> None:
    try:
        audit.inputs = make_inputs(values, cohort_where=where.get("(cohorts)", ()))
    except InputError as exc:
        for p in exc.problems:
            text = f"{p.name}={show_value(p.value)}: {p.message}"
            if p.where:
                text = f"{p.where} {text}"
            if p.fix:
                text += f"; {p.fix}"
            address = where.get((p.where, p.name)) or where.get(
                p.name, where.get(p.name + ".Base", ""))
            audit.add("error", "input", address, text, found=show_value(p.value))
