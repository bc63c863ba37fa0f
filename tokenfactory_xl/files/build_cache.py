"""Builds kept between runs: what every process would otherwise build anew from the same code.

Writing or auditing a workbook starts from the default site's TFOM workbook: built with openpyxl,
saved, and cut into the stencil the batch fills, about a second of CPU in every ``template``,
``batch``, ``refresh`` and ``collect`` run and in every worker process that spawns (Windows,
macOS). That result depends only on this package's code and the libraries it runs on, so it is
kept in a file named after a **fingerprint** of both: the bytes of every file of the package,
and the versions of Python, openpyxl, numpy, zlib and ISA-L. Another line of code, another
library, and the name differs and the build runs again; a kept build is always the one a build
would give now (the tests compare the workbooks of both byte for byte).

Where: the folder ``TOKENFACTORY_XL_CACHE`` names, else the platform's cache folder
(``%LOCALAPPDATA%\\tokenfactory_xl\\Cache`` on Windows, ``~/Library/Caches/tokenfactory_xl`` on
macOS, ``$XDG_CACHE_HOME/tokenfactory_xl`` or ``~/.cache/tokenfactory_xl`` elsewhere).
``TOKENFACTORY_XL_CACHE=off`` keeps nothing. The cache never stops a run: a folder that cannot
be written, a file that cannot be read or was cut short, and the build simply runs. A kept file
is read only from a folder of the user's own that nobody else may write to, and written
atomically (a process that stops half-way leaves no file behind under the kept name), and
deflated but for the workbook factory, which every ``template`` and ``batch`` reads (10 MB kept
as it is, read in a few milliseconds; the other builds 0.4 MB deflated), and each variant
model compiled for the risk draws and the solves (``tfom/variants.py``: its split and its two
parts in one file) about 20 KB.

Several versions share the folder: two environments of one user (the add-in's and the command
line's, another numpy), a checkout beside an installed release. Each name keeps the builds of the
:data:`VERSIONS_KEPT` versions used last (a read marks a file used), so two of them taking turns
read their own builds instead of building anew each time the other ran; an older version's file
is removed when a build is kept, and so is any file kept under a name no version has used for
:data:`UNUSED_DAYS` days (an earlier release's names). Only files named as this module names them
are ever removed: a folder named by ``TOKENFACTORY_XL_CACHE`` may hold others.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
import re
import stat
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

#: The environment variable naming the folder (``off``: keep nothing).
ENV = "TOKENFACTORY_XL_CACHE"
OFF = "off"
_PACKAGE = Path(__file__).resolve().parents[1]
_SUFFIX = ".pickle"
#: How every pickle kept here starts (its protocol's opcode), and no deflated one (zlib's
#: header starts 0x78): a file kept as it is is told from a deflated one by its first byte.
_PICKLED = b"\x80"
#: How many versions' builds of one name are kept: the one running and the two used before it.
VERSIONS_KEPT = 3
#: A kept file not used for this many days is removed when a build is kept.
UNUSED_DAYS = 30
#: The name of a file this module keeps: ``<name>-<fingerprint>`` and :data:`_SUFFIX`.
_KEPT_FILE = re.compile(r"(?P<name>[a-z0-9-]+)-[0-9a-f]{20}" + re.escape(_SUFFIX))


def _deflate() -> str:
    """Which library deflates a workbook's worksheets: ISA-L's where its wheel imports, else zlib
    (the rule of :data:`tokenfactory_xl.workbook.stencil.DEFLATE`, read here without importing
    the workbook layer; a test holds the two equal)."""
    try:
        from isal import isal_zlib  # noqa: F401
    except ImportError:
        return "zlib"
    return "isal"



def folder() -> Path | None:
    """The cache folder (``None``: turned off)."""
    given = os.environ.get(ENV)
    if given is not None and given.strip():
        return None if given.strip().lower() == OFF else Path(given).expanduser()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA")
        return Path(base) / "tokenfactory_xl" / "Cache" if base else None
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "tokenfactory_xl"
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "tokenfactory_xl"


@functools.lru_cache(maxsize=1)
def _package_digest() -> hashlib._Hash:
    """The digest of every file of the package, read once per process (a ``template`` names
    builds of both kinds: :func:`fingerprint` continues a copy of it for each)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in _PACKAGE.rglob("*")
                       if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest


@functools.lru_cache(maxsize=2)
def fingerprint(libraries: bool = True) -> str:
    """Digest of what a build depends on: every file of the package and the libraries' versions.

    ``libraries`` false: of Python and numpy only, for a build that needs no other library (the
    compiled model, which ``summary`` reads without importing openpyxl)."""
    import numpy

    digest = _package_digest().copy()
    parts = [sys.version, numpy.__version__, str(pickle.HIGHEST_PROTOCOL)]
    if libraries:
        deflate = _deflate()
        isal = version("isal") if deflate == "isal" else ""
        parts = [sys.version, version("openpyxl"), numpy.__version__,
                 zlib.ZLIB_RUNTIME_VERSION, deflate, isal, str(pickle.HIGHEST_PROTOCOL)]
    for part in parts:
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:20]


def version(distribution: str) -> str:
    """The installed version of ``distribution`` (a library whose import name is its own), as
    :func:`importlib.metadata.version` gives it, without importing the library (filling a
    workbook needs no openpyxl) and mostly without importing :mod:`importlib.metadata` (a
    tenth of a warm ``template``'s start): the name of the ``<name>-<version>.dist-info``
    folder beside the package Python would import, where there is one such folder; else
    :mod:`importlib.metadata` reads it."""
    import importlib.util

    spec = importlib.util.find_spec(distribution)
    if spec is not None and spec.origin and spec.submodule_search_locations:
        beside = Path(spec.origin).parent.parent
        found = list(beside.glob(f"{distribution}-*.dist-info"))
        if len(found) == 1:
            return found[0].name[len(distribution) + 1: -len(".dist-info")]
    from importlib.metadata import version as read

    return read(distribution)


def _private(where: Path) -> bool:
    """Whether ``where`` is a folder of this user's that no one else may write to (POSIX)."""
    try:
        info = os.stat(where)
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode):
        return False
    if os.name != "posix":
        return True
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def kept(name: str, build: Callable[[], T], libraries: bool = True,
         deflated: bool = True) -> T:
    """``build()``, or the result an earlier run of this same code kept under ``name``.

    ``name`` says what is kept (letters, digits, ``-``); the file is ``name-<fingerprint>``
    (:func:`fingerprint`; ``libraries`` false for a build that depends on Python and numpy
    only). ``deflated`` false keeps the pickle as it is: a build every run of a command
    reads, large and quick to read (the workbook factory: 10 MB, read in a few milliseconds
    where inflating it took ten). Either is read back whichever way it was kept.
    """
    where = folder()
    if where is None:
        return build()
    path = where / f"{name}-{fingerprint(libraries)}{_SUFFIX}"
    if _private(where):
        try:
            with open(path, "rb") as f:
                data = f.read()
            if not data.startswith(_PICKLED):
                data = _inflate(data)
            found = pickle.loads(data)  # noqa: S301 - a file of this user's own private folder
            with contextlib.suppress(OSError):
                os.utime(path)  # used now: the last of this name another version removes
            return found
        except Exception:  # noqa: BLE001 - not kept yet, cut short or unreadable: built below
            pass
    result = build()
    _keep(where, name, path, result, deflated)
    return result


def _inflate(data: bytes) -> bytes:
    """A kept file's bytes inflated: by ISA-L where its wheel imports (in half zlib's time:
    the same bytes), else by zlib."""
    try:
        from isal import isal_zlib
    except ImportError:
        return zlib.decompress(data)
    return isal_zlib.decompress(data)


def _keep(where: Path, name: str, path: Path, result: object, deflated: bool = True) -> None:
    """Write ``result`` under ``path`` atomically, then :func:`_prune` the folder."""
    try:
        where.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private(where):
            return
        data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        if deflated:  # a stencil's worksheets are text, kept at a seventh of their size
            data = zlib.compress(data, 1)
        fd, temp = tempfile.mkstemp(prefix=f".{name}-", suffix=".tmp", dir=where)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        _prune(where, name)
    except Exception:  # noqa: BLE001 - a folder one may not write, a build that cannot be
        return  # pickled (the tests hold the kept builds picklable): the run goes on without


def _prune(where: Path, name: str) -> None:
    """Remove the files of ``name`` beyond the :data:`VERSIONS_KEPT` used last (the one just
    kept is the newest), and every kept file, whatever its name, unused for
    :data:`UNUSED_DAYS` days. Files not named as :func:`kept` names them are left alone."""
    unused_since = time.time() - UNUSED_DAYS * 86_400
    versions = []
    with os.scandir(where) as entries:
        found = list(entries)
    for entry in found:
        match = _KEPT_FILE.fullmatch(entry.name)
        if match is None or not entry.is_file(follow_symlinks=False):
            continue
        used = entry.stat(follow_symlinks=False).st_mtime
        if used < unused_since:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
        elif match["name"] == name:
            versions.append((used, entry.path))
    for _, old in sorted(versions, reverse=True)[VERSIONS_KEPT:]:
        with contextlib.suppress(OSError):
            os.unlink(old)
