"""What an input's cell of the TFOM workbook holds: the value a person would type, as the
Inputs sheet's cells, the fleet block's and the Risk sheet's copy of the inputs all hold it (dates
as datetimes, counts as whole numbers, a blank optional input as an empty cell)."""

from __future__ import annotations

import datetime as dt

from ..core.catalogue import COHORT_BY_NAME, Input
from ..tfom.inputs import SiteInputs


def input_cell_value(spec: Input, value: object) -> object:
    """An input value as the workbook's input cell holds it (dates as datetimes, counts as int,
    ``None`` for a blank optional input)."""
    if value is None:
        return None
    if spec.kind == "date":
        return dt.datetime(value.year, value.month, value.day)  # type: ignore[attr-defined]
    if spec.kind == "integer":
        return int(value)  # type: ignore[call-overload]
    if spec.kind in ("number", "fraction"):
        number = float(value)  # type: ignore[arg-type]
        return int(number) if number.is_integer() and abs(number) < 2**53 else number
    return value


def fleet_cell_value(name: str, index: int, inputs: SiteInputs) -> object:
    """The value of cohort ``index + 2``'s cell of the fleet block row ``fleet_<column>``."""
    spec = COHORT_BY_NAME[name.removeprefix("fleet_")]
    cohorts = inputs.cohorts
    return input_cell_value(spec, cohorts[index].get(spec.name) if index < len(cohorts)
                            else None)
