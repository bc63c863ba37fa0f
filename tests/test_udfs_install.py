"""The Windows installer's pieces, checked against xlwings' own files and reader."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import xlwings
import xlwings.utils

ROOT = Path(__file__).resolve().parents[1]
WINDOWS = ROOT / "install" / "windows"
XLWINGS = Path(xlwings.__file__).parent

spec = importlib.util.spec_from_file_location("register", WINDOWS / "register_udf_module.py")
register = importlib.util.module_from_spec(spec)
spec.loader.exec_module(register)


def read_with_xlwings(config: Path, monkeypatch) -> dict[str, str]:
    """The settings as xlwings itself reads the user settings file."""
    monkeypatch.setattr(xlwings, "USER_CONFIG_FILE", str(config))
    return xlwings.utils.read_user_config()


def test_the_key_is_the_one_the_add_in_reads():
    main_bas = (XLWINGS / "addin" / "Main.bas").read_text(encoding="latin-1")
    assert f'GetUdfModules = GetConfig("{register.KEY}")' in main_bas


def test_a_new_settings_file(tmp_path, monkeypatch):
    config = tmp_path / ".xlwings" / "xlwings.conf"
    assert register.register("tokenfactory_xl.udfs", config) == ["tokenfactory_xl.udfs"]
    assert read_with_xlwings(config, monkeypatch) == {"udf modules": "tokenfactory_xl.udfs"}


def test_other_settings_and_modules_are_kept_and_a_second_run_changes_nothing(tmp_path,
                                                                               monkeypatch):
    config = tmp_path / "xlwings.conf"
    config.write_text('"INTERPRETER_WIN","C:\\Python311\\pythonw.exe"\n'
                      '"Udf Modules","mymodule;other"\n"DEBUG UDFS","False"\n')
    register.register("tokenfactory_xl.udfs", config)
    first = config.read_bytes()
    register.register("tokenfactory_xl.udfs", config)
    assert config.read_bytes() == first
    assert read_with_xlwings(config, monkeypatch) == {
        "interpreter_win": "C:\\Python311\\pythonw.exe",
        "debug udfs": "False",
        "udf modules": "mymodule;other;tokenfactory_xl.udfs",
    }
    assert not list(tmp_path.glob("*.tmp"))


def test_the_script_installs_what_it_says():
    script = (WINDOWS / "install.ps1").read_text(encoding="utf-8")
    assert '$UdfModule = "tokenfactory_xl.udfs"' in script
    assert re.search(r'"-m", "xlwings.cli", "addin", "install"', script)
    assert "Trust access to the VBA project object model" in script
    assert "Import Functions" in script
    # the files it relies on are where it looks for them
    assert (XLWINGS / "quickstart.xlsm").is_file()
    assert (WINDOWS / "register_udf_module.py").is_file()
