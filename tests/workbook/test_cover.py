"""The Cover says which model and which specification computed the workbook, and when it was
built: the date is each workbook's own value (``SOURCE_DATE_EPOCH`` when set, today otherwise),
never a date kept in the template built once."""

from __future__ import annotations

import datetime as dt
import io
import os

import openpyxl
from openpyxl.utils import get_column_letter

from tests.tools import command
from tokenfactory_xl import __version__
from tokenfactory_xl.cli.workbook import template_bytes
from tokenfactory_xl.tfom.inputs import default_inputs, make_inputs
from tokenfactory_xl.workbook import build as wbm

# 2026-03-15 23:59:59 UTC, a second before the next day
LATE_ON_15_MARCH = int(dt.datetime(2026, 3, 15, 23, 59, 59, tzinfo=dt.timezone.utc).timestamp())


def cover(data: bytes):  # type: ignore[no-untyped-def]
    """The Cover as openpyxl reads it, read-only: that sheet alone is parsed, not all 14."""
    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True)
    return book["Cover"]


def values(ws) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Coordinate → value of every cell of a sheet, blank ones as ``None``."""
    return {f"{get_column_letter(c)}{r}": value
            for r, row in enumerate(ws.iter_rows(values_only=True), start=1)
            for c, value in enumerate(row, start=1)}


def labelled(ws, label: str):  # type: ignore[no-untyped-def]
    row = next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == label)
    return ws.cell(row, 2).value


def test_cover_shows_model_and_specification_versions_and_the_build_date(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(LATE_ON_15_MARCH))
    ws = cover(template_bytes(default_inputs(), 0))
    assert labelled(ws, "Model version") == __version__
    assert labelled(ws, "Specification version") == 3
    sheet, coord = wbm.plan().build_date
    assert sheet == "Cover"
    assert ws[coord].value.date() == dt.date(2026, 3, 15)  # the UTC day, not the next
    assert ws[coord].number_format == "yyyy-mm-dd"
    assert labelled(ws, "Built on") == ws[coord].value


def test_same_inputs_same_bytes_and_another_day_changes_only_the_date(monkeypatch):
    site = make_inputs({"gpus": 512})
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(LATE_ON_15_MARCH))
    first, again = template_bytes(site, 0), template_bytes(site, 0)
    assert first == again
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(LATE_ON_15_MARCH + 1))
    later = template_bytes(site, 0)
    assert later != first
    sheet, coord = wbm.plan().build_date
    assert cover(later)[coord].value.date() == dt.date(2026, 3, 16)
    old, new = values(cover(first)), values(cover(later))
    differ = [c for c in new.keys() | old.keys() if new.get(c) != old.get(c)]
    assert differ == [coord]


def test_without_source_date_epoch_the_date_is_today(monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    before = dt.date.today()
    ws = cover(template_bytes(default_inputs(), 0))
    after = dt.date.today()
    assert ws[wbm.plan().build_date[1]].value.date() in {before, after}


def test_a_bad_source_date_epoch_is_a_message_and_no_file(tmp_path):
    env = {**os.environ, "SOURCE_DATE_EPOCH": "yesterday"}
    out = command.run("template", "-o", "TFOM.xlsx", cwd=tmp_path, env=env)
    assert out.returncode == 2, out.stderr
    assert "SOURCE_DATE_EPOCH=yesterday" in out.stderr
    assert "seconds since 1970-01-01 UTC" in out.stderr and "Traceback" not in out.stderr
    assert list(tmp_path.iterdir()) == []
