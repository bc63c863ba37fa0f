"""Register a Python module as xlwings UDF module in the user's xlwings settings file.

Desktop Excel's xlwings add-in looks up the setting ``UDF MODULES`` (a ``;``-separated list of
module names) in ``%USERPROFILE%\\.xlwings\\xlwings.conf`` when the user clicks "Import
Functions". That file holds one ``"KEY","VALUE"`` pair a line, read by VBA's ``Input #`` in the
ANSI code page; ``xlwings config create`` and the ribbon write it the same way.

This script adds the module to that list and keeps every other line (and every module already
listed) as it was; running it twice changes nothing. install.ps1 calls it::

    python register_udf_module.py tokenfactory_xl.udfs [--config PATH]
"""

from __future__ import annotations

import argparse
import locale
import os
import re
import sys
from pathlib import Path

KEY = "UDF MODULES"
_LINE = re.compile(r'^\s*"UDF MODULES"\s*,\s*"([^"]*)"\s*$', re.IGNORECASE)


def default_config() -> Path:
    return Path(os.path.expanduser("~")) / ".xlwings" / "xlwings.conf"


def register(module: str, config: Path) -> list[str]:
    """Add ``module`` to the UDF modules of ``config``; return the modules now listed."""
    encoding = locale.getpreferredencoding(False)  # the ANSI code page on Windows
    lines: list[str] = []
    if config.exists():
        lines = config.read_text(encoding=encoding, errors="surrogateescape").splitlines()
    kept, modules = [], []
    for line in lines:
        match = _LINE.match(line)
        if match:
            modules += [m.strip() for m in match[1].split(";") if m.strip()]
        else:
            kept.append(line)
    if module not in modules:
        modules.append(module)
    kept.append(f'"{KEY}","{";".join(modules)}"')
    config.parent.mkdir(parents=True, exist_ok=True)
    temp = config.with_name(config.name + ".tmp")
    temp.write_text("\n".join(kept) + "\n", encoding=encoding, errors="surrogateescape")
    os.replace(temp, config)
    return modules


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("module", help="module to register, e.g. tokenfactory_xl.udfs")
    parser.add_argument("--config", type=Path, default=default_config(),
                        help="settings file (default: ~/.xlwings/xlwings.conf)")
    args = parser.parse_args(argv)
    modules = register(args.module, args.config)
    print(f"   {args.config} lists UDF modules: {';'.join(modules)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
