"""The Windows installer's pieces, checked against xlwings' own files and settings reader."""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

import openpyxl
import pytest
import xlwings

ROOT = Path(__file__).resolve().parents[1]
WINDOWS = ROOT / "install" / "windows"
XLWINGS = Path(xlwings.__file__).parent
STARTER = XLWINGS / "quickstart.xlsm"

spec = importlib.util.spec_from_file_location("register", WINDOWS / "register_udf_module.py")
register = importlib.util.module_from_spec(spec)
spec.loader.exec_module(register)


def read_like_the_add_in(workbook: Path) -> dict[str, object]:
    """The active workbook's settings as the add-in's GetConfigFromSheet reads them: the sheet
    xlwings.conf, from A1 down to the first empty name, the name upper-cased."""
    ws = openpyxl.load_workbook(workbook)[register.SHEET]
    settings, row = {}, 1
    while ws.cell(row, 1).value not in (None, ""):
        settings[str(ws.cell(row, 1).value).upper()] = ws.cell(row, 2).value
        row += 1
    return settings


def test_the_add_in_reads_these_settings_from_the_active_workbooks_sheet():
    config = (XLWINGS / "addin" / "Config.bas").read_text(encoding="latin-1")
    assert 'SheetExists(ActiveWorkbook, PROJECT_NAME & ".conf")' in config
    assert "d.Add UCase(cell.Value), cell.Offset(0, 1).Value" in config
    assert 'Set lastCell = sht.Range("A1").End(xlDown)' in config
    main = (XLWINGS / "addin" / "Main.bas").read_text(encoding="latin-1")
    assert 'GetUdfModules = GetConfig("UDF MODULES")' in main
    assert 'GetConfig("INTERPRETER_WIN"' in main + (XLWINGS / "xlwings.bas").read_text(
        encoding="latin-1")


@pytest.fixture
def starter(tmp_path) -> Path:
    target = tmp_path / "TokenFactory.xlsm"
    shutil.copyfile(STARTER, target)
    return target


def test_the_starter_workbook_gets_its_own_module_and_interpreter(starter, tmp_path):
    python = tmp_path / "Python312" / "python.exe"
    python.parent.mkdir()
    python.write_bytes(b"")
    (python.parent / "pythonw.exe").write_bytes(b"")
    register.register(starter, "tokenfactory_xl.udfs", str(python))
    settings = read_like_the_add_in(starter)
    assert settings["UDF MODULES"] == "tokenfactory_xl.udfs"
    assert settings["INTERPRETER_WIN"] == str(python.parent / "pythonw.exe")
    # xlwings' other settings stay, and the template's inactive sheet is now the active one
    assert {"INTERPRETER_MAC", "PYTHONPATH", "DEBUG UDFS", "USE UDF SERVER"} <= set(settings)
    wb = openpyxl.load_workbook(starter, keep_vba=True)
    try:
        assert register.INACTIVE_SHEET not in wb.sheetnames
        assert "xl/vbaProject.bin" in wb.vba_archive.namelist()  # the macros are kept
    finally:
        wb.vba_archive.close()


def test_modules_already_listed_stay_and_a_second_run_changes_nothing(starter):
    wb = openpyxl.load_workbook(starter, keep_vba=True)
    ws = wb[register.INACTIVE_SHEET]
    ws.title = register.SHEET
    row = next(r for r in range(1, 20) if ws.cell(r, 1).value == "UDF Modules")
    ws.cell(row, 2).value = "mymodule;other"
    wb.save(starter)
    wb.vba_archive.close()
    register.register(starter, "tokenfactory_xl.udfs", "C:\\Python311\\pythonw.exe")
    first = read_like_the_add_in(starter)
    register.register(starter, "tokenfactory_xl.udfs", "C:\\Python311\\pythonw.exe")
    assert read_like_the_add_in(starter) == first
    assert first["UDF MODULES"] == "mymodule;other;tokenfactory_xl.udfs"
    assert first["INTERPRETER_WIN"] == "C:\\Python311\\pythonw.exe"


def test_a_workbook_without_settings_gets_a_sheet_of_its_own(tmp_path):
    target = tmp_path / "Mine.xlsm"
    shutil.copyfile(STARTER, target)
    wb = openpyxl.load_workbook(target, keep_vba=True)
    del wb[register.INACTIVE_SHEET]
    wb.save(target)
    wb.vba_archive.close()
    register.register(target, "tokenfactory_xl.udfs")
    assert read_like_the_add_in(target) == {"UDF MODULES": "tokenfactory_xl.udfs"}
    assert not list(tmp_path.glob(".*"))  # no temporary file left beside it


def test_only_a_macro_enabled_workbook_is_changed(tmp_path):
    target = tmp_path / "Plain.xlsx"
    target.write_bytes(b"not touched")
    with pytest.raises(SystemExit, match="give an .xlsm file"):
        register.register(target, "tokenfactory_xl.udfs")
    assert target.read_bytes() == b"not touched"


def test_the_script_installs_what_it_says():
    script = (WINDOWS / "install.ps1").read_text(encoding="utf-8")
    assert '$UdfModule = "tokenfactory_xl.udfs"' in script
    assert re.search(r'"-m", "xlwings.cli", "addin", "install"', script)
    assert "Trust access to the VBA project object model" in script
    assert "Import Functions" in script
    # the workbook's own settings, with the interpreter of -Python
    assert re.search(r'register_udf_module\.py"\), \$Workbook, \$UdfModule,\s+'
                     r'"--interpreter", \$interpreter\)', script)
    assert 'import sys; print(sys.executable)' in script
    assert ".xlwings\\xlwings.conf are not touched" in script
    # the files it relies on are where it looks for them
    assert STARTER.is_file()
    assert (WINDOWS / "register_udf_module.py").is_file()
