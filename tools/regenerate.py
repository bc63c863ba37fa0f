"""Rebuild the files the repository commits but nobody edits by hand.

- ``templates/TFOM.xlsx``: the TFOM workbook of the default site, as ``tokenfactory-xl
  template`` writes it (every formula with its value stored);
- ``install/xlwings-lite/main.py`` and ``requirements.txt``: the Excel functions for xlwings
  Lite, as ``tokenfactory-xl lite`` writes them.

Both are marked generated in ``.gitattributes``. The tests compare each with what this script
builds (``tests/test_generated.py``) and, when one differs, say to run::

    python tools/regenerate.py            # rewrite the stale files, say which
    python tools/regenerate.py --check    # only say which are stale (exit status 1 if any)

The template's values are compared to 1e-12 and its Cover's build date not at all (it is the
day the file is written; ``SOURCE_DATE_EPOCH`` fixes it); the bundle byte for byte.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TEMPLATE = ROOT / "templates" / "TFOM.xlsx"
LITE = ROOT / "install" / "xlwings-lite"
COMMAND = "python tools/regenerate.py"


def built_template() -> bytes:
    from tokenfactory_xl.cli.workbook import template_bytes
    from tokenfactory_xl.tfom.inputs import default_inputs

    return template_bytes(default_inputs())


def built_lite() -> dict[str, bytes]:
    from tokenfactory_xl.addin import lite

    return {lite.MAIN: lite.main_py().encode("utf-8"),
            lite.REQUIREMENTS: lite.requirements_txt().encode("utf-8")}


#: A number in a worksheet's XML, as the comparison reads it.
NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def xlsx_differences(got: bytes, want: bytes, rel: float = 1e-12) -> list[str]:
    """Where two workbooks differ beyond rounding: the parts, and in each part its text with
    every number compared to a relative ``rel`` (another numpy or libm build may change the
    last digits of a logarithm or a power, and so of the figures computed from them)."""
    with zipfile.ZipFile(io.BytesIO(got)) as a, zipfile.ZipFile(io.BytesIO(want)) as b:
        if a.namelist() != b.namelist():
            return [f"parts {a.namelist()} != {b.namelist()}"]
        found = []
        for name in a.namelist():
            x, y = a.read(name), b.read(name)
            if x == y:
                continue
            tx, ty = x.decode("utf-8", "replace"), y.decode("utf-8", "replace")
            if NUMBER.split(tx) != NUMBER.split(ty):
                found.append(f"{name}: the text differs, not only its numbers")
                continue
            for p, q in zip(NUMBER.findall(tx), NUMBER.findall(ty), strict=True):
                if p != q and abs(float(p) - float(q)) > rel * max(abs(float(p)), abs(float(q))):
                    found.append(f"{name}: {p} != {q}")
                    break
        return found


def without_build_date(data: bytes) -> bytes:
    """``data`` with the Cover's build date cell emptied: the one value that changes with the
    day a workbook is written, not with its inputs."""
    from tokenfactory_xl.workbook import build

    sheet, coord = build.plan().build_date
    part = f"xl/worksheets/sheet{build.SHEETS.index(sheet) + 1}.xml"
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            text = src.read(info)
            if info.filename == part:
                text, count = re.subn(rf'(<c r="{coord}"[^>]*>)<v>[^<]*</v>'.encode(), rb"\1",
                                      text)
                assert count == 1, f"no build date at {sheet}!{coord}"
            dst.writestr(info, text)
    return out.getvalue()


def stale_template(built: bytes) -> list[str]:
    """What differs between the committed template and ``built`` (the build date aside)."""
    if not TEMPLATE.exists():
        return [f"{TEMPLATE.name} is missing"]
    return xlsx_differences(without_build_date(TEMPLATE.read_bytes()),
                            without_build_date(built))


def stale_lite(built: dict[str, bytes]) -> list[str]:
    return [name for name, data in built.items()
            if not (LITE / name).exists() or (LITE / name).read_bytes() != data]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/regenerate.py", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true",
                        help="only say which generated files are stale (exit status 1 if any)")
    args = parser.parse_args(argv)
    from tokenfactory_xl.files.disk import write_atomically

    template = built_template()
    lite = built_lite()
    stale = []
    if stale_template(template):
        stale.append(TEMPLATE)
        if not args.check:
            write_atomically(TEMPLATE, template)
    for name in stale_lite(lite):
        stale.append(LITE / name)
        if not args.check:
            write_atomically(LITE / name, lite[name])
    for path in stale:
        print(f"{'stale' if args.check else 'rewrote'}: {path.relative_to(ROOT)}")
    if not stale:
        print("every generated file is current")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
