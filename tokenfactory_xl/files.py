"""Writing the files a finance team keeps: whole or not at all, and never over one unasked.

A workbook that is half written when a run is interrupted (a full disk, Ctrl-C, a killed job)
looks like a workbook until someone opens it. Every file tokenfactory_xl generates is therefore
written to a temporary name in the same folder and renamed over its target in one step
(:func:`os.replace` is atomic within a file system), so the target is either the old file, the new
one, or absent. :func:`existing` finds the targets that a run without ``--force`` must not touch.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

#: Temporary files start with this, so that a reader of the folder can tell what they are.
TEMP_PREFIX = ".tfxl-"


def temp_name(path: Path) -> Path:
    """The temporary name ``path`` is written under first: hidden, in the same folder."""
    return path.with_name(f"{TEMP_PREFIX}{os.getpid()}-{path.name}.tmp")


def write_atomically(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temporary file in the same folder and a rename.

    On any error the temporary file is removed and ``path`` is left as it was.
    """
    path = Path(path)
    temp = temp_name(path)
    try:
        with open(temp, "wb") as handle:
            handle.write(data)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return path


def existing(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """The paths that exist already (each once, in the order given)."""
    seen: dict[Path, None] = {}
    for p in paths:
        path = Path(p)
        if path.exists() or path.is_symlink():
            seen.setdefault(path)
    return list(seen)
