"""Set a workbook's own xlwings settings: its UDF module and the Python that runs it.

Desktop Excel's xlwings add-in reads its settings from, in this order, a sheet named
``xlwings.conf`` in the active workbook, an ``xlwings.conf`` file beside the workbook, and the
user-wide ``%USERPROFILE%\\.xlwings\\xlwings.conf``; the first that names a setting wins. The
sheet holds one setting a row from A1 down, the name in column A (read without regard to case)
and the value in column B. Writing the settings into the workbook's own sheet changes that
workbook only: every other xlwings workbook of the user keeps the modules and the interpreter
it had.

This script, in the workbook (an ``.xlsm``, its macros kept):

- takes the sheet ``xlwings.conf``, or activates the template's ``_xlwings.conf`` (xlwings'
  starter workbook ships its settings under that name, inactive), or adds one;
- adds the module to ``UDF Modules`` (a ``;``-separated list; modules already listed stay);
- sets ``Interpreter_Win`` to the ``pythonw.exe`` beside the Python given (the one the package
  was installed into), so Excel does not start whatever ``pythonw`` comes first on the PATH;
- keeps every other row, and changes nothing when run twice.

install.ps1 calls it::

    python register_udf_module.py WORKBOOK.xlsm tokenfactory_xl.udfs --interpreter PYTHON
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

SHEET = "xlwings.conf"
#: xlwings' starter workbook carries its settings sheet under this name, inactive.
INACTIVE_SHEET = "_xlwings.conf"
UDF_MODULES = "UDF Modules"
INTERPRETER_WIN = "Interpreter_Win"


def windowless(interpreter: str) -> str:
    """The ``pythonw.exe`` beside ``interpreter`` when there is one (Excel starts the UDF server
    without a console window), else ``interpreter`` itself."""
    path = Path(interpreter)
    if path.name.lower() == "python.exe":
        quiet = path.with_name("pythonw.exe")
        if quiet.exists():
            return str(quiet)
    return str(path)


def _rows(ws) -> list[list[object]]:
    """The settings rows, A1 down to the first empty name cell (as the add-in reads them)."""
    rows = []
    row = 1
    while ws.cell(row, 1).value not in (None, ""):
        rows.append([ws.cell(row, 1).value, ws.cell(row, 2).value])
        row += 1
    return rows


def register(workbook: Path, module: str, interpreter: str | None = None) -> dict[str, str]:
    """Set ``module`` (and ``interpreter``) in ``workbook``'s own settings sheet; return the
    sheet's settings by name as the add-in reads them (upper case)."""
    import openpyxl

    if workbook.suffix.lower() != ".xlsm":
        raise SystemExit(f"{workbook}: the functions are imported into a macro-enabled "
                         "workbook; give an .xlsm file")
    wb = openpyxl.load_workbook(workbook, keep_vba=True)
    if SHEET in wb.sheetnames:
        ws = wb[SHEET]
    elif INACTIVE_SHEET in wb.sheetnames:
        ws = wb[INACTIVE_SHEET]
        ws.title = SHEET
    else:
        ws = wb.create_sheet(SHEET)
    rows = _rows(ws)
    by_name = {str(name).upper(): i for i, (name, _) in enumerate(rows)}
    wanted: dict[str, str] = {}
    listed = rows[by_name[UDF_MODULES.upper()]][1] if UDF_MODULES.upper() in by_name else None
    modules = [m.strip() for m in str(listed or "").split(";") if m.strip()]
    if module not in modules:
        modules.append(module)
    wanted[UDF_MODULES] = ";".join(modules)
    if interpreter:
        wanted[INTERPRETER_WIN] = windowless(interpreter)
    for name, value in wanted.items():
        if name.upper() in by_name:
            rows[by_name[name.upper()]][1] = value
        else:
            # a new row goes right under the last setting: the add-in stops at the first
            # empty name, so the rows below (xlwings' instructions) move down one
            ws.insert_rows(len(rows) + 1)
            rows.append([name, value])
            by_name[name.upper()] = len(rows) - 1
    for i, (name, value) in enumerate(rows, start=1):
        ws.cell(i, 1).value, ws.cell(i, 2).value = name, value
    folder = workbook.resolve().parent
    handle, temp = tempfile.mkstemp(prefix=f".{workbook.stem}-", suffix=".xlsm", dir=folder)
    os.close(handle)
    try:
        wb.save(temp)
        os.replace(temp, workbook)
    except BaseException:
        os.unlink(temp)
        raise
    finally:
        if wb.vba_archive is not None:
            wb.vba_archive.close()
    return {str(name).upper(): "" if value is None else str(value) for name, value in rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workbook", type=Path, help="the macro-enabled workbook (.xlsm)")
    parser.add_argument("module", help="module to register, e.g. tokenfactory_xl.udfs")
    parser.add_argument("--interpreter", metavar="PYTHON",
                        help="the Python the package is installed in (its pythonw.exe is set)")
    args = parser.parse_args(argv)
    settings = register(args.workbook, args.module, args.interpreter)
    print(f"   {args.workbook}, sheet {SHEET}: UDF Modules = {settings[UDF_MODULES.upper()]}"
          + (f"; Interpreter_Win = {settings[INTERPRETER_WIN.upper()]}"
             if args.interpreter else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
