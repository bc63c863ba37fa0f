"""Reading and writing the files a finance team keeps: whole or not at all, never over an input.

A workbook that is half written when a run is interrupted (a full disk, Ctrl-C, a killed job)
looks like a workbook until someone opens it. Every file tokenfactory_xl generates therefore goes
through the one path of this module:

1. :func:`stage` creates a temporary file in the target's own folder with ``O_CREAT | O_EXCL |
   O_NOFOLLOW`` under an unpredictable name (``.tfxl-<random>-<name>.tmp``): it is always a new
   file, never an existing one and never the far end of a link someone prepared;
2. the data is written and flushed to the disk (``fsync``);
3. :func:`commit` renames the temporary file over its target (:func:`os.replace` is atomic
   within a file system), so the target is either the old file, the new one, or absent.

On any error, or a signal, between 1 and 3 the temporary file is removed. :class:`Outputs`
stages every file of a run and renames them only when all are written, so a failed run leaves
none of its outputs. A target that is a link is refused rather than followed or replaced.

:func:`check_outputs` refuses, before anything is computed, an output that is one of the run's
inputs (the same path once links are resolved, or the same file under another name: the same
device and inode), two outputs that are one file, and an output that is a folder or a link.
:func:`open_regular` opens an input only when it is a regular file: a FIFO would block a run
forever and a device (``/dev/zero``) never ends.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from ..core.errors import InputError, Problem

#: Temporary files start with this, so that a reader of the folder can tell what they are.
TEMP_PREFIX = ".tfxl-"

_CREATE = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
           | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
_READ = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
         | getattr(os, "O_BINARY", 0))


# -- reading ---------------------------------------------------------------------------------------
class NotARegularFile(OSError):
    """An input that is missing, or is not a regular file; ``reason`` says which, in words."""

    def __init__(self, path: str | os.PathLike, reason: str, fix: str = ""):
        self.path, self.reason, self.fix = Path(path), reason, fix
        super().__init__(f"{path}: {reason}" + (f"; {fix}" if fix else ""))


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _link_note(path: Path) -> str:
    if not path.is_symlink():
        return ""
    try:
        return f" (a link to {os.readlink(path)})"
    except OSError:
        return " (a link)"


def regular_file_problem(path: str | os.PathLike) -> NotARegularFile | None:
    """Why ``path`` cannot be read as an input file, or ``None`` when it is a regular file."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if path.is_symlink():
            return NotARegularFile(path, f"is a link to {os.readlink(path)}, which does not "
                                   "exist", "point the link at the file, or give the file")
        return NotARegularFile(path, "does not exist", "check the path")
    except PermissionError:
        return NotARegularFile(path, "cannot be read (permission denied)",
                               "check the file's permissions")
    except OSError as exc:
        return NotARegularFile(path, f"cannot be read ({exc.strerror or exc})")
    if stat.S_ISREG(mode):
        return None
    what = _kind(mode)
    return NotARegularFile(path, f"is {what}{_link_note(path)}, not a regular file",
                           "give a saved file" if what != "a folder" else "give a file")


def open_regular(path: str | os.PathLike, max_bytes: int | None = None) -> BinaryIO:
    """Open ``path`` for reading in binary mode, only if it is a regular file.

    The file is checked before it is opened (opening some devices has effects) and again on the
    open descriptor (the path may have been swapped in between); it is opened without blocking,
    so a FIFO with no writer cannot hang the run. ``max_bytes``: the largest file that can be
    what the command expects [bytes].

    Raises
    ------
    NotARegularFile
        missing, a folder, a FIFO, a device, a socket, a dangling link, not readable, or larger
        than ``max_bytes``.
    """
    problem = regular_file_problem(path)
    if problem is not None:
        raise problem
    try:
        fd = os.open(path, _READ)
    except OSError as exc:
        raise NotARegularFile(path, f"cannot be read ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotARegularFile(path, f"is {_kind(st.st_mode)}, not a regular file")
        if max_bytes is not None and st.st_size > max_bytes:
            raise NotARegularFile(path, f"is {_size(st.st_size)}, larger than such a file can "
                                  f"be (at most {_size(max_bytes)} are read)",
                                  "check that it is the file meant")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


#: How much :func:`read_pieces` reads at a time (and :func:`read_regular` of a file that grew
#: while it was read) [bytes].
_PIECE = 1 << 20


def read_regular(path: str | os.PathLike, max_bytes: int | None = None) -> bytes:
    """The whole content of a regular file (see :func:`open_regular`); never more than
    ``max_bytes``, even of a file that grows while it is read."""
    # ``read(max_bytes + 1)`` would reserve the whole limit, whatever the file: the file is read
    # at its own size, then in pieces if it grew
    parts = list(read_pieces(path, max_bytes, first=None))
    return b"" if not parts else parts[0] if len(parts) == 1 else b"".join(parts)


def read_pieces(path: str | os.PathLike, max_bytes: int | None = None, *,
                first: int | None = _PIECE, size: int = _PIECE) -> Iterator[bytes]:
    """The content of a regular file (see :func:`open_regular`) in pieces, read as they are
    asked for: a file of many rows is read row by row without being held whole.

    ``first``: the first piece's size [bytes] (``None``: the file's size as it is opened);
    ``size``: each further piece's. Never more than ``max_bytes`` in all, even of a file that
    grows while it is read.
    """
    with open_regular(path, max_bytes) as handle:
        want = os.fstat(handle.fileno()).st_size + 1 if first is None else first
        read = 0
        while True:
            if max_bytes is not None:
                want = min(want, max_bytes + 1 - read)
            piece = handle.read(want)
            if not piece:
                return
            read += len(piece)
            if max_bytes is not None and read > max_bytes:
                raise NotARegularFile(path, f"grew past {_size(max_bytes)} while it was read",
                                      "read it once it is complete")
            yield piece
            if len(piece) < want:  # its end (a read past it would reserve a whole piece)
                return
            want = size


def _size(count: int) -> str:
    return f"{count / 2**20:,.1f} MB" if count >= 2**20 else f"{count:,} bytes"


#: Byte-order marks and the encodings they announce (UTF-32 before UTF-16: its mark starts
#: with UTF-16's).
_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe\x00\x00", "utf-32"),
         (b"\x00\x00\xfe\xff", "utf-32"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


def decode_text(data: bytes) -> str:
    """Text saved as UTF-8 (with or without a byte-order mark), UTF-16 or UTF-32 (as Windows
    tools and PowerShell's ``>`` write it; told by the mark, or by the zero bytes of ASCII
    text in UTF-16 without one).

    Raises
    ------
    UnicodeDecodeError
        the bytes are none of these.
    """
    for mark, encoding in _BOMS:
        if data.startswith(mark):
            return data.decode(encoding)
    head = data[:64]
    if len(head) >= 4 and head[1::2].count(0) > len(head) // 4 and not head[0::2].count(0):
        return data.decode("utf-16-le")
    if len(head) >= 4 and head[0::2].count(0) > len(head) // 4 and not head[1::2].count(0):
        return data.decode("utf-16-be")
    return data.decode("utf-8")


# -- checking the outputs against the inputs ---------------------------------------------------
class OutputClash(InputError):
    """An output would replace an input, another output, a folder or a link."""


def _identity(path: Path, follow: bool = True) -> tuple[int, int] | None:
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _resolved(path: Path) -> str:
    try:
        real = path.resolve()
    except (OSError, RuntimeError):
        real = Path(os.path.abspath(path))
    return os.path.normcase(str(real))


def check_outputs(outputs: Sequence[tuple[str, str | os.PathLike]],
                  inputs: Iterable[tuple[str, str | os.PathLike]] = ()) -> None:
    """Refuse outputs that would replace an input, each other, a folder or a link.

    Parameters
    ----------
    outputs : (what it is, path) for every file the run will write, e.g. ``("-o", "p.xlsx")``.
    inputs : (what it is, path) for every file the run reads.

    Raises
    ------
    OutputClash
        naming every clash; whatever the flags (``--force`` replaces old outputs, never inputs).
    """
    problems: list[Problem] = []
    known: dict[object, tuple[str, Path]] = {}
    for label, p in inputs:
        path = Path(p)
        known.setdefault(("path", _resolved(path)), (label, path))
        ident = _identity(path)
        if ident is not None:
            known.setdefault(("inode", ident), (label, path))
    # Two outputs that are one file share their resolved path's hash: only the outputs whose
    # hash another shares are kept by their path to be compared (a batch names 10,000 outputs,
    # and a dict of them all would hold some 300 bytes each).
    hashes = sorted(hash(_resolved(Path(p))) for _, p in outputs)
    shared = {h for h, after in zip(hashes, hashes[1:], strict=False) if h == after}
    del hashes
    seen: dict[str, int] = {}
    for index, (label, p) in enumerate(outputs):
        path = Path(p)
        keys = [("path", _resolved(path)), ("inode", _identity(path)),
                ("inode", _identity(path, follow=False))]
        clash = next((known[k] for k in keys if k[1] is not None and k in known), None)
        if clash is not None:
            problems.append(Problem(label, str(path), f"is {clash[0]} {clash[1]}, an input of "
                                    "this run; an output never replaces an input, whatever the "
                                    "flags", "choose another output name or folder"))
            continue
        key = _resolved(path)
        earlier = seen.setdefault(key, index) if hash(key) in shared else index
        if earlier != index:
            first, where = outputs[earlier]
            problems.append(Problem(label, str(path), f"is the same file as {first} "
                                    f"{Path(where)}", "give each output its own name"))
            continue
        if path.is_symlink():
            problems.append(Problem(label, str(path), f"is a link to {os.readlink(path)}; "
                                    "outputs never follow or replace links",
                                    "remove the link or choose another name"))
        elif path.exists() and not path.is_file():
            problems.append(Problem(label, str(path), f"is {_kind(os.stat(path).st_mode)}, not "
                                    "a file that can be replaced",
                                    "choose another output name"))
    if problems:
        raise OutputClash(problems)


# -- writing ------------------------------------------------------------------------------------
def temp_name(path: Path, token: bytes | None = None) -> Path:
    """A fresh, unpredictable temporary name for ``path``: hidden, in the same folder (``token``:
    its 8 random bytes, when they are known already)."""
    token = secrets.token_bytes(8) if token is None else token
    return path.with_name(f"{TEMP_PREFIX}{token.hex()}-{path.name}.tmp")


def _refuse_link(path: Path) -> None:
    if path.is_symlink():
        raise InputError([Problem("output", str(path), f"is a link to {os.readlink(path)}; "
                                  "outputs never follow or replace links",
                                  "remove the link or choose another name")])


#: What a staged file holds: its bytes, or a function writing them to a binary file (a
#: portfolio of 10,000 sites is written as it is made, never held whole).
Content = bytes | Callable[[BinaryIO], object]


class _Descriptor(io.RawIOBase):
    """An open file descriptor as a binary stream for :func:`stage`: it writes with
    ``os.write``, as staging bytes does, and leaves closing the descriptor to its owner."""

    def __init__(self, fd: int):
        self._fd = fd

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:  # type: ignore[no-untyped-def, override]
        return os.write(self._fd, data)


def stage(path: str | os.PathLike, data: Content) -> Path:
    """Write ``data`` to a new temporary file beside ``path`` and return the temporary's path.

    The file is created exclusively (never an existing file, never through a link) and flushed
    to the disk. On any error, or a signal turned into an exception, it is removed again.
    """
    path = Path(path)
    _refuse_link(path)
    for _attempt in range(16):
        temp = temp_name(path)
        try:
            fd = os.open(temp, _CREATE, 0o666)
            break
        except FileExistsError:  # 64 random bits taken: someone is guessing; try another
            continue
    else:  # pragma: no cover - 16 collisions of 64 random bits
        raise FileExistsError(f"could not create a temporary file beside {path}")
    try:
        if callable(data):
            with io.BufferedWriter(_Descriptor(fd), buffer_size=1 << 20) as handle:
                data(handle)
        else:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        os.fsync(fd)
    except OSError as exc:
        os.close(fd)
        temp.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    except BaseException:
        os.close(fd)
        temp.unlink(missing_ok=True)
        raise
    try:
        os.close(fd)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return temp


def describe_os_error(exc: OSError) -> str:
    """An operating-system error in one line: what failed and for which file."""
    reason = (exc.strerror or str(exc)).rstrip(".")
    if exc.errno == errno.ENOSPC:
        reason = "no space left on the disk"
    where = f" writing {exc.filename}" if exc.filename else ""
    return f"{reason[:1].lower()}{reason[1:]}{where}"


def _sync_folder(folder: Path) -> None:
    """Flush a folder's entries (the renames) to the disk, where the system allows it."""
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def commit(staged: Iterable[tuple[Path, Path]]) -> None:
    """Rename each staged temporary file over its target, then flush the folders."""
    folders: dict[Path, None] = {}
    for temp, target in staged:
        _refuse_link(target)
        os.replace(temp, target)
        folders.setdefault(Path(target).parent)
    for folder in folders:
        _sync_folder(folder)


def discard(temps: Iterable[Path]) -> None:
    """Remove temporary files (those already gone are ignored)."""
    for temp in temps:
        with contextlib.suppress(OSError):
            Path(temp).unlink(missing_ok=True)


def check_writable(path: str | os.PathLike) -> None:
    """Raise the ``OSError`` that writing ``path`` would meet (a read-only or full disk, a
    folder one may not write to), before a command spends seconds making its content: a byte
    is staged beside ``path`` and removed again, and ``path`` itself is never touched."""
    discard([stage(path, b"\0")])


def write_atomically(path: str | os.PathLike, data: Content) -> Path:
    """Write ``data`` to ``path`` through a staged temporary file and a rename.

    On any error the temporary file is removed and ``path`` is left as it was.
    """
    path = Path(path)
    temp = stage(path, data)
    try:
        commit([(temp, path)])
    except BaseException:
        discard([temp])
        raise
    return path


class Outputs:
    """The files of one run, written all together or not at all.

    ``add`` stages a file (or ``adopt`` one staged by a worker process); ``commit`` renames them
    all into place. Leaving a ``with Outputs() as out:`` block by an exception, or calling
    ``discard``, removes every staged file, so an interrupted run leaves none of its outputs.
    """

    def __init__(self) -> None:
        self.staged: list[tuple[Path, Path]] = []
        self.committed = False
        self._many: list[Staged] = []

    def many(self, targets: Sequence[Path]) -> Staged:
        """A place for the files of ``targets`` staged by worker processes, kept compactly
        (a batch of 10,000 workbooks); committed and discarded with the others."""
        staged = Staged(targets)
        self._many.append(staged)
        return staged

    def add(self, path: str | os.PathLike, data: Content) -> Path:
        temp = stage(path, data)
        self.staged.append((temp, Path(path)))
        return Path(path)

    def adopt(self, temp: Path, path: str | os.PathLike) -> None:
        self.staged.append((Path(temp), Path(path)))

    def commit(self) -> list[Path]:
        for staged in self._many:
            commit(staged.pairs())
        commit(self.staged)
        self.committed = True
        return [t for staged in self._many for t in staged.targets()] + [
            target for _, target in self.staged]

    def discard(self) -> None:
        for staged in self._many:
            discard(temp for temp, _ in staged.pairs())
        discard(temp for temp, _ in self.staged)
        self.staged, self._many = [], []

    def __enter__(self) -> Outputs:
        return self

    def __exit__(self, kind: object, *rest: object) -> None:
        if kind is not None or not self.committed:
            self.discard()


class Staged:
    """The staged files of many targets, each known by its index: of a temporary file named as
    :func:`temp_name` names it only its random part is kept (8 bytes, not two paths of some
    250 bytes each)."""

    def __init__(self, targets: Sequence[Path]):
        self._targets = targets
        self._tokens = bytearray(8 * len(targets))
        self._held = bytearray(len(targets))  # 1: staged
        self._others: dict[int, Path] = {}  # a temporary file named otherwise

    def put(self, index: int, temp: str | os.PathLike) -> None:
        """Target ``index`` staged as ``temp``."""
        temp, target = Path(temp), self._targets[index]
        token = temp.name[len(TEMP_PREFIX):len(TEMP_PREFIX) + 16]
        try:
            named = temp_name(target, bytes.fromhex(token)) == temp
        except ValueError:
            named = False
        if named:
            self._tokens[8 * index:8 * index + 8] = bytes.fromhex(token)
        else:
            self._others[index] = temp
        self._held[index] = 1

    def targets(self) -> Iterator[Path]:
        """Each target staged, in the targets' order."""
        return (self._targets[index] for index, held in enumerate(self._held) if held)

    def pairs(self) -> Iterator[tuple[Path, Path]]:
        """(temporary file, target) of each target staged, in the targets' order."""
        for index, held in enumerate(self._held):
            if held:
                target = self._targets[index]
                temp = self._others.get(index) or temp_name(
                    target, bytes(self._tokens[8 * index:8 * index + 8]))
                yield temp, target


# -- claiming a folder or a file for one run ------------------------------------------------------
class Busy(OSError):
    """Another run holds the claim on a folder or file, and this one does not wait."""


try:  # POSIX: an advisory lock the system releases when the process ends, however it ends
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


@contextlib.contextmanager
def claim(path: str | os.PathLike, *, wait: bool, what: str = "",
          on_wait: Callable[[], object] | None = None) -> Iterator[None]:
    """Hold the exclusive claim on ``path`` (an output folder, or a file being updated) for the
    block: two runs of tokenfactory_xl never write into one folder, or update one file, at once.

    ``wait``: queue behind the run holding it (``on_wait`` is called first, to say so), or
    refuse at once with :class:`Busy`. The claim is an ``flock`` on the folder or file itself,
    so nothing is left behind and a run that is killed releases it. A file replaced by the run
    that held it (an update is a rename) is claimed again under its new identity.
    """
    path = Path(path)
    if fcntl is None:  # pragma: no cover - Windows: a lock file beside it, made exclusively
        with _claim_by_file(path, wait, what, on_wait):
            yield
        return
    waited = False
    while True:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
                     | getattr(os, "O_NONBLOCK", 0))
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not wait:
                    raise Busy(errno.EBUSY, _busy(path, what)) from None
                if on_wait is not None and not waited:
                    on_wait()
                waited = True
                fcntl.flock(fd, fcntl.LOCK_EX)
            if _identity(path) != _identity_of(fd):  # replaced while we waited: again
                continue
            yield
            return
        finally:
            os.close(fd)  # releases the lock


def _busy(path: Path, what: str) -> str:
    return (f"another tokenfactory-xl run is writing {what or 'into'} {path} right now; wait for "
            "it to end, or choose another")


def _identity_of(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


@contextlib.contextmanager
def _claim_by_file(path: Path, wait: bool, what: str,
                   on_wait: Callable[[], object] | None) -> Iterator[None]:  # pragma: no cover
    import time

    lock = path / ".tfxl-lock" if path.is_dir() else path.with_name(f".tfxl-lock-{path.name}")
    waited = False
    while True:
        try:
            fd = os.open(lock, _CREATE, 0o666)
            break
        except FileExistsError:
            if not wait:
                raise Busy(errno.EBUSY, _busy(path, what)) from None
            if on_wait is not None and not waited:
                on_wait()
            waited = True
            time.sleep(0.05)
    os.close(fd)
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)


def existing(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """The paths that exist already (each once, in the order given)."""
    seen: dict[Path, None] = {}
    for p in paths:
        path = Path(p)
        if path.exists() or path.is_symlink():
            seen.setdefault(path)
    return list(seen)
