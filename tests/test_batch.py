"""`tokenfactory-xl batch`: checked first, then one workbook per site that loses nothing."""

from __future__ import annotations

import csv
import datetime as dt
import re
import subprocess
import zipfile
from pathlib import Path

import openpyxl
import pytest

from tests.tools import command
from tests.tools.cells import read_cells
from tests.tools.once import build_once
from tokenfactory_xl.cli import main as cli
from tokenfactory_xl.engines.libreoffice import recalculate
from tokenfactory_xl.files.disk import TEMP_PREFIX
from tokenfactory_xl.portfolio import batch
from tokenfactory_xl.portfolio import book as pf
from tokenfactory_xl.sites.load import read_sites
from tokenfactory_xl.tfom import risk
from tokenfactory_xl.tfom.evaluation import run
from tokenfactory_xl.tfom.operating_model import OUTPUT_NAMES
from tokenfactory_xl.workbook import build as wbm
from tokenfactory_xl.workbook import risk_values as workbook_risk
from tokenfactory_xl.workbook import values as wbv

workbook = pytest.importorskip("tokenfactory_xl.workbook.build")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "templates" / "sites-example.csv"
INJECTIONS = ['=HYPERLINK("http://x","y")', "+cmd", "@SUM(A1)"]


def tfxl(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return command.run(*args, cwd=cwd)


def sites_csv(tmp_path: Path, rows: list[str], header: str = "site_name,gpus,tef_target",
              name: str = "sites.csv") -> Path:
    path = tmp_path / name
    path.write_text(header + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def xlsx_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def defined_cell(wb: openpyxl.Workbook, name: str) -> tuple[str, str]:
    ((sheet, ref),) = list(wb.defined_names[name].destinations)
    return sheet, ref.replace("$", "").split(":")[0]


@pytest.fixture(scope="module")
def example_out(tmp_path_factory) -> Path:
    """The README's main job, run once per test run: the example sites into out/."""
    def build(folder: Path) -> Path:
        out = folder / "out"
        proc = tfxl("batch", "templates/sites-example.csv", "-o", str(out), "--summary-csv",
                    str(folder / "summary.csv"))
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
        return out

    return build_once(tmp_path_factory, "main-job", build)


def test_main_job_writes_five_workbooks_and_the_portfolio(example_out):
    rows = read_sites(EXAMPLE)
    expected = sorted([f"{r.file_stem}.xlsx" for r in rows] + ["portfolio.xlsx"])
    assert xlsx_files(example_out) == expected
    assert len(expected) == 6
    for name in expected:
        with zipfile.ZipFile(example_out / name) as z:
            assert z.testzip() is None


def test_each_workbook_holds_its_site_and_every_stored_value(example_out):
    for row in read_sites(EXAMPLE):
        path = example_out / f"{row.file_stem}.xlsx"
        stored = read_cells(path)
        assert stored.named("in_gpus") == row.inputs["gpus"]
        assert stored.named("in_site_name") == row.inputs["site_name"]
        # Every input and formula cell stores what the Python model says it shows.
        expected = wbv.cell_values(wbm.plan(), row.inputs, figures=workbook_risk.compute(
            row.inputs, batch.BATCH_RISK_DRAWS))
        for sheet, cells in expected.items():
            for coord, value in cells.items():
                got = stored.get(sheet, coord)
                if value in ("", None):
                    assert got in ("", None), (path.name, sheet, coord)
                elif isinstance(value, dt.date) and not isinstance(value, dt.datetime):
                    assert got == dt.datetime.combine(value, dt.time()), (sheet, coord)
                else:
                    assert got == value, (path.name, sheet, coord)
        # The outputs agree with an independent run of the model.
        summary = run(row.inputs).summary
        assert stored.named("out_npv") == pytest.approx(summary["npv"], rel=1e-12)


def test_the_stencil_fills_every_formula_cell_of_the_template():
    factory = batch.shared_factory()  # the batch's own (tests/test_build_cache.py: as a new one)
    # No formula of the template is left without a value to store (it would stay empty).
    assert factory.stencil.unfilled_formulas == {}
    inputs = read_sites(EXAMPLE)[0].inputs
    assert set(factory.stencil.sheets) == set(wbv.cell_values(factory.plan, inputs))
    assert all(factory.stencil.defined_cells.get(f"out_{n}") for n in OUTPUT_NAMES)


def test_a_workbook_is_the_same_whichever_formatter_writes_its_numbers():
    # orjson writes the ~15,000 numbers of a workbook in bulk; without it ``repr`` writes each:
    # the files are byte for byte the same.
    from tokenfactory_xl.workbook import stencil

    factory = batch.shared_factory()
    inputs = read_sites(EXAMPLE)[0].inputs
    fast = factory.workbook_bytes(inputs)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stencil, "_orjson", None)
        assert factory.workbook_bytes(inputs) == fast


def test_positions_kept_between_sites_stay_few_and_change_no_byte(monkeypatch):
    # A factory keeps where each sheet's runs of cells go, site after site; past a bound it lets
    # them go (memory stays flat over any number of sites) and finds them again: the files
    # are the ones a factory that kept everything writes.
    from tokenfactory_xl.workbook import values as wv

    factory = batch.WorkbookFactory()
    sites = [read_sites(EXAMPLE)[0].inputs.replace({"horizon_months": months})
             for months in (36, 120, 48, 36)]
    kept_all = [factory.workbook_bytes(site) for site in sites]
    monkeypatch.setattr(wv, "_BULK_MOST", 2)
    factory._spots.clear()
    for site, expected in zip(sites, kept_all, strict=True):
        assert factory.workbook_bytes(site) == expected
        assert len(factory._spots["bulk"]) <= 2 + 1


def test_workbooks_recalculate_on_open(example_out):
    with zipfile.ZipFile(next(example_out.glob("Oslo*.xlsx"))) as z:
        assert re.search(rb'<calcPr[^>]*fullCalcOnLoad="1"', z.read("xl/workbook.xml"))


def test_stored_values_equal_libreoffice_recalculation(example_out, soffice, tmp_path):
    files = sorted(example_out.glob("*(owned).xlsx"))[:2] + sorted(
        example_out.glob("*(rented).xlsx"))[:1]
    recalculated = recalculate(files, tmp_path / "lo")
    compared = 0
    for ours, theirs in zip(files, recalculated, strict=True):
        formulas = read_cells(ours, data_only=False)
        mine, lo = read_cells(ours).values, read_cells(theirs).values
        # Near an IRR the NPV is a difference of large numbers that cancels to rounding noise
        # (a few 1e-16 of the largest NPV on the IRR sheet); each step follows the sign of
        # that noise, so the IRR sheet's cells agree to 1e-10 of its largest value. The IRR
        # itself, on Returns and Scenarios, agrees to 1e-9 like every other figure.
        noise = 1e-10 * max([abs(v) for v in mine["IRR"].values()
                             if isinstance(v, (int, float))] + [1.0])
        for title, coords in formulas.formulas.items():
            for coord in coords:
                a, b = mine[title].get(coord), lo[title].get(coord)
                where = (ours.name, title, coord, formulas.get(title, coord))
                if a in ("", None) or b in ("", None):
                    assert a in ("", None) and b in ("", None), where
                elif isinstance(a, (int, float)) and not isinstance(a, bool):
                    assert isinstance(b, (int, float)), where
                    # abs 1e-6: a millionth of a currency unit, for sums that cancel
                    tolerance = noise if title == "IRR" else 1e-6
                    assert a == pytest.approx(b, rel=1e-9, abs=tolerance), where
                else:
                    assert a == b, where
                compared += 1
    assert compared > 3 * 5000


def test_portfolio_of_the_main_job(example_out):
    ws = openpyxl.load_workbook(example_out / "portfolio.xlsx").worksheets[0]
    # Each header's comment starts with the column's name ("npv: NPV [USD]").
    header = [c.comment.text.split(":")[0] for c in ws[1]]
    columns = [o.name for o in (*pf.OUTPUT_COLUMNS, *pf.RISK_COLUMNS)]
    assert header[0] == "site_name" and header[-len(columns):] == columns
    names = [ws.cell(row=r, column=1).value for r in range(2, 7)]
    assert names == [r.inputs["site_name"] for r in read_sites(EXAMPLE)]
    assert ws.max_row == 6 and ws.tables["Sites"].ref.endswith("6")  # no totals row under it
    with open(example_out.parent / "summary.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["site_name"] for r in rows] == names
    for r, site in zip(rows, read_sites(EXAMPLE), strict=True):
        result = run(site.inputs)
        assert float(r["npv"]) == result.summary["npv"]
        for sc in ("Base", "Optimised", "Downside"):
            assert float(r[f"npv_{sc.lower()}"]) == result.scenarios[sc].summary["npv"]
        assert float(r["uplift_npv"]) == result.uplift["npv"]
        # the risk columns are tokenfactory-xl risk's figures with the batch's draws
        figures = risk.risk(site.inputs, batch.BATCH_RISK_DRAWS).summary()
        for name in ("npv_p10", "npv_p50", "npv_p90", "prob_npv_negative"):
            assert float(r[name]) == figures[name], name


def test_risk_draws_0_leaves_the_risk_columns_out(tmp_path):
    sites = sites_csv(tmp_path, ["Alpha,2048,0.4"])
    proc = tfxl("batch", str(sites), "-o", str(tmp_path / "out"), "--risk-draws", "0",
                "--summary-csv", str(tmp_path / "s.csv"), "--quiet")
    assert proc.returncode == 0, proc.stderr
    header = (tmp_path / "s.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    # the last columns: the uplift's bridge (methodology §10.3); no risk column
    assert header[-1] == "uplift_npv_programme" and "npv_p10" not in header
    bad = tfxl("batch", str(sites), "-o", str(tmp_path / "out2"), "--risk-draws", "-5")
    assert bad.returncode == 2 and "-5: give 0 (no risk columns) or more draws" in bad.stderr


def test_same_inputs_give_identical_bytes_with_one_or_two_jobs(example_out, tmp_path):
    proc = tfxl("batch", str(EXAMPLE), "-o", str(tmp_path / "again"), "--jobs", "2", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""
    for path in example_out.iterdir():
        assert (tmp_path / "again" / path.name).read_bytes() == path.read_bytes(), path.name


@pytest.mark.parametrize("name", INJECTIONS)
def test_formula_like_site_names_stay_text(tmp_path, name):
    quoted = '"' + name.replace('"', '""') + '"'
    sites = sites_csv(tmp_path, [f"{quoted},2048,0.4"])
    out = tmp_path / "out"
    assert cli.main(["batch", str(sites), "-o", str(out), "--quiet"]) == 0
    (path,) = [p for p in out.iterdir() if p.name != "portfolio.xlsx"]
    wb = openpyxl.load_workbook(path, read_only=True)  # parses only the sheet read
    sheet, ref = defined_cell(wb, "in_site_name")
    assert wb[sheet][ref].value == name and wb[sheet][ref].data_type == "s"
    part = f"xl/worksheets/sheet{wb.sheetnames.index(sheet) + 1}.xml"
    wb.close()
    with zipfile.ZipFile(path) as z:
        xml = z.read(part).decode()
    cell = re.search(rf'<c r="{ref}"[^>]*?(?:/>|>.*?</c>)', xml, re.S).group(0)
    assert 't="inlineStr"' in cell and "<f>" not in cell
    # No formula anywhere in the workbook carries the name: it is only ever a value.
    escaped = name.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    with zipfile.ZipFile(path) as z:
        for part in z.namelist():
            if part.startswith("xl/worksheets/sheet"):
                formulas = re.findall(r"<f\b[^>]*>(.*?)</f>", z.read(part).decode(), re.S)
                assert not any(escaped in f for f in formulas), part
    portfolio = openpyxl.load_workbook(out / "portfolio.xlsx").worksheets[0]
    assert portfolio["A2"].value == name and portfolio["A2"].data_type == "s"


def test_bad_rows_write_nothing_and_list_every_problem(tmp_path):
    sites = sites_csv(tmp_path, ["Alpha,2048,0.4", "Beta,lots,0.4", "Gamma,2048,65", "alpha,2048,"],
                      header="site_name,gpus,tef_target")
    out = tmp_path / "out"
    proc = tfxl("batch", str(sites), "-o", str(out))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "row 3: gpus=lots: is not a number" in proc.stderr
    assert "row 4: tef_target=65: looks like a percentage; enter 65% or 0.65" in proc.stderr
    assert "row 5: site_name=alpha: is the same site name as row 2" in proc.stderr
    assert f"3 problems in {sites}, so nothing was written:" in proc.stderr
    assert not out.exists()


def test_unknown_column_is_named_with_the_nearest_name(tmp_path):
    sites = sites_csv(tmp_path, ["Alpha,own"], header="site_name,ownershp")
    proc = tfxl("batch", str(sites), "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "row 1: column B=ownershp: is not a known input; did you mean ownership?" \
        in proc.stderr


def test_skip_invalid_writes_the_valid_rows_and_lists_the_others(tmp_path):
    sites = sites_csv(tmp_path, ["Alpha,2048,0.4", "Beta,lots,0.4", "Gamma,4096,0.5"])
    out = tmp_path / "out"
    proc = tfxl("batch", str(sites), "-o", str(out), "--skip-invalid")
    assert proc.returncode == batch.EXIT_SKIPPED == 1
    assert "skipped 1 row with problems" in proc.stderr and "row 3: gpus=lots" in proc.stderr
    assert xlsx_files(out) == ["Alpha.xlsx", "Gamma.xlsx", "portfolio.xlsx"]
    ws = openpyxl.load_workbook(out / "portfolio.xlsx").worksheets[0]
    assert [ws.cell(row=r, column=1).value for r in (2, 3)] == ["Alpha", "Gamma"]
    # Nothing valid at all: still an error, and nothing written.
    bad = sites_csv(tmp_path, ["Beta,lots,0.4"], name="bad.csv")
    proc = tfxl("batch", str(bad), "-o", str(tmp_path / "none"), "--skip-invalid")
    assert proc.returncode == 2 and "no valid site row" in proc.stderr
    assert not (tmp_path / "none").exists()


def test_existing_files_are_never_overwritten_without_force(tmp_path):
    sites = sites_csv(tmp_path, ["Alpha,2048,0.4", "Beta,2048,0.5"])
    out = tmp_path / "out"
    assert cli.main(["batch", str(sites), "-o", str(out), "--quiet"]) == 0
    (out / "Beta.xlsx").write_bytes(b"my edited copy")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    proc = tfxl("batch", str(sites), "-o", str(out))
    assert proc.returncode == 2
    assert "3 files to write exist already, so nothing was written" in proc.stderr
    for name in ("Alpha.xlsx", "Beta.xlsx", "portfolio.xlsx"):
        assert f"  - {out / name}\n" in proc.stderr, name
    assert "--force" in proc.stderr and "Traceback" not in proc.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert cli.main(["batch", str(sites), "-o", str(out), "--quiet", "--force"]) == 0
    assert (out / "Beta.xlsx").read_bytes() != b"my edited copy"


def test_an_interrupted_run_leaves_none_of_its_files(tmp_path, monkeypatch):
    sites = sites_csv(tmp_path, [f"Site {i},2048,0.4" for i in range(6)])
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    calls = []
    real = batch.stage

    def failing(path, data):
        calls.append(path)
        if len(calls) == 4:
            # Half the file is on disk under its temporary name when the run dies.
            path.with_name(f"{TEMP_PREFIX}0123456789abcdef-{path.name}.tmp").write_bytes(
                data[: len(data) // 2])
            raise KeyboardInterrupt
        return real(path, data)

    monkeypatch.setattr(batch, "stage", failing)
    with pytest.raises(KeyboardInterrupt):
        batch.run_batch(sites, out)
    # The three workbooks done before were staged, not renamed: all are gone with the half one.
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    monkeypatch.setattr(batch, "stage", real)
    report = batch.run_batch(sites, out)
    assert len(report.written) == 6 and report.exit_status == 0
    for path in report.written:
        with zipfile.ZipFile(path) as z:
            assert z.testzip() is None  # each one complete: every member's CRC checks out


def test_xlsx_sites_file_with_a_named_sheet(tmp_path):
    wb = openpyxl.Workbook()
    wb.active.title = "Notes"
    ws = wb.create_sheet("Sites")
    ws.append(["site_name", "gpus", "ownership", "horizon_months"])
    ws.append(["Dublin", 2048, "rent", 36])
    path = tmp_path / "sites.xlsx"
    wb.save(path)
    out = tmp_path / "out"
    assert cli.main(["batch", str(path), "-o", str(out), "--sheet", "Sites", "--quiet"]) == 0
    assert read_cells(out / "Dublin.xlsx").named("in_horizon_months") == 36


def test_progress_lines_when_not_a_terminal(tmp_path):
    sites = sites_csv(tmp_path, [f"Site {i},2048,0.4" for i in range(20)])
    proc = tfxl("batch", str(sites), "-o", str(tmp_path / "out"))
    assert proc.returncode == 0
    lines = [line for line in proc.stderr.splitlines() if "workbooks written" in line]
    assert 5 <= len(lines) <= 11 and lines[-1].strip().startswith("20/20 workbooks written")
    assert "\r" not in proc.stderr
    assert proc.stdout.startswith("wrote 20 workbooks and portfolio.xlsx")


def test_usage_errors_exit_2_without_traceback(tmp_path):
    for args, message in [
        (["batch", str(tmp_path / "missing.csv"), "-o", str(tmp_path / "o")], "does not exist"),
        (["batch", str(EXAMPLE), "-o", str(tmp_path / "o"), "--jobs", "0"], "--jobs 0"),
        (["batch", str(EXAMPLE), "-o", str(EXAMPLE)], "is a file, not a folder"),
        (["batch", str(EXAMPLE), "-o", str(tmp_path / "o"), "--sheet", "X"], "--sheet"),
    ]:
        proc = tfxl(*args)
        assert proc.returncode == 2, args
        assert message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_progress_bar_on_a_terminal_and_lines_in_a_log():
    import io

    bar = io.StringIO()
    progress = batch.Progress(4, bar, interactive=True)
    for _ in range(4):
        progress.advance()
    text = bar.getvalue()
    assert text.startswith("\r  [") and text.endswith("\n") and text.count("\n") == 1
    assert "[" + "#" * 30 + "] 4/4 workbooks" in text.rsplit("\r", 1)[-1]
    log = io.StringIO()
    progress = batch.Progress(1000, log, interactive=False)
    for _ in range(1000):
        progress.advance()
    lines = log.getvalue().splitlines()
    assert len(lines) == 10 and lines[0].startswith("  100/1,000") and "\r" not in log.getvalue()
    silent = batch.Progress(10, None)
    silent.advance(10)
    assert silent.done == 10


def test_the_portfolio_of_many_sites_is_made_from_compact_summaries():
    """The batch keeps each site's summary as a row of floats and makes the portfolio's entries
    as it reads them; the portfolio and CSV are those of the plain entries, byte for byte."""
    from tokenfactory_xl import make_inputs
    from tokenfactory_xl.portfolio.contents import summary_result

    rows = []
    plain = []
    summaries = batch._Summaries(3)
    for index, gpus in enumerate([512, 1024, 2048]):
        inputs = make_inputs({"site_name": f"S{index}", "gpus": gpus,
                              "measured_tps": gpus * 3000.123456789}, bare="all")
        summary = pf.site_summary(run(inputs))
        summary["payback_months"] = None  # a figure that does not exist stays "none"
        rows.append(inputs)
        plain.append((inputs, summary_result(inputs, dict(summary))))
        summaries.put(index, dict(reversed(list(summary.items()))))  # any order of the outputs
    entries = batch._Entries(rows, summaries)
    assert len(entries) == 3
    assert [e[1].summary for e in entries] == [e[1].summary for e in plain]
    assert entries[1][1].summary["payback_months"] is None
    assert entries[-1][0] is rows[2] and len(entries[1:]) == 2
    assert pf.portfolio_bytes(entries) == pf.portfolio_bytes(plain)
    assert pf.summary_csv_text(entries) == pf.summary_csv_text(plain)


def test_the_shared_default_workbook_is_read_never_changed():
    """The plan, the batch's stencil and the audit's template share one build; reading it for
    the audit and the charts adds no cell (a cell added would change the batch's bytes)."""
    from tokenfactory_xl.portfolio import audit
    from tokenfactory_xl.workbook import build as workbook

    audit.current_template()
    batch.WorkbookFactory()
    shared, fresh = workbook.default_workbook(), workbook.build_workbook(None, risk_draws=0)
    assert {ws.title: len(ws._cells) for ws in shared.worksheets} == {
        ws.title: len(ws._cells) for ws in fresh.worksheets}
    assert workbook.default_workbook_bytes() == workbook.workbook_bytes(fresh)


def test_the_pace_reads_right_at_any_speed(monkeypatch):
    import io
    import types

    clock = iter([0.0, 4.0, 8.0])  # start, then two workbooks 4 s apart
    monkeypatch.setattr(batch, "time", types.SimpleNamespace(perf_counter=lambda: next(clock)))
    log = io.StringIO()
    progress = batch.Progress(2, log, interactive=False)
    progress.advance()
    progress.advance()
    # 1 in 4 s, 2 in 8 s: a quarter of a workbook a second, said as 4.0 s each, never "0/s"
    assert log.getvalue().splitlines() == ["  1/2 workbooks written (4.0 s each)",
                                           "  2/2 workbooks written (4.0 s each)"]
    monkeypatch.undo()
    fast = batch.Progress(100, None)
    fast.done = 100
    assert fast.speed(fast.start + 2.5) == "40 a second"      # 100 in 2.5 s
    fast.done = 5
    assert fast.speed(fast.start + 2.0) == "2.5 a second"     # 5 in 2 s


def test_the_sites_to_write_are_kept_compactly_and_read_back_as_checked(tmp_path):
    """The batch checks the sites file row by row and keeps the sites to write pickled and
    deflated by blocks: five times the rows add less than 250 bytes a row to the traced peak,
    where reading the file whole held some 2.7 KB a row; what the check hands on to the run
    (the sites to write and their targets, made as they are asked for) less than 150 bytes a
    row (the checked inputs alone are 1 KB a site); and each site reads back as checked."""
    import pathlib
    import tracemalloc

    from tests.tools.memory import many_sites, traced_peak
    from tokenfactory_xl.sites.load import SiteRows, load_sites

    def check(count: int) -> int:
        path = many_sites(tmp_path / f"sites-{count}.csv", count)
        return traced_peak(lambda: batch._Checked(SiteRows(path)))

    check(20)  # what is made once a process (caches, layouts) is not the rows'
    small, large = check(600), check(3_000)
    assert (large - small) / 2_400 < 250, (small, large)

    # what the check before anything is written hands on (the sites to write, the targets)
    def plan(count: int) -> int:
        path = tmp_path / f"sites-{count}.csv"
        tracemalloc.start()
        try:
            rows, _skipped, targets = batch.plan_batch(path, tmp_path / "out")
            # pathlib interns each name it parses: the interpreter's table of interned names,
            # grown or rebuilt, is no memory of the sites
            held = tracemalloc.take_snapshot().filter_traces(
                [tracemalloc.Filter(False, pathlib.__file__)])
        finally:
            tracemalloc.stop()
        assert len(rows) == count and len(targets) == count + 1
        return sum(stat.size for stat in held.statistics("filename"))

    plan(20)
    small, large = plan(600), plan(3_000)
    assert (large - small) / 2_400 < 150, (small, large)

    path = tmp_path / "sites-600.csv"
    kept, whole = batch._Checked(SiteRows(path)), load_sites(path)
    assert len(kept.valid_rows) == 600 and not kept.problems and not kept.invalid_rows
    assert [(s.row, s.site_name, s.file_stem, s.inputs) for s in kept.valid_rows] == [
        (r.row, r.site_name, r.file_stem, r.inputs) for r in whole.rows]
    assert list(kept.valid_rows.inputs[-2:]) == [r.inputs for r in whole.rows[-2:]]
