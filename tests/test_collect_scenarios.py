"""A returned workbook whose live scenario was switched: collect says so, and the portfolio's
totals never add one scenario's NPV to another's."""

from __future__ import annotations

import math
from pathlib import Path

import openpyxl
import pytest

from tests.collect_support import copy, edit_with_openpyxl, set_input
from tests.tools import command
from tokenfactory_xl.portfolio.book import SUMMARY_SHEET


def _totals(path: Path) -> dict[str, tuple[object, str]]:
    ws = openpyxl.load_workbook(path, read_only=True)[SUMMARY_SHEET]
    rows = list(ws.iter_rows(values_only=True))
    return {row[3]: (row[1], row[2]) for row in rows[1:] if len(row) > 3 and row[3]}


def _collect(tmp_path: Path, folder: str, workbooks: dict[str, Path]) -> dict:
    """The totals of collecting ``workbooks`` (file name → workbook) from a folder of their own."""
    for name, path in workbooks.items():
        copy(path, tmp_path / folder, name)
    proc = command.run("collect", folder, "-o", f"{folder}.xlsx", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return _totals(tmp_path / f"{folder}.xlsx")


def test_a_switched_live_scenario_is_flagged_and_the_totals_stay_one_scenario(generated,
                                                                              tmp_path):
    inbox = tmp_path / "inbox"
    for name in ("Alpha", "Beta", "Gamma"):
        copy(generated[name], inbox)

    def switch(wb):
        set_input(wb, "site_name", "Delta")
        set_input(wb, "scenario", "Optimised")

    edit_with_openpyxl(copy(generated["Alpha"], inbox, "Delta.xlsx"), switch)
    proc = command.run("collect", "inbox", "-o", "p.xlsx", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr   # a warning, not an error
    (line,) = [x for x in proc.stdout.splitlines() if "Delta.xlsx" in x]
    assert "the live scenario is Optimised, while 3 of the 4 workbooks' is Base" in line
    totals = _totals(tmp_path / "p.xlsx")
    npv, how = totals["npv"]
    assert npv is None
    assert how.startswith("blank: the sites' live scenarios differ (Base for 3, Optimised "
                          "for 1)")
    assert totals["revenue_total"][0] is None
    # the NPV of each scenario adds up: Delta has Alpha's inputs, so its Base NPV is Alpha's
    alpha = _collect(tmp_path, "alone", {"Alpha.xlsx": generated["Alpha"]})
    three = _collect(tmp_path, "three", {f"{n}.xlsx": generated[n]
                                         for n in ("Alpha", "Beta", "Gamma")})
    assert three["npv"][0] == pytest.approx(three["npv_base"][0], rel=1e-12)  # all Base
    assert totals["npv_base"][0] == pytest.approx(three["npv_base"][0] + alpha["npv_base"][0],
                                                  rel=1e-12)
    assert math.isfinite(totals["npv_optimised"][0])


def test_one_live_scenario_keeps_its_totals(generated, tmp_path):
    totals = _collect(tmp_path, "inbox", {f"{n}.xlsx": generated[n] for n in ("Alpha", "Beta")})
    assert totals["npv"][0] == pytest.approx(totals["npv_base"][0], rel=1e-12)
    assert totals["revenue_total"][0] is not None
