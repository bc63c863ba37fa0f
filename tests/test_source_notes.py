"""Each input's "Source / note" (methodology §10.7): free text the model never reads, typed in
a sites file (``gpus.note``) or the Inputs sheet's notes column, and kept by batch, refresh and
collect (the portfolio and its CSV)."""

from __future__ import annotations

import csv
import zipfile

import openpyxl
import pytest

from tests.collect_support import copy, edit_with_openpyxl
from tests.tools import command
from tests.tools.once import build_once
from tokenfactory_xl.core.errors import InputError
from tokenfactory_xl.files.safe_xlsx import open_xlsx, parse_reference
from tokenfactory_xl.tfom.evaluation import run
from tokenfactory_xl.tfom.inputs import NOTE_MAX_CHARS, NOTES_NAME, make_inputs


def _note_cell(wb: openpyxl.Workbook, name: str) -> openpyxl.cell.Cell:
    """The notes column's cell on the row of input ``name`` (through the workbook's names)."""
    sheet, coords = parse_reference(wb.defined_names[f"in_{name}"].attr_text)
    _, notes = parse_reference(wb.defined_names[NOTES_NAME].attr_text)
    column = "".join(ch for ch in notes[0] if ch.isalpha())
    row = "".join(ch for ch in coords[0] if ch.isdigit())
    return wb[sheet][f"{column}{row}"]


def _stored_note(path, name: str) -> object:
    """What the file stores in input ``name``'s note cell, read without openpyxl."""
    with open_xlsx(path) as content:
        sheet, coords = parse_reference(content.defined_names[f"in_{name}"])
        _, notes = parse_reference(content.defined_names[NOTES_NAME])
        column = "".join(ch for ch in notes[0] if ch.isalpha())
        coord = column + "".join(ch for ch in coords[0] if ch.isdigit())
        cells = content.cells(sheet)
        assert coord not in cells.formulas, f"{coord} holds a formula"
        return cells.values.get(coord)


# -- the inputs ---------------------------------------------------------------------------------
def test_a_note_is_kept_as_typed_and_an_empty_one_is_none():
    inputs = make_inputs({"gpus": 2048, "gpus.note": "  PO 4411\r\nsigned 2026-03 ",
                          "pue.NOTE": "site survey", "tef_target.note": "", "batch_share.note":
                          None})
    assert inputs.notes == {"gpus": "PO 4411\nsigned 2026-03", "pue": "site survey"}
    assert make_inputs({"gpus.note": 2024.0}).notes == {"gpus": "2024"}  # a number typed


def test_the_model_never_reads_a_note():
    plain = run(make_inputs({"gpus": 2048}))
    noted = run(make_inputs({"gpus": 2048, "gpus.note": "4,096 in the contract",
                             "pue.note": "1.5 in summer"}))
    assert noted.summary == plain.summary


def test_a_changed_site_keeps_its_notes_unless_the_change_names_them():
    inputs = make_inputs({"gpus.note": "PO 4411", "pue.note": "survey"})
    assert inputs.replace({"pue": 1.4}).notes == {"gpus": "PO 4411", "pue": "survey"}
    assert inputs.replace({"pue.note": ""}).notes == {"gpus": "PO 4411"}


def test_a_note_with_a_hidden_character_is_refused_naming_it():
    with pytest.raises(InputError) as info:
        make_inputs({"gpus.note": "PO\u202e4411"})
    text = str(info.value)
    assert "gpus.note" in text and "U+202E (a bidirectional control) at character 3" in text
    assert "type the note again without them" in text


def test_a_note_with_a_byte_that_is_not_utf8_is_refused_naming_it():
    with pytest.raises(InputError) as info:
        make_inputs({"gpus.note": b"PO \xa74411".decode("utf-8", "surrogateescape")})
    text = str(info.value)
    assert "gpus.note" in text and "U+DCA7 (a byte that is not UTF-8) at character 4" in text
    assert "type the note again in UTF-8" in text


def test_a_note_longer_than_a_cell_is_refused_showing_only_its_start():
    with pytest.raises(InputError) as info:
        make_inputs({"gpus.note": "x" * (NOTE_MAX_CHARS + 1)})
    text = str(info.value)
    assert f"is {NOTE_MAX_CHARS + 1:,} characters long, more than the 32,767" in text
    assert len(text) < 400


def test_a_misspelt_suffix_names_the_note_among_what_is_allowed():
    with pytest.raises(InputError) as info:
        make_inputs({"gpus.nte": "x"})
    assert "is not a scenario; the scenarios are Base, Optimised, Downside (or note" \
        in str(info.value)


# -- the workbook -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def noted_template(tmp_path_factory):
    """A template with two notes, written once per test run: read or copy it."""
    def build(folder):
        path = folder / "noted.xlsx"
        proc = command.run("template", "-o", path, "--set", "gpus.note=PO 4411",
                           "--set", "pue.note==HYPERLINK(\"http://x\")", cwd=folder)
        assert proc.returncode == 0, proc.stderr
        return path

    return build_once(tmp_path_factory, "notes", build)


def test_the_inputs_sheet_has_an_open_text_column_of_notes(noted_template):
    wb = openpyxl.load_workbook(noted_template, read_only=True)  # the Inputs sheet alone read
    ws = wb["Inputs"]
    gpus = _note_cell(wb, "gpus")
    assert ws.cell(4, gpus.column).value == "Source / note"
    assert gpus.value == "PO 4411"
    empty = _note_cell(wb, "tef_target")
    assert empty.value is None
    for cell in (gpus, empty):
        assert cell.protection.locked is False   # typed into on a protected sheet
        assert cell.number_format == "@"         # what is typed later stays text
    # one cell on every input's row, and nothing else in the named range
    _, notes = parse_reference(wb.defined_names[NOTES_NAME].attr_text)
    rows = {int("".join(c for c in coord if c.isdigit())) for coord in notes}
    input_rows = set()
    for name, defined in wb.defined_names.items():
        if name.startswith("in_") and not name.startswith("in_fleet_"):
            _, coords = parse_reference(defined.attr_text)
            input_rows.add(int("".join(c for c in coords[0] if c.isdigit())))
    wb.close()
    assert input_rows <= rows


def test_a_note_that_looks_like_a_formula_is_stored_as_text(noted_template):
    assert _stored_note(noted_template, "pue") == '=HYPERLINK("http://x")'
    with zipfile.ZipFile(noted_template) as archive:
        assert b"<f>HYPERLINK" not in archive.read("xl/worksheets/sheet3.xml")


# -- collect and refresh ------------------------------------------------------------------------
def test_collect_reads_the_notes_without_a_finding_and_puts_them_in_the_portfolio(
        generated, tmp_path):
    from tokenfactory_xl.portfolio.collect import collect

    def note(wb):
        cell = _note_cell(wb, "gpus")
        cell.value = "=2 halls × 512"
        cell.data_type = "s"   # as Excel keeps it in a cell formatted as Text

    source = edit_with_openpyxl(copy(generated["Alpha"], tmp_path), note)
    (audit,) = collect([source])
    assert audit.included
    assert audit.inputs.notes == {"gpus": "=2 halls × 512"}
    assert not [f for f in audit.findings if "J" in f.where and f.severity != "info"]

    others = [copy(generated["Beta"], tmp_path)]
    portfolio, table = tmp_path / "p.xlsx", tmp_path / "p.csv"
    proc = command.run("collect", source, *others, "-o", portfolio, "--summary-csv", table,
                       cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    with table.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    by_site = {row["site_name"]: row for row in rows}
    assert by_site["Alpha"]["gpus.note"] == "'=2 halls × 512"   # a spreadsheet's text mark
    assert by_site["Beta"]["gpus.note"] == ""
    ws = openpyxl.load_workbook(portfolio).worksheets[0]
    headers = [c.value for c in ws[1]]
    column = headers.index("GPUs: source / note")
    cells = {row[0].value: row[column] for row in ws.iter_rows(min_row=2)}
    assert cells["Alpha"].value == "=2 halls × 512" and cells["Alpha"].data_type == "s"
    assert cells["Beta"].value is None


def test_a_portfolio_without_notes_has_no_notes_columns(generated, tmp_path):
    portfolio = tmp_path / "p.xlsx"
    proc = command.run("collect", generated["Alpha"], generated["Beta"], "-o", portfolio,
                       cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    headers = [c.value for c in openpyxl.load_workbook(portfolio).worksheets[0][1]]
    assert not [h for h in headers if "source / note" in str(h)]


def test_refresh_keeps_the_notes_typed_into_the_workbook(generated, tmp_path):
    def note(wb):
        _note_cell(wb, "gpus").value = "PO 4411"
        _note_cell(wb, "electricity_per_kwh").value = "tariff 2027\nindexed"

    source = edit_with_openpyxl(copy(generated["Alpha"], tmp_path), note)
    target = tmp_path / "new.xlsx"
    proc = command.run("refresh", source, "-o", target, "--draws", "50", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _stored_note(target, "gpus") == "PO 4411"
    assert _stored_note(target, "electricity_per_kwh") == "tariff 2027\nindexed"
    assert _stored_note(target, "pue") is None


def test_a_formula_typed_into_a_note_cell_is_not_read_as_the_note(generated, tmp_path):
    from tokenfactory_xl.portfolio.collect import collect

    def formula(wb):
        cell = _note_cell(wb, "gpus")
        cell.value = "=1+1"
        cell.data_type = "f"

    (audit,) = collect([edit_with_openpyxl(copy(generated["Alpha"], tmp_path), formula)])
    assert audit.included and "gpus" not in audit.inputs.notes
    book = openpyxl.load_workbook(generated["Alpha"], read_only=True)
    where = "Inputs!" + _note_cell(book, "gpus").coordinate
    book.close()
    assert [(f.severity, f.code) for f in audit.findings if f.where == where] == [
        ("warning", "formula_added")]


# -- batch --------------------------------------------------------------------------------------
def test_batch_types_a_sites_file_notes_into_each_workbook(tmp_path):
    sites = tmp_path / "sites.csv"
    sites.write_text('site_name,gpus,gpus.note\nLyon,1024,"PO 4411; 1,024 GPUs"\n'
                     "Oslo,2048,\n", encoding="utf-8")
    proc = command.run("batch", sites, "-o", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _stored_note(tmp_path / "out" / "Lyon.xlsx", "gpus") == "PO 4411; 1,024 GPUs"
    assert _stored_note(tmp_path / "out" / "Oslo.xlsx", "gpus") is None


def test_batch_refuses_a_note_with_a_hidden_character_naming_its_row(tmp_path):
    sites = tmp_path / "sites.csv"
    sites.write_text("site_name,gpus,gpus.note\nLyon,1024,PO\u200b4411\n", encoding="utf-8")
    proc = command.run("batch", sites, "-o", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode != 0
    assert "row 2" in proc.stderr and "gpus.note" in proc.stderr
    assert "U+200B (a zero-width space)" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out" / "Lyon.xlsx").exists()
