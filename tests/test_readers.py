"""Other readers of the files the project writes read them with the values the files store.

Finance tools are built on readers that take a workbook's stored values without a spreadsheet
engine: exceljs and SheetJS in Node, python-calamine and pandas in Python. Each one here reads
the committed template, a batch's site workbooks and their portfolio (a site named with accents,
a dash and an emoji; the portfolio holds comments and charts) and the cost curve of ``cost``,
and must see every cell that
openpyxl reads from the same file's XML, with the same value: the file's own stored values are
the reference. The Node readers need ``node`` and the npm packages ``exceljs`` and ``xlsx``,
which the tests install into the gitignored ``.node`` folder the first time (``npm install
--prefix .node exceljs xlsx``, as CI does); without ``node`` those tests skip.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import openpyxl
import pytest

from tests.tools import command
from tests.tools.cells import read_cells
from tests.tools.once import build_once
from tokenfactory_xl.portfolio.batch import run_batch
from tokenfactory_xl.workbook import risk_values as workbook_risk

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "templates" / "TFOM.xlsx"
NODE_SCRIPT = Path(__file__).with_name("readers") / "read_xlsx.js"
#: Where CI installs the Node readers (gitignored); NODE_PATH may name another folder.
NODE_MODULES = ROOT / ".node" / "node_modules"
EMOJI_SITE = "Zürich — Süd 🚀"
FILES = ("template", "emoji site", "rented site", "portfolio", "cost curve")
SWEEP = ROOT / "tests" / "fixtures" / "actuals" / "sglang_llama70b_h200_sweep.jsonl"
#: Error values a cell may store.
ERRORS = frozenset({"#NUM!", "#N/A", "#VALUE!", "#DIV/0!", "#NAME?", "#REF!", "#NULL!"})

SITES = (f"site_name,gpus,measured_tps,horizon_months,ownership,rent_per_gpu_hour\n"
         f"{EMOJI_SITE},256,768000,24,own,\n"
         f"Lyon B200,512,1536000,60,rent,2.4\n")


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """Name → a workbook the project writes: the template, two sites, their portfolio, and
    the cost curve of a real benchmark sweep (a chart and a table of its runs), written once
    per test run."""
    return build_once(tmp_path_factory, "readers", _files)


def _files(folder: Path) -> dict[str, Path]:
    sites = folder / "sites.csv"
    sites.write_text(SITES, encoding="utf-8")
    report = run_batch(sites, folder / "out", risk_draws=100)
    out = {"template": TEMPLATE, "portfolio": folder / "out" / "portfolio.xlsx"}
    for path in report.written:
        out["emoji site" if "🚀" in path.stem else "rented site"] = path
    out["cost curve"] = folder / "curve.xlsx"
    made = command.run("cost", SWEEP, "--gpu-hour", "2.10", "--gpus", "4", "-o",
                       out["cost curve"], cwd=ROOT)
    assert made.returncode == 0, made.stderr
    assert len(out) == 5
    return out


def stored(path: Path) -> dict[str, dict[str, object]]:
    """Sheet → coordinate → stored value, as openpyxl reads the file's XML (no engine; read
    once per process, in read-only mode)."""
    return read_cells(path).values


def differences(expected: dict[str, dict[str, object]], seen: dict[str, dict[str, object]]
                ) -> list[str]:
    """Where a reader's values differ from the stored ones. Dates are compared as the day
    they fall on; an error value (``#NUM!``) as its text or the Node script's
    ``{"error": "#NUM!"}``."""
    bad = []
    for sheet, cells in expected.items():
        theirs = seen.get(sheet)
        if theirs is None:
            bad.append(f"{sheet}: not read")
            continue
        for coord, value in cells.items():
            got = theirs.get(coord)
            if isinstance(value, str) and value in ERRORS:
                ok = got == value or got == {"error": value}
            elif isinstance(value, (dt.date, dt.datetime)):
                ok = _day(got) == (value.date() if isinstance(value, dt.datetime) else value)
            elif isinstance(value, bool):
                ok = got is value or got == value
            elif isinstance(value, (int, float)):
                ok = (isinstance(got, (int, float)) and not isinstance(got, bool)
                      and math.isclose(float(got), float(value), rel_tol=0, abs_tol=0))
            else:
                ok = got == value
            if not ok:
                bad.append(f"{sheet}!{coord}: stored {value!r}, read {got!r}")
    return bad


def _day(value: object) -> dt.date | None:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, dict) and "date" in value:  # from the Node script: an ISO time in UTC
        return dt.datetime.fromisoformat(value["date"].replace("Z", "+00:00")).date()
    return None


# -- python-calamine -----------------------------------------------------------------------------
def calamine_cells(path: Path) -> dict[str, dict[str, object]]:
    calamine = pytest.importorskip("python_calamine")
    from openpyxl.utils import get_column_letter

    book = calamine.CalamineWorkbook.from_path(str(path))
    out: dict[str, dict[str, object]] = {}
    for name in book.sheet_names:
        sheet = book.get_sheet_by_name(name)
        top, left = sheet.start or (0, 0)
        cells = out[name] = {}
        for r, row in enumerate(sheet.to_python(skip_empty_area=False)):
            for c, value in enumerate(row):
                if value != "":
                    cells[f"{get_column_letter(left + c + 1)}{top + r + 1}"] = value
    return out


@pytest.mark.parametrize("name", FILES)
def test_python_calamine_reads_the_stored_values(files, name):
    expected = stored(files[name])
    seen = calamine_cells(files[name])
    assert list(seen) == list(expected)
    bad = differences(expected, seen)
    assert not bad, f"{len(bad)} differences, e.g. {bad[:5]}"


# -- pandas ------------------------------------------------------------------------------------
def test_pandas_reads_the_portfolio_table_by_name(files):
    pd = pytest.importorskip("pandas")
    table = pd.read_excel(files["portfolio"], sheet_name="Portfolio", engine="openpyxl")
    assert sorted(table.iloc[:, 0]) == sorted(["Lyon B200", EMOJI_SITE])


def test_pandas_reads_the_risk_sheets_labels_as_text(files):
    pd = pytest.importorskip("pandas")
    header = workbook_risk.SNAP_HEADER
    first = openpyxl.utils.column_index_from_string(workbook_risk.SNAP_LABEL) - 1
    for engine in ("openpyxl", "calamine"):
        if engine == "calamine":
            pytest.importorskip("python_calamine")
        frame = pd.read_excel(files["emoji site"], sheet_name=workbook_risk.RISK_SHEET,
                              header=header - 1, engine=engine)
        labels = list(frame.columns[first:first + 2 + len(workbook_risk.SNAP_VALUES)])
        assert labels[0] == "Computed for these inputs", labels
        assert all(isinstance(x, str) and not x.strip().isdigit() for x in labels), labels


# -- exceljs and SheetJS (Node) ------------------------------------------------------------------
@pytest.fixture(scope="module")
def node() -> dict[str, str]:
    """The environment that runs the Node script: skips without node; installs the packages
    into the gitignored .node folder the first time (npm), and fails if that cannot be done."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    env = dict(os.environ)
    env["NODE_PATH"] = os.pathsep.join(x for x in (env.get("NODE_PATH"), str(NODE_MODULES))
                                       if x)
    if not _has_readers(env):
        _install_readers()
    if not _has_readers(env):
        pytest.fail("the npm packages exceljs and xlsx are missing and npm could not install "
                    "them: run npm install --prefix .node exceljs xlsx (as .ci/run does)")
    return env


def _has_readers(env: dict[str, str]) -> bool:
    probe = subprocess.run(["node", "-e", "require('exceljs'); require('xlsx')"], env=env,
                           capture_output=True, text=True)
    return probe.returncode == 0


def _install_readers() -> None:
    """npm install the readers into .node, one test process at a time (a lock file held while
    npm runs: the others wait for it, then find the packages there)."""
    npm = shutil.which("npm")
    if npm is None:
        return
    folder = NODE_MODULES.parent
    folder.mkdir(exist_ok=True)
    with open(folder / ".install-lock", "w") as lock:
        try:
            import fcntl
        except ImportError:  # Windows: no lock; npm installs the same files twice at worst
            fcntl = None
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        if not (NODE_MODULES / "exceljs").is_dir() or not (NODE_MODULES / "xlsx").is_dir():
            subprocess.run([npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix",
                            str(folder), "exceljs", "xlsx"], capture_output=True, timeout=600)


def node_cells(node: dict[str, str], path: Path) -> dict[str, dict[str, dict[str, object]]]:
    run = subprocess.run(["node", str(NODE_SCRIPT), str(path)], env=node, capture_output=True,
                         text=True, encoding="utf-8", timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


@pytest.mark.parametrize("name", FILES)
def test_exceljs_and_sheetjs_read_the_stored_values(node, files, name):
    expected = stored(files[name])
    seen = node_cells(node, files[name])
    for reader in ("exceljs", "sheetjs"):
        assert list(seen[reader]) == list(expected), reader
        bad = differences(expected, seen[reader])
        assert not bad, f"{reader}: {len(bad)} differences, e.g. {bad[:5]}"


def test_text_reaches_the_node_readers_whole(node, files):
    # the site's name, with an emoji and non-ASCII letters, typed in and as a formula's result
    seen = node_cells(node, files["emoji site"])
    for reader in ("exceljs", "sheetjs"):
        cover = seen[reader]["Cover"]
        assert cover["B4"] == EMOJI_SITE, reader
        assert EMOJI_SITE in seen[reader]["Timeline"]["A2"], reader
        assert "\ufffd" not in json.dumps(seen[reader], ensure_ascii=False), reader


# -- the package itself ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", FILES)
def test_the_package_is_consistent_and_spelled_as_excel_spells_it(files, name):
    # every relationship resolves to a part of the zip, every content-type override names one,
    # targets are relative, drawings use the xdr: prefix, comments sit at xl/commentsN.xml
    import posixpath
    import re
    import zipfile

    with zipfile.ZipFile(files[name]) as z:
        parts = set(z.namelist())
        for rels in (n for n in parts if n.endswith(".rels")):
            folder = posixpath.dirname(posixpath.dirname(rels))
            for target, mode in re.findall(r'Target="([^"]*)"(?: TargetMode="(\w+)")?',
                                           z.read(rels).decode()):
                if mode == "External":
                    continue
                assert not target.startswith("/"), (rels, target)
                assert posixpath.normpath(posixpath.join(folder, target)) in parts, (rels, target)
        types = z.read("[Content_Types].xml").decode()
        for part in re.findall(r'PartName="/([^"]*)"', types):
            assert part in parts, part
        for drawing in (n for n in parts if re.fullmatch(r"xl/drawings/drawing\d+\.xml", n)):
            assert z.read(drawing).startswith(b"<xdr:wsDr "), drawing
        assert not [n for n in parts if n.startswith("xl/comments/")]
