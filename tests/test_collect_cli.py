"""``tokenfactory-xl collect`` for real: round trip through the batch, hostile folders, outputs.

The portfolio is checked against the Python model run on the inputs the test itself typed (the
sites file plus the edits), never against what collect read.
"""

from __future__ import annotations

import csv
import os
import subprocess
import zipfile
from pathlib import Path

import openpyxl
import pytest

from tests.tools import command
from tokenfactory_xl.files.safe_xlsx import OLE2_MAGIC
from tokenfactory_xl.portfolio import book as pf
from tokenfactory_xl.tfom.evaluation import run
from tokenfactory_xl.tfom.inputs import make_inputs
from tokenfactory_xl.tfom.operating_model import OUTPUT_NAMES

from .collect_support import (
    SITES,
    copy,
    edit_with_openpyxl,
    fingerprint,
    rewrite_member,
    set_input,
    site_rows,
)

ROOT = Path(__file__).resolve().parents[1]


def collect(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    return command.run("collect", *map(str, args), cwd=cwd)


def portfolio_rows(path: Path) -> dict[str, dict[str, object]]:
    """Site name → the portfolio's row, keyed by its column headers."""
    ws = openpyxl.load_workbook(path, data_only=True).worksheets[0]
    rows = list(ws.iter_rows(values_only=True))
    # Each header's comment starts with the column's name ("npv: NPV [USD]").
    header = [c.comment.text.split(":")[0] for c in ws[1]]
    out = {}
    for row in rows[1:]:
        record = dict(zip(header, row, strict=False))
        if record.get("site_name") in (None, "Total", "Totals") or record["site_name"] \
                not in SITES:
            continue
        out[record["site_name"]] = record
    return out


def assert_row_is_model(row: dict[str, object], expected: dict[str, float | None]) -> None:
    for name in OUTPUT_NAMES:
        if name not in row:
            continue
        want, got = expected[name], row[name]
        if got is None and name in pf.APPLIES_WHEN:  # blank where it does not apply
            assert row.get("ownership") != pf.APPLIES_WHEN[name], name
            continue
        if want is None:
            assert got in (None, ""), name
        else:
            assert got == pytest.approx(want, rel=1e-12), name


def test_round_trip_edited_inputs_reach_the_portfolio(generated, tmp_path):
    folder = tmp_path / "returned"
    for site in SITES:
        copy(generated[site], folder)
    edits = {
        "Alpha": {"gpus": 1536, "tef_target.Optimised": 0.72},
        "Gamma": {"scenario": "Downside", "availability": 0.97, "sell_through_target.Downside":
                  0.55},
    }

    def typed(changes):
        def edit(wb):
            for key, value in changes.items():
                name, _, scenario = key.partition(".")
                index = ("Base", "Optimised", "Downside").index(scenario) if scenario else 0
                set_input(wb, name, value, index)
        return edit

    for site, changes in edits.items():
        edit_with_openpyxl(folder / f"{site}.xlsx", typed(changes))
    before = fingerprint(folder)

    proc = collect(folder, "-o", tmp_path / "portfolio.xlsx", "--summary-csv",
                   tmp_path / "portfolio.csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert fingerprint(folder) == before  # nothing written to the inputs

    rows = portfolio_rows(tmp_path / "portfolio.xlsx")
    assert sorted(rows) == sorted(SITES)
    with open(tmp_path / "portfolio.csv", newline="", encoding="utf-8") as handle:
        csv_rows = {r["site_name"]: r for r in csv.DictReader(handle)}
    for site in SITES:
        expected = run(make_inputs({**site_rows()[site], **edits.get(site, {})})).summary
        assert_row_is_model(rows[site], expected)
        assert float(csv_rows[site]["npv"]) == pytest.approx(expected["npv"], rel=1e-12)
    assert rows["Alpha"]["gpus"] == 1536
    # The edited workbooks were saved without values: a note each, not an error; Gamma's live
    # scenario was switched to Downside, which the other two do not share: a warning.
    assert proc.stdout.count("info ") == 1 and proc.stdout.count("ok ") == 1
    (gamma,) = [line for line in proc.stdout.splitlines() if "Gamma.xlsx" in line]
    assert gamma.startswith("warning") and "the live scenario is Downside" in gamma


def bad_files(folder: Path, good: Path) -> dict[str, str]:
    """Every kind of bad file, made here; file name → the words its line must carry."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "random.xlsx").write_bytes(os.urandom(4096))
    (folder / "renamed.xlsx").write_text("site_name,gpus\nOslo,1024\n", encoding="utf-8")
    (folder / "old.xls").write_bytes(OLE2_MAGIC + bytes(1024))
    (folder / "locked.xlsx").write_bytes(
        OLE2_MAGIC + bytes(1024) + "EncryptionInfo".encode("utf-16-le") + bytes(64)
        + "EncryptedPackage".encode("utf-16-le"))
    data = good.read_bytes()
    (folder / "truncated.xlsx").write_bytes(data[: len(data) // 3])

    laughs = copy(good, folder, "laughs.xlsx")
    prolog = ('<?xml version="1.0"?><!DOCTYPE w [<!ENTITY a "aaaaaaaaaa">'
              + "".join(f'<!ENTITY a{i} "{("&a;" if i == 1 else f"&a{i - 1};") * 10}">'
                        for i in range(1, 9)) + "]>")
    rewrite_member(laughs, "xl/workbook.xml",
                   lambda d: (prolog + d.decode().split("?>", 1)[-1]).encode())

    bomb = copy(good, folder, "bomb.xlsx")
    with zipfile.ZipFile(bomb, "a", zipfile.ZIP_DEFLATED) as z:
        z.writestr("xl/media/filler.xml", b"\x20" * 12_000_000)

    plain = openpyxl.Workbook()
    plain.active["A1"] = "Budget 2027"
    plain.save(folder / "budget.xlsx")
    return {
        "random.xlsx": "not an Excel workbook",
        "renamed.xlsx": "a CSV renamed",
        "old.xls": "Excel 97-2003 .xls",
        "locked.xlsx": "password-protected",
        "truncated.xlsx": "damaged or truncated",
        "laughs.xlsx": "entity attack",
        "bomb.xlsx": "zip bomb",
        "budget.xlsx": "not a TFOM workbook",
    }


def test_a_folder_of_good_and_hostile_files(generated, tmp_path):
    folder = tmp_path / "inbox"
    expected = bad_files(folder, generated["Alpha"])
    copy(generated["Beta"], folder)
    before = fingerprint(folder)

    proc = collect(folder, "-o", "portfolio.xlsx", "--max-uncompressed", "10MB", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert fingerprint(folder) == before  # hashes and modification times unchanged
    lines = proc.stdout.splitlines()
    for name, words in expected.items():
        [line] = [line for line in lines if f"inbox/{name}" in line]
        assert line.startswith("refused") and words in line, line
    [beta] = [line for line in lines if "inbox/Beta.xlsx" in line]
    assert beta.startswith("ok ")

    report = (tmp_path / "portfolio-report.md").read_text(encoding="utf-8")
    for name, words in expected.items():
        assert "## " in report and f"inbox/{name}" in report and words in report
    assert "1 in the portfolio, 8 left out" in report
    rows = portfolio_rows(tmp_path / "portfolio.xlsx")
    assert list(rows) == ["Beta"]
    assert_row_is_model(rows["Beta"], run(make_inputs(site_rows()["Beta"])).summary)


def test_the_zip_bomb_limit_is_an_option(generated, tmp_path):
    folder = tmp_path / "inbox"
    bomb = copy(generated["Alpha"], folder, "bomb.xlsx")
    with zipfile.ZipFile(bomb, "a", zipfile.ZIP_DEFLATED) as z:
        z.writestr("xl/media/filler.xml", os.urandom(1_000_000).hex().encode())  # ratio ~2
    total = sum(i.file_size for i in zipfile.ZipFile(bomb).infolist())

    refused = collect(bomb, "-o", "a.xlsx", "--max-uncompressed", str(total - 1), cwd=tmp_path)
    assert refused.returncode == 1 and f"{total:,} bytes uncompressed" in refused.stdout
    allowed = collect(bomb, "-o", "b.xlsx", "--max-uncompressed", str(total), cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stdout
    assert list(portfolio_rows(tmp_path / "b.xlsx")) == ["Alpha"]


def test_a_batch_folder_collects_cleanly_and_skips_its_portfolio(generated, tmp_path):
    folder = generated["Alpha"].parent
    assert (folder / "portfolio.xlsx").exists()
    proc = collect(folder, "-o", "checked.xlsx", "--report", "audit.md", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert "3 in the portfolio, 0 left out, 1 skipped; 0 errors, 0 warnings, 1 note" \
        in proc.stdout
    assert (tmp_path / "audit.md").exists() and not (tmp_path / "checked-report.md").exists()
    assert sorted(portfolio_rows(tmp_path / "checked.xlsx")) == sorted(SITES)


def test_outputs_are_never_replaced_without_force(generated, tmp_path):
    good = generated["Alpha"]
    first = collect(good, "-o", "portfolio.xlsx", cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    before = fingerprint(tmp_path)

    again = collect(good, "-o", "portfolio.xlsx", cwd=tmp_path)
    assert again.returncode == 2
    assert again.stderr.strip() == ("tokenfactory-xl: portfolio.xlsx exists; use --force to "
                                    "replace it")
    assert fingerprint(tmp_path) == before

    forced = collect(good, "-o", "portfolio.xlsx", "--force", cwd=tmp_path)
    assert forced.returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["portfolio-report.md",
                                                          "portfolio.xlsx"]  # no temp files


def test_usage_mistakes_exit_2_with_a_message(tmp_path):
    missing = collect("nowhere", "-o", "p.xlsx", cwd=tmp_path)
    assert missing.returncode == 2 and "nowhere: no such file or folder" in missing.stderr
    (tmp_path / "empty").mkdir()
    empty = collect("empty", "-o", "p.xlsx", cwd=tmp_path)
    assert empty.returncode == 2 and "no workbook found in empty" in empty.stderr
    size = collect("empty", "-o", "p.xlsx", "--max-uncompressed", "lots", cwd=tmp_path)
    assert size.returncode == 2 and "'lots' is not a size" in size.stderr
    suffix = collect("empty", "-o", "portfolio.csv", cwd=tmp_path)
    assert suffix.returncode == 2 and "give a name ending in .xlsx" in suffix.stderr
    jobs = collect("empty", "-o", "p.xlsx", "--jobs", "0", cwd=tmp_path)
    assert jobs.returncode == 2 and "--jobs 0: needs at least 1 process" in jobs.stderr
    assert not (tmp_path / "p.xlsx").exists()


def test_workbooks_recalculated_by_libreoffice_audit_clean(generated, tmp_path, soffice):
    # A real spreadsheet engine recalculates and saves the files as a site's Excel would:
    # formulas rewritten in its own spelling, every value stored by it. The audit must find
    # nothing, and LibreOffice's stored values must agree with the Python recomputation.
    from tokenfactory_xl.engines.libreoffice import recalculate
    from tokenfactory_xl.portfolio.collect import collect as collect_files

    edited = copy(generated["Gamma"], tmp_path / "edited")
    edit_with_openpyxl(edited, lambda wb: (set_input(wb, "gpus", 700),
                                           set_input(wb, "tef_target", 0.5, 1)))
    files = recalculate([generated["Alpha"].resolve(), edited.resolve()], tmp_path / "lo")
    audits = collect_files(files)
    assert [a.findings for a in audits] == [[], []]
    changed = {**site_rows()["Gamma"], "gpus": 700, "tef_target.Optimised": 0.5}
    assert audits[1].result.summary == run(make_inputs(changed)).summary
