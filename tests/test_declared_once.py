"""A line of the model is one declaration: its formula reaches every rendering from there.

``tokens_per_mw`` (methodology §7) was added as one
:class:`~tokenfactory_xl.tfom.operating_model.Output` in ``operating_model.OUTPUTS`` and nothing
else. These tests find it in the Python model, in the
workbook as ``out_tokens_per_mw`` with its Excel formula, in the values batch stores beside
that formula, and in ``summary --json`` — all equal to one hand computation.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from tests.tools import command
from tokenfactory_xl import make_inputs, run
from tokenfactory_xl.tfom import evaluation
from tokenfactory_xl.tfom import operating_model as om
from tokenfactory_xl.tfom.compiler import compile_lines
from tokenfactory_xl.tfom.excel import ExcelContext, excel
from tokenfactory_xl.tfom.formula import SUM, Cell, Const, InputRef, Line, Name, Row
from tokenfactory_xl.workbook import build as wbm
from tokenfactory_xl.workbook import values as wbv

ROOT = Path(__file__).resolve().parents[1]

SITE = {"gpus": 512, "measured_tps": 1_536_000, "power_kw_per_gpu": 1.2, "pue": 1.25,
        "horizon_months": 24, "start_date": "2027-01-01"}


def hand_tokens_per_mw() -> float:
    """Tokens sold per second per MW of facility power, by hand from the model's monthly sales.

    512 GPUs × 1.2 kW × 1.25 PUE = 768 kW = 0.768 MW. 2027 and 2028 have 365 + 366 = 731 days,
    731 × 24 × 3,600 = 63,158,400 seconds. tokens_per_mw = Σ tokens sold ÷ (0.768 × 63,158,400).
    """
    tokens = float(sum(run(make_inputs(SITE)).lines["tokens_sold"]))
    seconds = (dt.date(2029, 1, 1) - dt.date(2027, 1, 1)).days * 24 * 3_600
    assert seconds == 63_158_400
    return tokens / (512 * 1.2 * 1.25 / 1_000 * seconds)


def test_declared_once_in_the_outputs():
    declared = [o for o in om.OUTPUTS if o.name == "tokens_per_mw"]
    assert len(declared) == 1
    assert declared[0].unit == "tokens/s per MW"


def test_python_model():
    assert run(make_inputs(SITE)).summary["tokens_per_mw"] == pytest.approx(
        hand_tokens_per_mw(), rel=1e-12)


def test_workbook_formula_and_stored_value():
    inputs = make_inputs(SITE)
    book = wbm.build_workbook(inputs, risk_draws=0)  # formulas and names: no Risk figures
    values = wbv.cell_values(wbm.plan(), inputs)
    # the declaration gives one formula per scenario, and the live one picks among them
    (sheet, ref), = book.defined_names["out_tokens_per_mw_base"].destinations
    coord = ref.replace("$", "")
    formula = book[sheet][coord].value
    mw_row = wbm.TIMELINE_ROWS["mw_seconds_base"]  # the Base scenario's fleet line
    assert formula == (f'=IF(Timeline!$C${mw_row}=0,"n/m",'
                       f'out_tokens_sold_total_base/Timeline!$C${mw_row})')
    assert values[sheet][coord] == pytest.approx(hand_tokens_per_mw(), rel=1e-12)
    # the MW·s of the denominator: facility kW ÷ 1,000 × hours × 3,600, by named constants
    assert "k_kw_per_mw" in book["Timeline"][f"E{mw_row}"].value
    assert "k_seconds_per_hour" in book["Timeline"][f"E{mw_row}"].value
    (sheet, ref), = book.defined_names["out_tokens_per_mw"].destinations
    coord = ref.replace("$", "")
    assert book[sheet][coord].value == ("=CHOOSE(scenario_number,out_tokens_per_mw_base,"
                                        "out_tokens_per_mw_optimised,out_tokens_per_mw_downside)")
    assert "3600" not in formula
    assert values[sheet][coord] == pytest.approx(hand_tokens_per_mw(), rel=1e-12)


def test_summary_json():
    args = ["summary", "--json"] + [a for k, v in SITE.items() for a in ("--set", f"{k}={v}")]
    proc = command.run(*args, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["tokens_per_mw"] == pytest.approx(hand_tokens_per_mw(),
                                                                      rel=1e-12)


def test_one_declaration_gives_formula_and_value():
    """A new line needs nothing but its declaration: the compiler and the renderer take it."""
    extra = Line("fleet_mw_hours", "Fleet MWh", "MWh", "number",
                 Name("total_mw_seconds") / Const("seconds_per_hour"))
    per_month = Line("gpu_seconds", "GPU-seconds", "s", "number",
                     InputRef("gpus") * Cell("hours") * Const("seconds_per_hour"),
                     table=om.TIMELINE, skip_first=True)
    total = Line("gpu_seconds_total", "GPU-seconds", "s", "number", SUM(Row("gpu_seconds")))
    values = compile_lines(om.LINES + (extra, per_month, total))(
        evaluation.formula_inputs(make_inputs(SITE)), evaluation._formula_constants(),
        evaluation.LISTS)
    hours = run(make_inputs(SITE)).lines["hours"]
    assert float(values["fleet_mw_hours"]) == pytest.approx(0.768 * hours.sum(), rel=1e-12)
    assert values["gpu_seconds"][1] == 512 * 31 * 24 * 3600  # January 2027
    assert float(values["gpu_seconds_total"]) == 512 * 63_158_400
    ctx = _FlatContext()
    assert excel(extra.formula, ctx) == "total_mw_seconds/k_seconds_per_hour"
    assert excel(per_month.formula, ctx) == "in_gpus*hours@0*k_seconds_per_hour"
    assert excel(total.formula, ctx) == "SUM(gpu_seconds[])"


class _FlatContext(ExcelContext):
    """Renders references by name, to read a rendered formula without a workbook."""

    def name(self, line: str) -> str:
        return line

    def const(self, name: str) -> str:
        return f"k_{name}"

    def cell(self, line: str, shift: int) -> str:
        return f"{line}@{shift}"

    def row(self, line: str) -> str:
        return f"{line}[]"
