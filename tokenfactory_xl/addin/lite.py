"""The Excel functions for xlwings Lite (Excel on Windows, the Mac and the web): one main.py.

xlwings Lite runs Python inside Excel (Pyodide, in the browser). Its editor has two tabs:
``main.py``, whose decorated functions become Excel functions, and ``requirements.txt``, whose
entries micropip installs from PyPI. tokenfactory-xl is not on PyPI, so the functions travel in
``main.py`` itself: ``tokenfactory-xl lite -o DIR`` writes a ``main.py`` that holds the source of
:mod:`tokenfactory_xl.udfs` and of every package module it imports (found by reading their
imports), with the package's data files, loads them as the package ``tokenfactory_xl`` and
exposes every function of ``udfs.__all__``. The formulas are therefore the package's own,
copied as text when the bundle is written, never retyped. Besides the standard library the
bundle needs only numpy and xlwings. xlwings Lite installs what the editor's
``requirements.txt`` tab lists and nothing else, so the bundle's ``requirements.txt`` names both:
numpy, and an xlwings range whose Office.js decorators work on today's Pyodide (from 0.35, an
empty cell or an omitted argument arrives as ``None``, not Pyodide's ``jsnull``).

``main.py`` may run again in the same Python process (pasted again, perhaps a newer version):
the second run replaces the first one's modules, so its own sources are the ones that compute.

The same bundle, committed as ``install/xlwings-lite/``, is what a user without Python
downloads; a test keeps it equal to what this module writes.
"""

from __future__ import annotations

import ast
import sys
from importlib import resources
from pathlib import Path

from .. import __version__
from ..core.errors import TokenFactoryError, UsageError

PACKAGE = "tokenfactory_xl"


#: The module whose functions Excel gets (a path inside the package); the bundle holds it, what it
#: imports and the packages they belong to.
ROOT_MODULE = "addin.udfs"


#: What the bundled modules may import besides the standard library and each other.
ALLOWED_IMPORTS: frozenset[str] = frozenset({"numpy", "xlwings"})
MAIN = "main.py"
REQUIREMENTS = "requirements.txt"
#: What the bundle's requirements.txt lists, for micropip to install in xlwings Lite: numpy, and
#: xlwings from the first version that turns Pyodide's ``jsnull`` into ``None`` (0.35) up to the
#: package's own upper bound (pyproject.toml; a test keeps the two equal).
LITE_REQUIREMENTS: tuple[str, ...] = ("numpy", "xlwings>=0.35,<0.38")


class BundleError(TokenFactoryError):
    """A bundled module imports something xlwings Lite cannot provide."""


# -- what goes into the bundle -------------------------------------------------------------------
def _is_package(module: str) -> bool:
    """Whether ``module`` (``core``, a path inside the package) is a sub-package."""
    return (resources.files(PACKAGE).joinpath(*module.split("."), "__init__.py")).is_file()


def _file(module: str) -> str:
    """The file of ``module`` inside the package: ``core/errors.py``, ``core/__init__.py``."""
    parts = module.split(".")
    return "/".join(parts) + ("/__init__.py" if _is_package(module) else ".py")


def _source(module: str) -> str:
    return resources.files(PACKAGE).joinpath(*_file(module).split("/")).read_text(
        encoding="utf-8")


def _imports(module: str) -> tuple[list[str], set[str]]:
    """The package modules ``module`` imports (relative imports, as paths inside the package:
    ``core.errors``) and its other top-level imports."""
    tree = ast.parse(_source(module))
    here = module.split(".") if _is_package(module) else module.split(".")[:-1]
    package, other = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            if node.level - 1 > len(here):
                raise BundleError(f"{_file(module)}: imports from outside the package")
            base = here[:len(here) - (node.level - 1)]
            target = ".".join(base + (node.module.split(".") if node.module else []))
            if not target:  # the package itself: its version
                continue
            package.append(target)
            if _is_package(target):
                package.extend(f"{target}.{alias.name}" for alias in node.names
                               if _is_module(f"{target}.{alias.name}"))
        elif isinstance(node, ast.ImportFrom) and node.module:
            other.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            other.update(alias.name.split(".")[0] for alias in node.names)
    return package, other


def _is_module(module: str) -> bool:
    """Whether ``module`` (a path inside the package) is a module or sub-package of it."""
    *folders, name = module.split(".")
    return _is_package(module) or resources.files(PACKAGE).joinpath(
        *folders, f"{name}.py").is_file()


def modules(root: str = ROOT_MODULE) -> list[str]:
    """The package modules the bundle holds: ``root`` and what it imports, dependencies first.

    Raises :class:`BundleError` when one of them imports a third-party package other than
    numpy and xlwings, or the package itself by its absolute name.
    """
    order: list[str] = []
    visiting: set[str] = set()

    def visit(module: str) -> None:
        if module in order or module in visiting:
            return
        visiting.add(module)
        parts = module.split(".")
        for depth in range(1, len(parts)):  # the packages it belongs to, before it
            visit(".".join(parts[:depth]))
        package, other = _imports(module)
        outside = sorted(other - ALLOWED_IMPORTS - set(sys.stdlib_module_names) - {"__future__"})
        if outside:
            raise BundleError(f"{_file(module)} imports {', '.join(outside)}, which xlwings Lite "
                              f"does not ship; only numpy, xlwings and the standard library "
                              f"may be imported by what the Excel functions need")
        for dependency in package:
            visit(dependency)
        visiting.discard(module)
        order.append(module)

    visit(root)
    return order


def data_files() -> dict[str, str]:
    """The package's data files (``data/gpus.csv`` …) by path inside the package."""
    folder = resources.files(PACKAGE) / "data"
    return {f"data/{item.name}": item.read_text(encoding="utf-8")
            for item in sorted(folder.iterdir(), key=lambda i: i.name) if item.is_file()}


def _literal(text: str) -> str:
    """``text`` as a Python literal that shows it line by line where it can."""
    if "'''" not in text and not text.endswith("\\") and "\r" not in text:
        return "r'''" + text + "'''"
    return repr(text)


# -- the files -----------------------------------------------------------------------------------
_HEAD = '''"""Token Factory functions for xlwings Lite (Excel for Mac, on the web and on Windows).

Paste this whole file into the xlwings Lite editor's main.py tab (replacing what is there), and
into its requirements.txt tab the lines of the requirements.txt beside this file
({requirements}): numpy and xlwings are all this file needs. Then type, for example,
=TEF(210000, 700000) into a cell. Pasting it again (a newer version) replaces the functions.

Written by `tokenfactory-xl lite` from tokenfactory_xl {version}; do not edit it by hand: write
it again with that command. It holds the source of the package's modules {modules} and its
data files, loads them as the package tokenfactory_xl and exposes every Excel function of
tokenfactory_xl.udfs ({count} functions): the same functions, with the same names, arguments
and help, as desktop Excel gets.
"""
# ruff: noqa: E501 (the data files' lines are as long as they are)

import importlib as _importlib
import importlib.abc as _importlib_abc
import importlib.machinery as _machinery
import io as _io
import linecache as _linecache
import sys as _sys

_PACKAGE = "tokenfactory_xl"
_VERSION = "{version}"
'''

_LOADER = '''

class _Data:
    """A file or folder of the bundled package data, as importlib.resources.files() gives it."""

    def __init__(self, path=""):
        self._path = path
        self.name = path.rsplit("/", 1)[-1]

    def _children(self):
        prefix = self._path + "/" if self._path else ""
        return sorted({prefix + key[len(prefix):].split("/")[0]
                       for key in _DATA if key.startswith(prefix)})

    def is_file(self):
        return self._path in _DATA

    def is_dir(self):
        return not self.is_file() and bool(self._children())

    def iterdir(self):
        return iter([_Data(child) for child in self._children()])

    def joinpath(self, *names):
        parts = [self._path] if self._path else []
        for name in names:
            parts.extend(part for part in str(name).split("/") if part)
        return _Data("/".join(parts))

    __truediv__ = joinpath

    def read_text(self, encoding=None, errors=None):
        if not self.is_file():
            raise FileNotFoundError(f"{_PACKAGE}/{self._path}")
        return _DATA[self._path]

    def read_bytes(self):
        return self.read_text().encode("utf-8")

    def open(self, mode="r", *args, **kwargs):
        return _io.BytesIO(self.read_bytes()) if "b" in mode else _io.StringIO(self.read_text())


class _Reader:
    def files(self):
        return _Data()


class _Bundle(_importlib_abc.MetaPathFinder, _importlib_abc.Loader):
    """Imports the bundled modules of tokenfactory_xl from the sources above."""

    #: marks the finders and modules of any run of this file, this one's or an earlier paste's
    tokenfactory_xl_bundle = True

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _PACKAGE and fullname not in _SOURCES:
            return None
        spec = _machinery.ModuleSpec(fullname, self, origin=self._file(fullname),
                                     is_package=fullname == _PACKAGE or fullname in _PACKAGES)
        spec.has_location = False
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        name = module.__name__
        module.__file__ = self._file(name)
        if name == _PACKAGE:
            module.__version__ = _VERSION
            module.__doc__ = "tokenfactory_xl, as bundled for xlwings Lite: " + ", ".join(
                sorted(key.rsplit(".", 1)[-1] for key in _SOURCES)) + "."
            return
        source = _SOURCES[name]
        # Tracebacks then show the line that failed.
        _linecache.cache[module.__file__] = (len(source), None, source.splitlines(True),
                                            module.__file__)
        exec(compile(source, module.__file__, "exec"), module.__dict__)

    def get_resource_reader(self, fullname):
        return _Reader() if fullname == _PACKAGE else None

    @staticmethod
    def _file(fullname):
        return "<bundled " + fullname.replace(".", "/") + (
            "/__init__.py>" if fullname == _PACKAGE or fullname in _PACKAGES else ".py>")



def _from_a_bundle(thing):
    return getattr(thing, "tokenfactory_xl_bundle", False) is True


if _PACKAGE in _sys.modules and not _from_a_bundle(
        getattr(_sys.modules[_PACKAGE], "__loader__", None)):
    raise ImportError("another tokenfactory_xl is already imported; this file is for "
                      "xlwings Lite, where the package itself is not installed")
# Run again in the same process (pasted again, perhaps a newer version): the earlier run's
# finder and modules make way, so the sources above are the ones imported.
_sys.meta_path[:] = [finder for finder in _sys.meta_path if not _from_a_bundle(finder)]
for _name in [n for n in _sys.modules if n == _PACKAGE or n.startswith(_PACKAGE + ".")]:
    del _sys.modules[_name]
_sys.meta_path.insert(0, _Bundle())

_udfs = _importlib.import_module(_PACKAGE + "." + _ROOT)
globals().update({name: getattr(_udfs, name) for name in _udfs.__all__})
__all__ = list(_udfs.__all__)
'''


def main_py() -> str:
    """The text of the bundle's ``main.py``."""
    from . import udfs

    names = modules()
    parts = [_HEAD.format(version=__version__, modules=", ".join(names),
                          count=len(udfs.__all__), requirements=", ".join(LITE_REQUIREMENTS))]
    parts.append("\n# The package's modules, as text: dependencies first.\n_SOURCES = {\n")
    for name in names:
        parts.append(f"    {PACKAGE + '.' + name!r}: {_literal(_source(name))},\n")
    parts.append("}\n\n# Which of them are packages, and the one whose functions Excel gets.\n")
    parts.append(f"_PACKAGES = {tuple(PACKAGE + '.' + n for n in names if _is_package(n))!r}\n")
    parts.append(f"_ROOT = {ROOT_MODULE!r}\n")
    parts.append("\n# The package's data files.\n_DATA = {\n")
    for path, text in data_files().items():
        parts.append(f"    {path!r}: {_literal(text)},\n")
    parts.append("}\n")
    parts.append(_LOADER)
    return "".join(parts)


def requirements_txt() -> str:
    """The text of the bundle's ``requirements.txt``: what the editor's tab of that name must
    list (:data:`LITE_REQUIREMENTS`), one requirement a line."""
    return "".join(f"{line}\n" for line in LITE_REQUIREMENTS)


def write_bundle(outdir: str | Path, force: bool = False) -> list[Path]:
    """Write ``main.py`` and ``requirements.txt`` into ``outdir`` (created if needed).

    Existing files are replaced only with ``force``; each file is written atomically. Returns
    the paths written. Raises :class:`~tokenfactory_xl.core.errors.UsageError` when a file
    exists.
    """
    from ..files.disk import write_atomically

    folder = Path(outdir)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"-o {folder}: is a file; give a folder for {MAIN} and {REQUIREMENTS}")
    files = {MAIN: main_py(), REQUIREMENTS: requirements_txt()}
    existing = [folder / name for name in files if (folder / name).exists()]
    if existing and not force:
        verb = "exists" if len(existing) == 1 else "exist"
        raise UsageError(f"-o {folder}: {' and '.join(p.name for p in existing)} {verb}; nothing "
                        f"was written (add --force to replace)")
    folder.mkdir(parents=True, exist_ok=True)
    return [write_atomically(folder / name, text.encode("utf-8")) for name, text in files.items()]
