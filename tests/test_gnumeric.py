"""A second open-source engine, Gnumeric, recalculates the workbooks and agrees with the model.

methodology section 9: the workbook computes the same numbers in every engine. Gnumeric
(``ssconvert --recalc``) recomputes the committed template and a batch-generated workbook (two
sites: an owned fleet in the Base scenario, a rented one in the Optimised scenario, a short
horizon); every ``out_`` defined name must equal the Python model's figure for the workbook's
own inputs to a relative 1e-9 (``out_<name>`` the live scenario's, ``out_<name>_<scenario>``
that scenario's, ``out_uplift_<name>`` Optimised − Base), and "none" exactly where the model
has none. The inputs are read from each
workbook's ``in_`` names by the project's own reader (the audit of ``collect``).

When the engine fails, the assertion lists every name it got wrong and, for each error value,
the first formulas that produced it (cells whose error does not come from another cell).
"""

from __future__ import annotations

import csv
import math
import os
import re
import zipfile
from pathlib import Path

import openpyxl
import pytest
from openpyxl.formula.tokenizer import Tokenizer
from openpyxl.utils.cell import range_boundaries

from tests.tools import command
from tests.tools.cells import read_cells
from tests.tools.once import BuiltInGroups, build_once
from tokenfactory_xl.core.catalogue import SCENARIO_NAMES
from tokenfactory_xl.engines import gnumeric
from tokenfactory_xl.portfolio.audit import audit_workbook
from tokenfactory_xl.tfom.evaluation import run
from tokenfactory_xl.tfom.operating_model import OUTPUT_MISSING

# Gnumeric's xlsx has no default cell style; openpyxl says so on every load.
pytestmark = pytest.mark.filterwarnings("ignore:Workbook contains no default style")

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "templates" / "TFOM.xlsx"
RTOL = 1e-9
SITES = [
    {"site_name": "Owned Base", "gpus": 512, "measured_tps": 1_400_000, "horizon_months": 60},
    {"site_name": "Rented Optimised", "gpus": 256, "ownership": "rent", "scenario": "Optimised",
     "measured_tps": 600_000, "horizon_months": 30, "rent_per_gpu_hour": 1.8},
    # version 3: the Downside shuts down in month 24 with its loan prepaid, a demand limit
    {"site_name": "Shutdown Downside", "gpus": 512, "measured_tps": 1_400_000,
     "scenario": "Downside", "shutdown_month.Downside": 24, "debt_share": 0.5,
     "market_mtok_month1": 2_000_000, "resale_decline_per_quarter.Base": 0.12},
    # a Downside that sells nothing: its EBITDA margin and cost per Mtok are "n/m"
    {"site_name": "Nothing sold Downside", "gpus": 128, "measured_tps": 350_000,
     "scenario": "Downside", "horizon_months": 24, "sell_through_start": 0,
     "sell_through_target.Downside": 0},
]


@pytest.fixture(scope="session")
def ssconvert() -> str:
    """Gnumeric's ssconvert; a missing one skips locally and fails under CI=true."""
    path = gnumeric.find_ssconvert()
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("Gnumeric is required under CI=true (apt-get install gnumeric)")
        pytest.skip("Gnumeric is not installed")
    return path


@pytest.fixture(scope="session")
def workbooks(tmp_path_factory) -> dict[str, Path]:
    """The committed template and the batch's workbooks, by a short name."""
    return build_once(tmp_path_factory, "gnumeric-batch", _batch)


def _batch(folder: Path) -> dict[str, Path]:
    sites = folder / "sites.csv"
    columns = sorted({key for row in SITES for key in row}, key=lambda k: k != "site_name")
    with sites.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(SITES)
    proc = command.run("batch", str(sites), "-o", str(folder / "out"), "--quiet", cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    out = {"template": TEMPLATE}
    for row in SITES:
        out[row["site_name"]] = folder / "out" / f"{row['site_name']}.xlsx"
    return out


@pytest.fixture(scope="session")
def recalculated(ssconvert, workbooks, tmp_path_factory) -> BuiltInGroups[Path]:
    """Name → the workbook as Gnumeric recalculated it: one ``ssconvert`` a workbook, each
    run when a test first needs that workbook, once per run."""
    def build(names: list[str], folder: Path) -> dict[str, Path]:
        paths = gnumeric.recalculate([workbooks[n] for n in names], folder)
        return dict(zip(names, paths, strict=True))

    groups = [[name] for name in workbooks]
    return BuiltInGroups(tmp_path_factory, "gnumeric-recalculated", groups, build)


def expected_outputs(path: Path) -> dict[str, float | None]:
    """``out_…`` name → the model's figure for the workbook's own inputs."""
    audit = audit_workbook(path)
    assert audit.inputs is not None, [str(f) for f in audit.findings]
    result = run(audit.inputs)
    out = {f"out_{k}": v for k, v in result.summary.items()}
    # Optimised − Base of an output is out_uplift_<name>; a step of its bridge is already
    # named uplift_npv_<step>
    out |= {f"out_{k}" if k.startswith("uplift_") else f"out_uplift_{k}": v
            for k, v in result.uplift.items()}
    for scenario in SCENARIO_NAMES:
        out |= {f"out_{k}_{scenario.lower()}": v
                for k, v in run(audit.inputs, scenario).summary.items()}
    return out


def missing_text(name: str) -> str:
    """What the output ``out_…`` shows without a figure: "n/m" for a ratio without meaning,
    else "none" (an Optimised − Base uplift included)."""
    output = name.removeprefix("out_")
    for scenario in SCENARIO_NAMES:
        output = output.removesuffix(f"_{scenario.lower()}")
    return OUTPUT_MISSING.get(output, "none")


def agrees(got: object, want: float | None, missing: str = "none") -> bool:
    if want is None:
        return got == missing
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return False
    return math.isclose(got, want, rel_tol=RTOL, abs_tol=1e-9 * max(1.0, abs(want)) if not
                        want else 0.0)


def engine_values(path: Path) -> dict[str, object]:
    """``out_…`` name → the value Gnumeric stored for it."""
    cells = read_cells(path)
    assert not [n for n in cells.wider if n.startswith("out_")], "an output that is not one cell"
    return {name: cells.named(name) for name in cells.names if name.startswith("out_")}


def first_errors(source: Path, computed: Path) -> list[str]:
    """Cells whose error value comes from their own formula, not from a cell they refer to."""
    formulas = openpyxl.load_workbook(source)
    values = openpyxl.load_workbook(computed, data_only=True)
    names = {n: list(d.destinations) for n, d in formulas.defined_names.items()}

    def error(value: object) -> bool:
        return isinstance(value, str) and value.startswith("#")

    def cells(sheet: str, ref: str) -> list[object]:
        try:
            c1, r1, c2, r2 = range_boundaries(ref.replace("$", ""))
        except ValueError:
            return []
        ws = values[sheet]
        return [ws.cell(row=r, column=c).value for r in range(r1, r2 + 1)
                for c in range(c1, c2 + 1)]

    def precedents(sheet: str, formula: str) -> list[object]:
        found = []
        for token in Tokenizer(formula).items:
            if token.type != "OPERAND" or token.subtype != "RANGE":
                continue
            if token.value in names:
                for target_sheet, ref in names[token.value]:
                    found += cells(target_sheet, ref)
            elif "!" in token.value:
                target_sheet, ref = token.value.rsplit("!", 1)
                found += cells(target_sheet.strip("'"), ref)
            else:
                found += cells(sheet, token.value)
        return found

    report: dict[tuple[str, str], list[str]] = {}
    for ws in formulas.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                if not (isinstance(cell.value, str) and cell.value.startswith("=")):
                    continue
                got = values[ws.title][cell.coordinate].value
                if error(got) and not any(error(p) for p in precedents(ws.title, cell.value)):
                    shape = re.sub(r"\$?\b[A-Z]{1,3}\$?\d+\b", "·", cell.value)
                    report.setdefault((f"{got} {shape}", ws.title), []).append(cell.coordinate)
    return [f"{sheet}!{coords[0]} ({len(coords)} cells like it): {what}"
            for (what, sheet), coords in report.items()]


@pytest.mark.parametrize("name", ["template", *(row["site_name"] for row in SITES)])
def test_gnumeric_computes_every_output_as_the_model(name, workbooks, recalculated):
    want = expected_outputs(workbooks[name])
    got = engine_values(recalculated[name])
    assert got, "the workbook has no out_ names"
    assert set(got) <= set(want), sorted(set(got) - set(want))
    wrong = [f"{n}: Gnumeric {got[n]!r}, model {want[n]!r}" for n in sorted(got)
             if not agrees(got[n], want[n], missing_text(n))]
    if wrong:
        causes = first_errors(workbooks[name], recalculated[name])
        pytest.fail(f"{len(wrong)} of {len(got)} outputs differ in Gnumeric:\n  "
                    + "\n  ".join(wrong) + "\nfirst formulas giving an error:\n  "
                    + "\n  ".join(causes or ["none"]))


def test_gnumeric_recalculates_instead_of_keeping_stored_values(ssconvert, workbooks, tmp_path):
    """A stored value that is wrong on purpose must not survive: the engine really computes."""
    source = workbooks[SITES[0]["site_name"]]
    book = openpyxl.load_workbook(source, read_only=True)  # the names, no sheet parsed
    ((sheet, ref),) = book.defined_names["out_tef_now"].destinations
    index = book.sheetnames.index(sheet) + 1
    book.close()
    part = f"xl/worksheets/sheet{index}.xml"
    cell = re.compile(rb'(<c r="' + ref.replace("$", "").encode() + rb'"[^>]*>.*?<v>)([^<]*)(</v>)',
                      re.S)
    tampered = tmp_path / "tampered.xlsx"
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(tampered, "w") as zout:
        for info in zin.infolist():
            body = zin.read(info)
            if info.filename == part:
                body, count = cell.subn(rb"\g<1>0.123456\g<3>", body)
                assert count == 1, "the stored value of out_tef_now was not found"
            zout.writestr(info, body)
    (computed,) = gnumeric.recalculate([tampered], tmp_path / "out")
    got = engine_values(computed)["out_tef_now"]
    assert got == pytest.approx(1_400_000 / (512 * 10_000), rel=RTOL)  # measured ÷ theoretical


def test_gnumeric_recalculates_the_statements_as_the_model(workbooks, recalculated):
    """methodology §10.4 in Gnumeric: every cell of the template's Statements sheet (each
    scenario's income statement, cash-flow statement and balance sheet by calendar year) is the
    model's figure, blank after the horizon's last year, and the master check says OK."""
    from tokenfactory_xl.tfom import operating_model as om
    from tokenfactory_xl.workbook import build as wbm

    result = run(audit_workbook(workbooks["template"]).inputs)
    cells = read_cells(recalculated["template"])
    plan = wbm.plan()
    years = int(result.values["fiscal_years"])
    wrong = []
    for sc in om.SCENARIOS:
        for line in om.STATEMENT_LINES[sc.key]:
            placement = plan.lines[line.name]
            assert placement.sheet == "Statements"
            for k, coord in enumerate(placement.coords):
                got = cells.get("Statements", coord)
                want = float(result.values[line.name][k])
                if k >= years:
                    ok = got in (None, "")
                else:
                    ok = isinstance(got, (int, float)) and math.isclose(
                        got, want, rel_tol=RTOL, abs_tol=1e-6)
                if not ok:
                    wrong.append(f"{line.name} {coord}: Gnumeric {got!r}, model {want!r}")
    assert not wrong, f"{len(wrong)} cells differ, e.g. {wrong[:5]}"
    assert cells.named("check_master") == "OK"
