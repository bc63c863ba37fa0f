"""Write tests/data/excel_builtin_functions.txt: Excel's built-in worksheet function names.

No Excel function of tokenfactory_xl may take a built-in's name (Office.js would refuse it and
classic Excel would shadow the built-in). The list is the union of two published tables, so it
can be rebuilt and its origin checked::

    python -m tests.tools.builtin_functions
"""

from __future__ import annotations

import os
from pathlib import Path

import formulas
import openpyxl
from formulas.functions import get_functions
from openpyxl.utils.formulas import FORMULAE

TARGET = Path(__file__).resolve().parents[1] / "data" / "excel_builtin_functions.txt"
# File-format prefixes of newer functions (Excel writes XLOOKUP as _xlfn.XLOOKUP).
PREFIXES = ("_XLFN._XLWS.", "_XLFN.", "_XLWS.", "_XLETA.")


def names() -> list[str]:
    found = set(FORMULAE)
    for name in get_functions():
        name = name.upper()
        for prefix in PREFIXES:
            if name.startswith(prefix):
                name = name[len(prefix):]
        if not name.startswith("_"):
            found.add(name)
    return sorted(found)


def main() -> None:
    header = (
        "# Excel built-in worksheet function names, one a line, upper case.\n"
        "# Assembled for the tokenfactory_xl tests (no custom function may take one of these"
        " names) as the\n# union of two published function tables:\n"
        f"#   - openpyxl {openpyxl.__version__}: openpyxl.utils.formulas.FORMULAE"
        " (Excel's function list);\n"
        f"#   - formulas {formulas.__version__}: formulas.functions.get_functions() keys,"
        " with the file-format\n#     prefixes _xlfn. / _xlws. removed (newer functions such"
        " as XLOOKUP, FILTER, UNIQUE).\n"
        "# Regenerate: python -m tests.tools.builtin_functions\n"
    )
    temp = TARGET.with_name(TARGET.name + ".tmp")
    temp.write_text(header + "\n".join(names()) + "\n", encoding="utf-8")
    os.replace(temp, TARGET)
    print(f"wrote {TARGET.name}: {len(names())} names")


if __name__ == "__main__":
    main()
