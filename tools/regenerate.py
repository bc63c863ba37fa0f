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

It also keeps the **record of the release's outputs**, ``tests/data/release-<version>.json``:
what the release writes for three sites (``tests/data/release-sites.csv`` and
``release-cohorts.csv``: one with further cohorts and in euros, one with debt, one rented) with
``SOURCE_DATE_EPOCH`` fixed, namely the template, each site's workbook, the portfolio workbook,
its summary CSV and ``summary --json``. A workbook is recorded member by member, in its order:
the SHA-256 of each member's uncompressed bytes (a zip's compressed bytes depend on the build
of zlib), and of its text with every decimal number masked. ``tests/test_release_outputs.py``
compares a build with the record; an intended change of the outputs is accepted with::

    python tools/regenerate.py --accept-outputs   # record the outputs of this code anew

The exact hashes hold on the platform the record names (numpy's version and the SIMD code it
dispatches to, the machine, the C library): the same numpy with its AVX-512 code turned off
(``NPY_DISABLE_CPU_FEATURES``) writes other last digits in 54 members of these files, and the
IRR sheet's searches carry them into the NPVs near a root. Elsewhere the test compares the
texts with numbers masked, which agree.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import platform
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


#: The sites, the cohorts and the build date of the record of the release's outputs.
RELEASE_SITES = ROOT / "tests" / "data" / "release-sites.csv"
RELEASE_COHORTS = ROOT / "tests" / "data" / "release-cohorts.csv"
RELEASE_EPOCH = 1_700_000_000  # 14 November 2023, the Cover's date
RELEASE_COMMAND = f"{COMMAND} --accept-outputs"
#: A decimal number as a value is written (``0.25``, ``-7.45e-09``); cell references,
#: rows and counts have no point and no exponent.
DECIMAL = re.compile(rb"-?\d+(?:\.\d+(?:[eE][-+]?\d+)?|[eE][-+]?\d+)")


def release_record_path() -> Path:
    """The committed record: the one ``tests/data/release-*.json``."""
    found = sorted((ROOT / "tests" / "data").glob("release-*.json"))
    if len(found) != 1:
        raise FileNotFoundError(f"expected one tests/data/release-*.json, found {len(found)}: "
                                f"run `{RELEASE_COMMAND}`")
    return found[0]


@contextlib.contextmanager
def _environment(name: str, value: str):
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old


def built_outputs(folder: Path) -> dict[str, bytes]:
    """What the commands write for the recorded sites, by name, built in ``folder``: the
    template (``TFOM.xlsx``), ``batch --jobs 1`` of :data:`RELEASE_SITES` with
    :data:`RELEASE_COHORTS` (``batch/<site>.xlsx``, ``batch/portfolio.xlsx``,
    ``batch/summary.csv``) and ``summary --json`` (``summary.json``), with
    ``SOURCE_DATE_EPOCH`` at :data:`RELEASE_EPOCH`."""
    from tokenfactory_xl.cli.main import main

    out, printed = folder / "batch", io.StringIO()
    with _environment("SOURCE_DATE_EPOCH", str(RELEASE_EPOCH)), \
            contextlib.redirect_stdout(printed):
        for argv in (["template", "-o", str(folder / "TFOM.xlsx")],
                     ["batch", str(RELEASE_SITES), "--cohorts", str(RELEASE_COHORTS), "-o",
                      str(out), "--jobs", "1", "--risk-draws", "20", "--quiet",
                      "--summary-csv", str(out / "summary.csv")],
                     ["summary", "--json", "-o", str(folder / "summary.json")]):
            status = main(argv)
            if status != 0:
                raise RuntimeError(f"{' '.join(argv[:1])} exited with status {status}")
    return {path.relative_to(folder).as_posix(): path.read_bytes()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def numeric_platform() -> str:
    """What the last digits of the figures depend on: numpy's version and the SIMD code it
    dispatches to, the machine and its C library (its libm)."""
    import numpy

    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # numpy 1
        from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    simd = " ".join(f for f in __cpu_dispatch__ if __cpu_features__.get(f))
    libc = " ".join(platform.libc_ver()).strip() or platform.system()
    return f"numpy {numpy.__version__} ({simd or 'no SIMD'}), {platform.machine()}, {libc}"


def _hashes(data: bytes) -> dict[str, str]:
    return {"sha256": hashlib.sha256(data).hexdigest(),
            "masked": hashlib.sha256(DECIMAL.sub(b"#", data)).hexdigest()}


def output_record(outputs: dict[str, bytes]) -> dict:
    """The record of ``outputs``: for a zip, each member's name and hashes in the zip's order;
    for any other file, its hashes. ``masked`` hashes the text with every decimal number
    masked (:data:`DECIMAL`)."""
    from tokenfactory_xl import __version__

    files: dict[str, dict] = {}
    for name, data in outputs.items():
        if zipfile.is_zipfile(io.BytesIO(data)):
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                files[name] = {"members": [{"name": info.filename, **_hashes(z.read(info))}
                                           for info in z.infolist()]}
        else:
            files[name] = _hashes(data)
    return {"release": __version__, "platform": numeric_platform(),
            "source_date_epoch": RELEASE_EPOCH, "files": files}


def record_differences(got: dict, want: dict, *, exact: bool) -> list[str]:
    """Where the record ``got`` differs from ``want``, each as ``file: what``; ``exact``
    compares each member's bytes, otherwise its text with numbers masked."""
    key = "sha256" if exact else "masked"
    found = [f"{name}: not written (the record has it)"
             for name in want["files"] if name not in got["files"]]
    found += [f"{name}: written, not in the record" for name in got["files"]
              if name not in want["files"]]
    for name, was in want["files"].items():
        now = got["files"].get(name)
        if now is None:
            continue
        if "members" not in was or "members" not in now:
            if "members" in was or "members" in now or now[key] != was[key]:
                found.append(f"{name}: differs")
            continue
        old = [m["name"] for m in was["members"]]
        new = [m["name"] for m in now["members"]]
        if old != new:
            added = [m for m in new if m not in old]
            gone = [m for m in old if m not in new]
            if added or gone:
                found.append(f"{name}: members added {added}, members missing {gone}")
            else:
                k = next(i for i, (a, b) in enumerate(zip(new, old, strict=False))
                         if a != b)
                found.append(f"{name}: members in another order (member {k + 1} is {new[k]}, "
                             f"was {old[k]})")
            continue
        found += [f"{name}: member {a['name']} differs"
                  for a, b in zip(now["members"], was["members"], strict=True) if a[key] != b[key]]
    return found


def release_report(found: list[str], want: dict) -> str:
    """The message of a build that differs from the record ``want``."""
    return "\n".join(
        [f"the outputs differ from release {want['release']}'s "
         f"({release_record_path().relative_to(ROOT)}):"] + [f"  - {f}" for f in found]
        + [f"an intended change: run `{RELEASE_COMMAND}` and commit the record it rewrites"])


def accept_outputs() -> Path:
    """Build the outputs and write their record as ``tests/data/release-<version>.json``
    (replacing any other release's record)."""
    import tempfile

    from tokenfactory_xl import __version__
    from tokenfactory_xl.files.disk import write_atomically

    with tempfile.TemporaryDirectory() as folder:
        record = output_record(built_outputs(Path(folder)))
    path = ROOT / "tests" / "data" / f"release-{__version__}.json"
    text = re.sub(r'\{\n\s*("name": .*),\n\s*("sha256": .*),\n\s*("masked": .*)\n\s*\}',
                  r"{\1, \2, \3}", json.dumps(record, indent=1))  # a member a line
    write_atomically(path, (text + "\n").encode("utf-8"))
    for other in (ROOT / "tests" / "data").glob("release-*.json"):
        if other != path:
            other.unlink()
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/regenerate.py", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true",
                        help="only say which generated files are stale (exit status 1 if any)")
    parser.add_argument("--accept-outputs", action="store_true",
                        help="also record the outputs of this code as the release's "
                             "(tests/data/release-<version>.json): an intended change")
    args = parser.parse_args(argv)
    if args.accept_outputs and args.check:
        parser.error("--accept-outputs rewrites the record; --check writes nothing")
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
    if args.accept_outputs:
        print(f"recorded the outputs: {accept_outputs().relative_to(ROOT)}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
