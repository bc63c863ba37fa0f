"""Cohorts tables (methodology §4.1, §6): read beside a sites file (``--cohorts FILE`` or a
``cohorts`` sheet), for one site (``summary``/``template --cohorts``), and read back by collect."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import openpyxl
import pytest

from tests.tools.once import build_once
from tokenfactory_xl.cli import main as cli
from tokenfactory_xl.files.safe_xlsx import parse_reference
from tokenfactory_xl.portfolio.collect import collect
from tokenfactory_xl.sites.cohorts import load_cohorts
from tokenfactory_xl.sites.load import load_sites
from tokenfactory_xl.tfom.evaluation import run
from tokenfactory_xl.tfom.inputs import make_inputs

ROOT = Path(__file__).resolve().parents[1]
SITES = "site_name,gpus,measured_tps\nLyon,512,500000\nOslo,256,200000\n"
COHORTS = ("site_name,cohort,online_month,retire_month,gpus,gpu_model,capex_per_gpu\n"
           "Lyon,B200 2028,13,,256,B200,45000\n"
           "lyon ,B300 2029,25,48,128,B300,\n")  # names match ignoring case and spaces


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def expected_cohorts() -> list[dict[str, object]]:
    """Lyon's two cohorts as make_inputs is given them directly (the Python API)."""
    return [{"cohort": "B200 2028", "online_month": 13, "gpus": 256, "gpu_model": "B200",
             "capex_per_gpu": 45000},
            {"cohort": "B300 2029", "online_month": 25, "retire_month": 48, "gpus": 128,
             "gpu_model": "B300"}]


def main(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


# -- a cohorts file beside a sites file ----------------------------------------------------------
def test_a_cohorts_file_gives_each_site_its_rows(tmp_path):
    sites = load_sites(write(tmp_path / "sites.csv", SITES),
                       cohorts=write(tmp_path / "cohorts.csv", COHORTS))
    assert sites.problems == ()
    lyon, oslo = sites.rows
    want = make_inputs({"site_name": "Lyon", "gpus": 512, "measured_tps": 500000,
                        "cohorts": expected_cohorts()})
    assert lyon.inputs.cohorts == want.cohorts and len(want.cohorts) == 2
    assert oslo.inputs.cohorts == ()
    assert run(lyon.inputs).summary == run(want).summary
    assert run(lyon.inputs).summary["fleet_gpus"] == 512 + 256 + 128


def test_a_cohorts_sheet_of_the_sites_workbook_is_read_like_the_file(tmp_path):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "cohorts"  # the workbook opens on its cohorts sheet: the sites are found anyway
    for line in csv.reader(COHORTS.splitlines()):
        ws.append([int(c) if c.isdigit() else (c or None) for c in line])
    sites_ws = wb.create_sheet("Sites")
    for line in csv.reader(SITES.splitlines()):
        sites_ws.append([int(c) if c.isdigit() else c for c in line])
    wb.save(tmp_path / "sites.xlsx")
    sites = load_sites(tmp_path / "sites.xlsx")
    assert sites.problems == ()
    assert sites.rows[0].inputs.cohorts == make_inputs(
        {"gpus": 512, "cohorts": expected_cohorts()}).cohorts
    assert any("opens on its 'cohorts' sheet; the sites are read from 'Sites'" in n
               for n in sites.notes)


def test_a_hidden_cohorts_sheet_is_refused_not_added_unseen(tmp_path):
    wb = openpyxl.Workbook()
    for line in csv.reader(SITES.splitlines()):
        wb.active.append(line)
    hidden = wb.create_sheet("Cohorts")
    for line in csv.reader(COHORTS.splitlines()):
        hidden.append(line)
    hidden.sheet_state = "hidden"
    wb.save(tmp_path / "sites.xlsx")
    sites = load_sites(tmp_path / "sites.xlsx")
    (problem,) = sites.file_problems
    assert "sheet=Cohorts: of sites.xlsx is hidden" in str(problem)
    assert "unhide the sheet" in str(problem)


def test_cohort_problems_name_the_file_row_and_the_fix(tmp_path):
    write(tmp_path / "sites.csv", SITES)
    write(tmp_path / "cohorts.csv",
          "site_name,cohort,online_month,gpus,capex_per_gpu,salvage_per_gpu\n"
          "Lyon,A,130,256,45000,\n"        # row 2: past the 120-month maximum
          "Osla,B,3,8,,\n"                 # row 3: no such site
          "Oslo,C,3,8,1000,5000\n")        # row 4: salvage above the cohort's capex
    sites = load_sites(tmp_path / "sites.csv", cohorts=tmp_path / "cohorts.csv")
    text = [str(p) for p in sites.problems]
    assert "cohorts.csv row 3: site_name=Osla: is not a site of sites.csv; did you mean " \
           "'Oslo'?" in text
    assert any(t.startswith("cohorts.csv row 2: online_month=130: is out of range") for t in text)
    assert "cohorts.csv row 4: salvage_per_gpu=5000: is more than the cohort's capex_per_gpu " \
           "(1,000); salvage is the resale value of a GPU and cannot exceed what it cost" in text
    assert not sites.rows[0].ok and not sites.rows[1].ok
    assert [str(p) for p in sites.file_problems] == [text[0]]  # the unknown site stops a batch


def test_a_bad_cohorts_header_is_one_problem_with_a_hint(tmp_path):
    write(tmp_path / "sites.csv", SITES)
    write(tmp_path / "cohorts.csv", "site_name,cohort,online_mnth,gpus\nLyon,A,3,8\n")
    text = [str(p) for p in load_sites(tmp_path / "sites.csv",
                                       cohorts=tmp_path / "cohorts.csv").file_problems]
    assert "cohorts.csv row 1: column C=online_mnth: is not a cohort column; did you mean " \
           "online_month?" in text
    assert "cohorts.csv row 1: online_month='': column is missing; add the online_month " \
           "column (a value in every row)" in text


def test_a_semicolon_cohorts_file_reads_decimal_commas(tmp_path):
    write(tmp_path / "sites.csv", SITES)
    write(tmp_path / "cohorts.csv", "site_name;cohort;online_month;gpus;capex_per_gpu;"
          "power_kw_per_gpu\nLyon;A;3;8;45.000;1,4\n")
    sites = load_sites(tmp_path / "sites.csv", cohorts=tmp_path / "cohorts.csv")
    assert sites.problems == ()
    (cohort,) = sites.rows[0].inputs.cohorts
    assert cohort["capex_per_gpu"] == 45000 and cohort["power_kw_per_gpu"] == 1.4


# -- the command line ----------------------------------------------------------------------------
def test_batch_with_cohorts_writes_the_fleet_and_the_portfolio_columns(tmp_path, capsys):
    write(tmp_path / "sites.csv", SITES)
    write(tmp_path / "cohorts.csv", COHORTS)
    status, _, err = main(capsys, "batch", tmp_path / "sites.csv", "--cohorts",
                          tmp_path / "cohorts.csv", "-o", tmp_path / "out", "--quiet",
                          "--summary-csv", tmp_path / "summary.csv")
    assert status == 0, err
    wb = openpyxl.load_workbook(tmp_path / "out" / "Lyon.xlsx", read_only=True)
    sheet, coords = parse_reference(wb.defined_names["in_fleet_gpus"].attr_text)
    assert [wb[sheet][c].value for c in coords[:3]] == [256, 128, None]
    sheet, coords = parse_reference(wb.defined_names["in_fleet_cohort"].attr_text)
    assert wb[sheet][coords[1]].value == "B300 2029"
    wb.close()
    rows = {r["site_name"]: r for r in csv.DictReader(open(tmp_path / "summary.csv",
                                                           encoding="utf-8"))}
    want = run(make_inputs({"site_name": "Lyon", "gpus": 512, "measured_tps": 500000,
                            "cohorts": expected_cohorts()}))
    assert float(rows["Lyon"]["fleet_gpus"]) == 896
    assert float(rows["Lyon"]["npv"]) == want.summary["npv"]
    assert float(rows["Lyon"]["npv_optimised"]) == want.scenarios["Optimised"].summary["npv"]
    assert float(rows["Lyon"]["uplift_npv"]) == want.uplift["npv"]


def test_batch_names_both_files_when_the_cohorts_are_wrong(tmp_path, capsys):
    write(tmp_path / "sites.csv", SITES)
    write(tmp_path / "cohorts.csv", "site_name,cohort,online_month,gpus\nParis,A,3,8\n")
    status, _, err = main(capsys, "batch", tmp_path / "sites.csv", "--cohorts",
                          tmp_path / "cohorts.csv", "-o", tmp_path / "out")
    assert status == 2
    assert "1 problem in " in err and "cohorts.csv, so nothing was written" in err
    assert "cohorts.csv row 2: site_name=Paris: is not a site of sites.csv" in err
    assert not (tmp_path / "out").exists()


def test_summary_and_template_take_one_site_s_cohorts(tmp_path, capsys):
    write(tmp_path / "mine.csv", "cohort,online_month,gpus,gpu_model\nB200 2028,13,256,B200\n")
    status, out, err = main(capsys, "summary", "--json", "--cohorts", tmp_path / "mine.csv")
    assert status == 0, err
    figures = json.loads(out)
    default = run(make_inputs({})).summary["fleet_gpus"]
    assert figures["fleet_gpus"] == default + 256
    assert figures["npv"] == run(make_inputs({"cohorts": [
        {"cohort": "B200 2028", "online_month": 13, "gpus": 256, "gpu_model": "B200"}]})
    ).summary["npv"]
    status, _, err = main(capsys, "template", "-o", tmp_path / "t.xlsx", "--cohorts",
                          tmp_path / "mine.csv")
    assert status == 0, err
    wb = openpyxl.load_workbook(tmp_path / "t.xlsx", read_only=True)
    sheet, coords = parse_reference(wb.defined_names["in_fleet_gpus"].attr_text)
    assert wb[sheet][coords[0]].value == 256
    wb.close()


def test_summary_of_a_site_missing_from_a_cohorts_file_says_so(tmp_path, capsys):
    write(tmp_path / "cohorts.csv", COHORTS)
    status, _, err = main(capsys, "summary", "--cohorts", tmp_path / "cohorts.csv")
    assert status == 2
    assert "has no row in cohorts.csv, whose sites are 'Lyon'" in err
    assert "--set site_name=NAME" in err
    status, out, err = main(capsys, "summary", "--json", "--cohorts", tmp_path / "cohorts.csv",
                            "--set", "site_name=Lyon", "--set", "gpus=512")
    assert status == 0, err
    assert json.loads(out)["fleet_gpus"] == 896


# -- collect reads the fleet back ----------------------------------------------------------------
@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Two sites' workbooks with their cohorts, written by the batch once per test run."""
    def build(folder):
        write(folder / "sites.csv", SITES)
        write(folder / "cohorts.csv", COHORTS)
        assert cli.main(["batch", str(folder / "sites.csv"), "--cohorts",
                         str(folder / "cohorts.csv"), "-o", str(folder / "out"), "--quiet"]) == 0
        return folder / "out"

    return build_once(tmp_path_factory, "cohorts", build)


def test_collect_reads_the_fleet_back_and_finds_nothing(written):
    lyon, oslo = collect([written / "Lyon.xlsx", written / "Oslo.xlsx"])
    assert lyon.findings == [] and oslo.findings == []
    assert lyon.inputs.cohorts == make_inputs({"cohorts": expected_cohorts()}).cohorts
    assert oslo.inputs.cohorts == ()


def fleet_cells(wb, name):
    sheet, coords = parse_reference(wb.defined_names[f"in_fleet_{name}"].attr_text)
    return wb[sheet], coords


def test_a_fleet_edited_by_the_site_reaches_the_model(written, tmp_path):
    wb = openpyxl.load_workbook(written / "Oslo.xlsx")
    for name, value in (("cohort", "H200 top-up"), ("online_month", 7), ("gpus", 64)):
        ws, coords = fleet_cells(wb, name)
        ws[coords[0]] = value
    wb.save(tmp_path / "Oslo.xlsx")
    (audit,) = collect([tmp_path / "Oslo.xlsx"])
    assert [f.code for f in audit.findings if f.severity == "error"] == []
    (cohort,) = audit.inputs.cohorts
    assert (cohort["cohort"], cohort["online_month"], cohort["gpus"]) == ("H200 top-up", 7, 64)
    assert audit.result.summary["fleet_gpus"] == 256 + 64


def test_a_gap_in_the_fleet_block_is_an_error_naming_the_cells(written, tmp_path):
    wb = openpyxl.load_workbook(written / "Oslo.xlsx")
    for name, value in (("cohort", "Late"), ("online_month", 7), ("gpus", 64)):
        ws, coords = fleet_cells(wb, name)
        ws[coords[2]] = value  # cohort 4 filled, cohorts 2 and 3 blank
    wb.save(tmp_path / "Oslo.xlsx")
    (audit,) = collect([tmp_path / "Oslo.xlsx"])
    (finding,) = [f for f in audit.findings if f.severity == "error"]
    assert "cohort 4 is filled but cohort 2" in finding.message
    assert "fill the fleet block's cohort columns from the left" in finding.message
    assert not audit.included


def test_a_bad_fleet_value_is_an_error_at_its_cell(written, tmp_path):
    wb = openpyxl.load_workbook(written / "Lyon.xlsx")
    ws, coords = fleet_cells(wb, "online_month")
    ws[coords[1]] = 500
    wb.save(tmp_path / "Lyon.xlsx")
    (audit,) = collect([tmp_path / "Lyon.xlsx"])
    errors = [f for f in audit.findings if f.severity == "error"]
    assert [(f.code, f.where) for f in errors] == [("input", f"{ws.title}!{coords[1]}")]
    assert errors[0].message.startswith("cohort 3 online_month=500: is out of range")


def test_load_cohorts_reads_a_table_without_site_names_for_one_site(tmp_path):
    table = load_cohorts(write(tmp_path / "c.csv", "cohort,online_month,gpus\nA,2,8\n"),
                         need_site_name=False)
    assert table.problems == () and not table.has_site_name
    assert [r.values for r in table.rows] == [{"cohort": "A", "online_month": "2", "gpus": "8"}]
    strict = load_cohorts(tmp_path / "c.csv")
    assert [p.name for p in strict.problems] == ["site_name"]
