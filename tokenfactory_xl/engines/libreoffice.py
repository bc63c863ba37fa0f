"""LibreOffice headless: recalculate workbooks and export them to PDF.

openpyxl writes formulas without values; a workbook only shows numbers once a spreadsheet
engine has computed it. LibreOffice does that without a screen, but by default it keeps the
values a file already stores. A private user profile with ``OOXMLRecalcMode`` = 0 ("always")
makes it recompute every formula on load; each call gets its own profile so that parallel runs
do not share one. Used by ``tokenfactory-xl render`` and by the tests that check the workbook
against the Python model.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..core.errors import EngineMissing

_PROFILE = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry"
 xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="OOXMLRecalcMode" \
oor:op="fuse"><value>0</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="ODFRecalcMode" \
oor:op="fuse"><value>0</value></prop></item>
</oor:items>
"""


class LibreOfficeMissing(EngineMissing):
    """No ``soffice`` on the PATH."""


def find_soffice() -> str | None:
    """The path of LibreOffice's ``soffice``, or ``None`` when it is not installed."""
    for name in ("soffice", "libreoffice"):
        path = shutil.which(name)
        if path:
            return path
    return None


def convert(files: Sequence[str | os.PathLike], outdir: str | os.PathLike, to: str = "xlsx",
            timeout: float = 300) -> list[Path]:
    """Recalculate ``files`` in LibreOffice and save them into ``outdir`` as ``to`` (xlsx, pdf).

    Every formula is recomputed on load. Returns the written paths, in the order of ``files``.
    Raises :class:`LibreOfficeMissing` without LibreOffice, ``ValueError`` for two files of one
    name (LibreOffice would write the second's result over the first's) and ``RuntimeError``
    when it fails.
    """
    stems = [Path(f).stem for f in files]
    twice = sorted({stem for stem in stems if stems.count(stem) > 1})
    if twice:
        raise ValueError(f"files named {', '.join(twice)} more than once: their results would "
                         f"be written over one another in {outdir}; rename them or convert "
                         "them in separate calls")
    soffice = find_soffice()
    if soffice is None:
        raise LibreOfficeMissing(
            "LibreOffice is not installed; on Debian/Ubuntu: "
            "apt-get install --no-install-recommends libreoffice-calc-nogui")
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tfxl-lo-") as profile:
        user = Path(profile, "user")
        user.mkdir()
        (user / "registrymodifications.xcu").write_text(_PROFILE, encoding="utf-8")
        target = {"xlsx": "xlsx:Calc MS Excel 2007 XML", "pdf": "pdf:calc_pdf_Export"}.get(to, to)
        cmd = [soffice, f"-env:UserInstallation={Path(profile).as_uri()}", "--headless",
               "--norestore", "--nologo", "--convert-to", target, "--outdir", str(outdir),
               *[str(f) for f in files]]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "HOME": profile})
    suffix = "." + to.split(":")[0]
    written = [outdir / (Path(f).stem + suffix) for f in files]
    missing = [str(p) for p in written if not p.exists()]
    if proc.returncode != 0 or missing:
        raise RuntimeError(
            f"LibreOffice failed (exit {proc.returncode}) on {', '.join(missing) or files}:\n"
            f"{proc.stdout}\n{proc.stderr}")
    return written


def recalculate(files: Sequence[str | os.PathLike], outdir: str | os.PathLike) -> list[Path]:
    """Recalculated copies of ``files`` in ``outdir`` (xlsx with LibreOffice's stored values)."""
    return convert(files, outdir, "xlsx")
