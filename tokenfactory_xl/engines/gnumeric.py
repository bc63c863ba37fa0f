"""Gnumeric's ``ssconvert``: a second open-source spreadsheet engine to recalculate workbooks.

The TFOM workbook must compute the same numbers in every engine its users open it in (methodology
section 9). LibreOffice is one engine (:mod:`tokenfactory_xl.engines.libreoffice`); Gnumeric is
another, with its own formula parser and function library, and its command-line converter
recalculates a workbook headlessly: ``ssconvert --recalc in.xlsx out.xlsx`` loads the file,
recomputes every formula (ignoring the values the file stores) and writes an ``.xlsx`` whose stored
values are Gnumeric's. A function Gnumeric does not know gives ``#NAME?`` there, which is how the
tests catch formulas that are not portable. Debian/Ubuntu: ``apt-get install gnumeric``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..core.errors import EngineMissing


class GnumericMissing(EngineMissing):
    """No ``ssconvert`` on the PATH."""


def find_ssconvert() -> str | None:
    """The path of Gnumeric's ``ssconvert``, or ``None`` when it is not installed."""
    return shutil.which("ssconvert")


def recalculate(files: Sequence[str | os.PathLike], outdir: str | os.PathLike,
                timeout: float = 300) -> list[Path]:
    """Recalculated copies of ``files`` in ``outdir``: ``.xlsx`` files with Gnumeric's values.

    Each file keeps its name. Raises :class:`GnumericMissing` without Gnumeric and
    ``RuntimeError`` when ``ssconvert`` fails or writes nothing.
    """
    ssconvert = find_ssconvert()
    if ssconvert is None:
        raise GnumericMissing("Gnumeric is not installed; on Debian/Ubuntu: "
                              "apt-get install --no-install-recommends gnumeric")
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    # Gnumeric keeps settings under HOME; a private one keeps parallel runs apart.
    with tempfile.TemporaryDirectory(prefix="tfxl-gnumeric-") as home:
        for source in files:
            target = outdir / (Path(source).stem + ".xlsx")
            proc = subprocess.run(
                [ssconvert, "--recalc", "--export-type=Gnumeric_Excel:xlsx2", str(source),
                 str(target)], capture_output=True, text=True, timeout=timeout,
                env={**os.environ, "HOME": home})
            if proc.returncode != 0 or not target.exists():
                raise RuntimeError(f"ssconvert failed (exit {proc.returncode}) on {source}:\n"
                                   f"{proc.stdout}\n{proc.stderr}")
            written.append(target)
    return written
