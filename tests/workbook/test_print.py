"""The workbook on paper: what LibreOffice prints of a 60-month site, page by page.

Each page's footer names its sheet ("Inputs — page 3 of 12"), so the PDF's text says which
sheet printed how many pages; the height of the words on a page is the size its text prints at.
Every sheet prints centred across the page, so a word whose right end lies beyond the mirror of
the page's leftmost word ran past the printed area (the PDF keeps a clipped text's words).
"""

from __future__ import annotations

import re
import statistics
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.tools.once import build_once
from tokenfactory_xl.cli.workbook import template_bytes
from tokenfactory_xl.engines.libreoffice import convert
from tokenfactory_xl.tfom.inputs import default_inputs
from tokenfactory_xl.workbook import build as wbm

pytestmark = pytest.mark.skipif(subprocess.run(["which", "pdftotext"], capture_output=True)
                                .returncode != 0, reason="poppler's pdftotext is not installed")


@pytest.fixture(scope="module")
def pages(soffice, tmp_path_factory) -> list[tuple[str, float, list[str]]]:
    """(sheet, median height of its words in points, the words that run past the printed
    area) of each printed page of the template, printed once per test run."""
    return build_once(tmp_path_factory, "print", _pages)


def _pages(folder: Path) -> list[tuple[str, float, list[str]]]:
    book = folder / "TFOM.xlsx"
    book.write_bytes(template_bytes(default_inputs(), risk_draws=200))
    (pdf,) = convert([book], folder, "pdf")
    boxes = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], capture_output=True,
                           text=True, check=True).stdout
    out = []
    for page in boxes.split("<page ")[1:]:
        width = float(re.search(r'width="([\d.]+)"', page).group(1))
        words = re.findall(r'xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" '
                           r'yMax="([\d.]+)">([^<]*)</word>', page)
        texts = [w[4] for w in words]
        sheet = next(texts[i - 1] for i in range(1, len(texts)) if texts[i] == "—"
                     and texts[i + 1] == "page")
        right = width - min(float(w[0]) for w in words) + 1  # the printed area's right edge
        out.append((sheet, statistics.median(float(w[3]) - float(w[1]) for w in words),
                    [w[4] for w in words if float(w[2]) > right]))
    return out


def test_a_60_month_site_prints_in_twelve_pages_at_most(pages):
    assert len(pages) <= 12
    count = Counter(sheet for sheet, _, _ in pages)
    # the answer first, each on one page
    assert [sheet for sheet, _, _ in pages[:2]] == ["Cover", "Dashboard"]
    for sheet in ("Cover", "Dashboard", "Returns", "Scenarios", "Years", "Statements",
                  "Checks"):
        assert count[sheet] == 1, sheet
    # 120 monthly columns, the constants and the IRR searches' grid are read on screen
    assert wbm.UNPRINTED_SHEETS == ("Capacity", "Timeline", "IRR")
    assert count["Capacity"] == count["Timeline"] == count["IRR"] == 0
    assert set(count) == set(wbm.SHEETS) - {"Capacity", "Timeline", "IRR"}


def test_the_inputs_print_readable(pages):
    # 11-point text at 70 % or more (every column of the sheet, the fleet block beside the
    # inputs included, printed on one page came out at 3.5 points)
    heights = [height for sheet, height, _ in pages if sheet == "Inputs"]
    assert 1 < len(heights) <= 2
    assert min(heights) >= 7.5


def test_no_text_runs_past_the_printed_page(pages):
    # Returns' longest definitions (an output's note, up to 159 characters) ran on past the
    # page's edge and were cut; they wrap within their column now
    assert {sheet: past for sheet, _, past in pages if past} == {}
