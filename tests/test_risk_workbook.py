"""The Risk sheet (methodology §8): the figures stored beside the inputs they were computed for, a
status that a spreadsheet engine turns STALE when an input changes, and ``refresh``."""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest

from tests.tools import command
from tests.tools.once import BuiltInGroups, build_once
from tokenfactory_xl.cli import main as cli
from tokenfactory_xl.engines.libreoffice import recalculate
from tokenfactory_xl.files.safe_xlsx import parse_reference
from tokenfactory_xl.portfolio.batch import WorkbookFactory, shared_factory
from tokenfactory_xl.tfom import risk
from tokenfactory_xl.tfom.inputs import make_inputs
from tokenfactory_xl.workbook import risk_values as workbook_risk
from tokenfactory_xl.workbook.build import plan

SITE = {"site_name": "Lyon", "gpus": 512, "measured_tps": 500_000,
        "cohorts": [{"cohort": "B200 2028", "online_month": 13, "gpus": 256}]}
DRAWS = 2_000


def cell(wb, defined_name: str, index: int = 0):
    sheet, coords = parse_reference(wb.defined_names[defined_name].attr_text)
    return wb[sheet][coords[index]]


def status(path: Path) -> tuple[str, str]:
    """The Risk sheet's status and the Checks sheet's line, as the engine computed them."""
    wb = openpyxl.load_workbook(path, data_only=True, read_only=True)  # two sheets read, not 12
    try:
        sheet, coord = plan().risk_check
        return wb[workbook_risk.RISK_SHEET][workbook_risk.STATUS].value, wb[sheet][coord].value
    finally:
        wb.close()


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """The site's inputs and its workbook with the draws' figures as ``batch`` writes it (the
    Risk sheet is the builder's: the factory fills the builder's workbook), made once per run:
    read or copy it."""
    inputs = make_inputs(SITE)

    def build(folder: Path) -> Path:
        path = folder / "Lyon.xlsx"
        path.write_bytes(shared_factory().make(inputs, DRAWS)[0])
        return path

    return inputs, build_once(tmp_path_factory, "risk-fresh", build)


@pytest.fixture(scope="module")
def fresh_book(fresh):
    """The fresh workbook as openpyxl loads it (charts included), once per module: only read."""
    return openpyxl.load_workbook(fresh[1])


def test_the_sheet_holds_the_figures_of_its_inputs(fresh, fresh_book):
    inputs, _ = fresh
    wb = fresh_book
    ws = wb[workbook_risk.RISK_SHEET]
    figures = risk.risk(inputs, DRAWS)
    for name in risk.RISK_OUTPUTS:
        want = figures.summary()[name]
        got = cell(wb, f"risk_{name}").value
        assert got == ("none" if want is None else pytest.approx(want, rel=1e-15)), name
    result = risk.tornado(inputs)
    assert ws[f"E{workbook_risk.CENTRE_ROW}"].value == pytest.approx(result.npv, rel=1e-15)
    first = result.drivers[0]
    row = workbook_risk.FIRST_DRIVER
    assert [ws[f"{c}{row}"].value for c in "BCDEF"] == [
        first.name, pytest.approx(first.low, rel=1e-15), pytest.approx(first.high, rel=1e-15),
        pytest.approx(first.npv_low, rel=1e-15), pytest.approx(first.npv_high, rel=1e-15)]
    counts = [ws[f"C{workbook_risk.FIRST_BIN + i}"].value for i in range(workbook_risk.BINS)]
    assert sum(counts) == DRAWS
    assert ws[workbook_risk.DRAWS].value == DRAWS
    assert len(ws._charts) == 2  # the tornado and the histogram


@pytest.fixture(scope="module")
def recalculated_risk(fresh, soffice, tmp_path_factory) -> BuiltInGroups[Path]:
    """What LibreOffice computes for the workbooks the tests below make: name → the
    recalculated file, and "refreshed as written" → the refresh's own output. The workbooks
    of one test are made and recalculated together (one soffice call, as starting it is a
    second of its own), once per run:

    - ``fresh``: the workbook as built, its figures computed for its inputs;
    - ``edited`` and ``fleet``: an input, then a further cohort, changed after the figures;
    - ``refreshed``: ``tokenfactory-xl refresh`` of ``edited`` (the command is run here);
    - ``not computed``: a batch workbook written without draws.
    """
    _, path = fresh

    def edited(folder: Path) -> Path:
        edited = folder / "edited.xlsx"
        wb = openpyxl.load_workbook(path)
        cell(wb, "in_gpus").value = 1024
        wb.save(edited)
        return edited

    def stale(folder: Path) -> dict[str, Path]:
        fleet = folder / "fleet.xlsx"
        wb = openpyxl.load_workbook(path)
        cell(wb, "in_fleet_gpus", 1).value = 64  # a third cohort's GPUs, in the fleet block
        cell(wb, "in_fleet_cohort", 1).value = "Top-up"
        cell(wb, "in_fleet_online_month", 1).value = 20
        wb.save(fleet)
        files = recalculate([path, edited(folder), fleet], folder / "lo")
        return dict(zip(["fresh", "edited", "fleet"], files, strict=True))

    def refreshed(folder: Path) -> dict[str, Path]:
        source = edited(folder)
        before = source.read_bytes()
        code = command.run("refresh", str(source), "--draws", str(DRAWS))
        assert code.returncode == 0, code.stderr
        refreshed = folder / "edited-refreshed.xlsx"
        assert "wrote" in code.stdout and refreshed.exists()
        assert source.read_bytes() == before  # the workbook read is never changed
        without = folder / "without-draws.xlsx"
        data, summary = shared_factory().make(make_inputs(SITE), 0)
        assert "npv_p10" not in summary
        without.write_bytes(data)
        files = recalculate([refreshed, without], folder / "lo")
        return {"refreshed": files[0], "not computed": files[1],
                "refreshed as written": refreshed}

    def build(names: list[str], folder: Path) -> dict[str, Path]:
        return stale(folder) if "fresh" in names else refreshed(folder)

    groups = [["fresh", "edited", "fleet"], ["refreshed", "refreshed as written", "not computed"]]
    return BuiltInGroups(tmp_path_factory, "risk-engine", groups, build)


def test_an_engine_says_current_then_stale_when_an_input_changes(recalculated_risk):
    assert status(recalculated_risk["fresh"]) == ("current", "OK")
    for name in ("edited", "fleet"):
        text, check = status(recalculated_risk[name])
        assert text.startswith("STALE") and "tokenfactory-xl refresh FILE" in text, name
        assert check == "STALE", name


def test_refresh_writes_a_new_workbook_that_is_current(recalculated_risk):
    # the workbook a batch writes for the edited inputs ("what must be true" included, as
    # `batch --solve` fills it), byte for byte
    expected = WorkbookFactory().make(make_inputs({**SITE, "gpus": 1024}), DRAWS,
                                      must_be_true=True)[0]
    assert recalculated_risk["refreshed as written"].read_bytes() == expected
    assert status(recalculated_risk["refreshed"]) == ("current", "OK")


def test_refresh_never_replaces_without_force(fresh, tmp_path, capsys):
    _, path = fresh
    source = tmp_path / "Lyon.xlsx"
    source.write_bytes(path.read_bytes())
    before = source.read_bytes()
    assert cli.main(["refresh", str(source), "-o", str(source), "--draws", "200"]) == 2
    assert "it is the workbook read; add --force" in capsys.readouterr().err
    assert source.read_bytes() == before
    assert cli.main(["refresh", str(source), "-o", str(source), "--draws", "200",
                     "--force"]) == 0
    wb = openpyxl.load_workbook(source, read_only=True)  # one sheet read
    try:
        assert wb[workbook_risk.RISK_SHEET][workbook_risk.DRAWS].value == 200
    finally:
        wb.close()


def test_refresh_refuses_in_place_what_it_would_lose(fresh, tmp_path, capsys):
    _, path = fresh
    source = tmp_path / "Lyon.xlsx"
    wb = openpyxl.load_workbook(path)
    wb["Returns"]["B5"] = "=1+1"  # a formula typed over
    wb.save(source)
    before = source.read_bytes()
    assert cli.main(["refresh", str(source), "-o", str(source), "--force",
                     "--draws", "200"]) == 2
    assert "would be lost in place; write a new file with -o NEW.xlsx" in capsys.readouterr().err
    assert source.read_bytes() == before
    assert cli.main(["refresh", str(source), "--draws", "200"]) == 0
    assert "note: not carried over from" in capsys.readouterr().out


def test_refresh_of_a_workbook_with_bad_inputs_writes_nothing(fresh, tmp_path, capsys):
    _, path = fresh
    source = tmp_path / "Lyon.xlsx"
    wb = openpyxl.load_workbook(path)
    cell(wb, "in_gpus").value = "lots"
    wb.save(source)
    assert cli.main(["refresh", str(source)]) == 2
    err = capsys.readouterr().err
    assert "its inputs cannot be read, so nothing was written" in err and "gpus" in err
    assert not (tmp_path / "Lyon-refreshed.xlsx").exists()


def test_a_batch_without_draws_says_not_computed(recalculated_risk):
    assert status(recalculated_risk["not computed"]) == (workbook_risk.NOT_COMPUTED, "not computed")


def test_the_sensitivity_sheet_shows_the_tornado_of_the_risk_sheet(fresh_book):
    wb = fresh_book
    (chart,) = wb["Sensitivity"]._charts
    refs = [s.val.numRef.f for s in chart.series]
    first = workbook_risk.FIRST_DRIVER
    last = first + len(risk.TORNADO_DRIVERS) - 1
    assert refs == [f"'Risk'!$H${first}:$H${last}", f"'Risk'!$I${first}:$I${last}"]
    assert [s.val.numRef.f for s in wb["Risk"]._charts[0].series] == refs
