"""Reading workbooks that come back from site managers: untrusted files, read safely and fast.

A filled-in TFOM workbook is a file from outside: it may be an old ``.xls``, a password-protected
workbook, a CSV someone renamed, a truncated download, or a file built to hurt the machine that
opens it (an XML entity attack, a zip bomb). This module opens one such file, recognises each of
those cases and refuses it with one sentence a finance user can act on (:class:`RefusedFile`),
and otherwise reads only what the audit needs: the sheet list and defined names of
``xl/workbook.xml``, the shared strings, and each worksheet's cells (formula, stored value).
Styles, drawings, charts and document properties are never parsed.

Safety:

- nothing is ever written to the file: it is opened read-only, once;
- before any XML is parsed, the zip's directory is checked against :class:`Limits`: the number of
  members, the total uncompressed size, each member's size and its compression ratio; while a
  member is read, the bytes actually inflated are counted too, so a directory that lies about
  sizes is caught as well;
- every XML part goes through defusedxml's ``iterparse`` with document type declarations
  forbidden (a workbook never has one), so entity expansion ("billion laughs") and external
  entities are refused before they are expanded.
"""

from __future__ import annotations

import contextlib
import functools
import html
import io
import operator
import posixpath
import re
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import compress, repeat
from pathlib import Path
from typing import BinaryIO
from xml.etree.ElementTree import ParseError

import defusedxml
import defusedxml.ElementTree as safe_et

from ..core.errors import TokenFactoryError
from .a1 import column_index, column_letter
from .disk import NotARegularFile, open_regular

#: First bytes of an OLE2 compound file: an Excel 97–2003 ``.xls``, or an encrypted workbook.
OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")

_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_OFFICE_DOC = "/officeDocument"
_NS = {"m": _MAIN}
_C, _F, _V, _IS, _T, _SI, _RPH = (f"{{{_MAIN}}}{tag}" for tag in
                                  ("c", "f", "v", "is", "t", "si", "rPh"))
_REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"

MB = 1_000_000

#: Sheets up to this size [bytes] are read whole and scanned; larger ones are streamed. The
#: largest sheet of a TFOM workbook (the Timeline) is about 0.7 MB.
SCAN_LIMIT = 16 * MB


@dataclass(frozen=True)
class Limits:
    """What a workbook from outside may take before it is refused unread.

    A TFOM workbook is about 0.1–0.3 MB zipped and 2–5 MB of XML, and deflate shrinks its
    sheets 5–20×; the defaults leave a wide margin while refusing zip bombs in milliseconds.

    Attributes
    ----------
    max_uncompressed : the total uncompressed size of all members [bytes] (default 200 MB).
    max_ratio : the largest uncompressed ÷ compressed size of one member [ratio] (default 100),
        checked for members above ``ratio_floor``: tiny parts compress well without harm.
    ratio_floor : members at most this large are exempt from the ratio check [bytes] (1 MB).
    max_members : the number of members in the zip (default 10,000).
    """

    max_uncompressed: int = 200 * MB
    max_ratio: float = 100.0
    ratio_floor: int = 1 * MB
    max_members: int = 10_000


class RefusedFile(TokenFactoryError):
    """The file cannot be read as a workbook; ``reason`` says why in one sentence."""

    def __init__(self, reason: str, fix: str = ""):
        super().__init__(reason)
        self.reason = reason
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.reason}; {self.fix}" if self.fix else self.reason


@dataclass
class Sheet:
    """The cells of one worksheet as the file stores them, by coordinate (``"C5"``).

    ``formulas`` holds each formula's text without the leading ``=``; ``values`` each stored
    value: a number, text, a bool, an error text such as ``#N/A``. A formula cell without a
    stored value (openpyxl saves none) is in ``formulas`` only; an empty cell is in neither.
    """

    formulas: dict[str, str] = field(default_factory=dict)
    values: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class SheetPart:
    """A sheet of the workbook: its title, its kind and where its XML is in the zip."""

    title: str
    kind: str  # worksheet | chartsheet | other
    part: str | None


@dataclass
class XlsxContent:
    """What was read from one workbook; ``cells(title)`` parses a worksheet on first use."""

    path: Path
    sheets: list[SheetPart]
    defined_names: dict[str, str]
    date1904: bool
    _zip: zipfile.ZipFile
    _limits: Limits
    _strings: list[str] | None = None
    _cells: dict[str, Sheet] = field(default_factory=dict)
    _strings_part: str | None = None
    _handle: BinaryIO | None = None

    def cells(self, title: str) -> Sheet:
        """The formulas and stored values of sheet ``title`` (empty for a chart sheet)."""
        if title not in self._cells:
            sheet = next((s for s in self.sheets if s.title == title), None)
            if sheet is None or sheet.kind != "worksheet" or sheet.part is None:
                self._cells[title] = Sheet()
            else:
                self._cells[title] = _read_cells(self, sheet.part)
        return self._cells[title]

    def strings(self) -> list[str]:
        """The shared strings table (read on first use)."""
        if self._strings is None:
            self._strings = ([] if self._strings_part is None
                             else _read_shared_strings(self, self._strings_part))
        return self._strings

    def close(self) -> None:
        self._zip.close()
        if self._handle is not None:
            self._handle.close()

    def __enter__(self) -> XlsxContent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- recognising what the file is ---------------------------------------------------------------
def _opened(source: Path | BinaryIO):
    """A context giving a binary handle at offset 0: ``source`` itself (left open) or opened."""
    if isinstance(source, (str, Path)):
        return open_regular(source)
    source.seek(0)
    return contextlib.nullcontext(source)


def sniff(path: Path | BinaryIO) -> str:
    """What the file looks like from its first bytes: ``zip``, ``ole2``, ``empty`` or ``other``."""
    with _opened(path) as handle:
        head = handle.read(8)
    if not head:
        return "empty"
    if head.startswith(ZIP_MAGICS):
        return "zip"
    if head == OLE2_MAGIC:
        return "ole2"
    return "other"


def _is_encrypted_ole2(path: Path | BinaryIO) -> bool:
    """Whether an OLE2 file holds the streams of an encrypted OOXML workbook.

    Excel saves a password-protected ``.xlsx`` as an OLE2 compound file with the streams
    ``EncryptionInfo`` and ``EncryptedPackage``; their names are stored in UTF-16LE in the
    file's directory sectors, which may be anywhere in the file, so the whole file is scanned
    in overlapping chunks.
    """
    needles = [name.encode("utf-16-le") for name in ("EncryptedPackage", "EncryptionInfo")]
    found = set()
    overlap = max(len(n) for n in needles)
    tail = b""
    with _opened(path) as handle:
        while True:
            chunk = handle.read(1 << 20)
            if not chunk:
                break
            window = tail + chunk
            found.update(i for i, n in enumerate(needles) if n in window)
            tail = window[-overlap:]
    return len(found) == len(needles)


def _looks_delimited(text: str) -> bool:
    """Whether the first lines share one delimiter, the same number of times: a CSV."""
    lines = [line for line in text.splitlines()[:6] if line.strip()]
    if len(lines) > 1 and not text.endswith(("\n", "\r")):
        lines = lines[:-1]  # the last line may be cut by the 4 kB read
    for delimiter in ",;\t":
        counts = {line.count(delimiter) for line in lines}
        if len(counts) == 1 and counts != {0}:
            return True
    return False


def _describe_other(path: Path | BinaryIO) -> str:
    with _opened(path) as handle:
        head = handle.read(4096)
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        text = ""
    if text and all(ch.isprintable() or ch in "\r\n\t" for ch in text.lstrip("\ufeff")):
        if text.lstrip().startswith("<"):
            return "not an Excel workbook: it is an XML or HTML text file"
        if _looks_delimited(text):
            return "not an Excel workbook: it is a text file (a CSV renamed to .xlsx?)"
        return "not an Excel workbook: it is a text file"
    return "not an Excel workbook: its content is neither an .xlsx (zip) nor an .xls"


def open_xlsx(path: str | Path, limits: Limits | None = None) -> XlsxContent:
    """Open an untrusted ``.xlsx`` for reading its defined names and cells.

    Parameters
    ----------
    path : the file; it is only ever read.
    limits : the size limits a zip must respect before anything in it is parsed.

    Raises
    ------
    RefusedFile
        when the file is not an ``.xlsx``/``.xlsm`` workbook, is encrypted, damaged, over the
        limits, or holds XML that defusedxml refuses.
    """
    path = Path(path)
    limits = limits or Limits()
    try:
        # Only a regular file: a FIFO would block the run, a device never end.
        handle = open_regular(path)
    except NotARegularFile as exc:
        raise RefusedFile(exc.reason, exc.fix) from None
    try:
        content = _open_handle(path, handle, limits)
    except BaseException:
        handle.close()
        raise
    content._handle = handle
    return content


def _open_handle(path: Path, handle: BinaryIO, limits: Limits) -> XlsxContent:
    try:
        kind = sniff(handle)
    except OSError as exc:
        raise RefusedFile(f"the file cannot be read ({exc.strerror or exc})") from None
    if kind == "empty":
        raise RefusedFile("not an Excel workbook: the file is empty")
    if kind == "ole2":
        if _is_encrypted_ole2(handle):
            raise RefusedFile("password-protected workbook: it cannot be read without the "
                              "password", "ask the site to send it without a password")
        raise RefusedFile("an Excel 97-2003 .xls file (or another OLE2 document), not an .xlsx",
                          "open it in Excel and save it as .xlsx")
    if kind != "zip":
        raise RefusedFile(_describe_other(handle))
    try:
        handle.seek(0)
        archive = zipfile.ZipFile(handle)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise RefusedFile(f"damaged or truncated zip ({exc})",
                          "ask the site to send the file again") from None
    try:
        check_sizes(archive, limits)
        content = _read_workbook(path, archive, limits)
    except BaseException:
        archive.close()
        raise
    return content


def check_sizes(archive: zipfile.ZipFile, limits: Limits) -> None:
    """Refuse a zip over ``limits`` (members, total size, one member's ratio) or encrypted,
    from its directory alone, before anything in it is inflated.

    Raises
    ------
    RefusedFile
        saying which limit, with the figure found.
    """
    members = archive.infolist()
    if len(members) > limits.max_members:
        raise RefusedFile(f"refused: the zip has {len(members):,} members, more than the limit "
                          f"of {limits.max_members:,}")
    total = sum(m.file_size for m in members)
    if total > limits.max_uncompressed:
        raise RefusedFile(
            f"refused as a possible zip bomb: {total:,} bytes uncompressed, more than the limit "
            f"of {limits.max_uncompressed:,}", "raise --max-uncompressed if the file is genuine")
    for m in members:
        ratio = m.file_size / max(m.compress_size, 1)
        if m.file_size > limits.ratio_floor and ratio > limits.max_ratio:
            raise RefusedFile(
                f"refused as a possible zip bomb: {m.filename} expands {ratio:,.0f}× "
                f"({m.file_size:,} bytes), more than the limit of {limits.max_ratio:g}×",
                "raise --max-ratio if the file is genuine")
        if m.flag_bits & 0x1:
            raise RefusedFile("encrypted zip: the workbook parts cannot be read")


#: What reading a damaged member raises: a bad CRC, a broken deflate stream, a short file.
_DAMAGE = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError)


class _CountingReader(io.RawIOBase):
    """A zip member stream that stops once more bytes come out than the limits allow."""

    def __init__(self, stream: io.BufferedIOBase, budget: list[int], name: str):
        self._stream = stream
        self._budget = budget
        self._name = name

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        data = self._stream.read(len(buffer))
        self._budget[0] -= len(data)
        if self._budget[0] < 0:
            raise _inflates_too_much(self._name)
        buffer[: len(data)] = data
        return len(data)


def _member(content_or_zip: XlsxContent | zipfile.ZipFile, name: str,
            budget: list[int]) -> io.BufferedReader:
    archive = content_or_zip._zip if isinstance(content_or_zip, XlsxContent) else content_or_zip
    try:
        raw = archive.open(name)
    except KeyError:
        raise RefusedFile(f"damaged workbook: the part {name} is missing") from None
    return io.BufferedReader(_CountingReader(raw, budget, name), 1 << 16)


def _member_bytes(content: XlsxContent, name: str, size: int, budget: list[int]) -> bytes:
    """The whole member ``name``, whose directory says it is ``size`` bytes, in one read."""
    with content._zip.open(name) as raw:
        data = raw.read(size + 1)
    budget[0] -= len(data)
    if len(data) > size or budget[0] < 0:
        raise _inflates_too_much(name)
    return data


def _inflates_too_much(name: str) -> RefusedFile:
    return RefusedFile(f"refused as a possible zip bomb: {name} inflates to more than its zip "
                       "directory says and past the size limit")


def _iterparse(stream: io.BufferedReader, name: str,
               events: tuple[str, ...] = ("end",)) -> Iterator[tuple[str, object]]:
    """defusedxml's iterparse with DTDs forbidden; refusals and damage become RefusedFile."""
    try:
        yield from safe_et.iterparse(stream, events=events, forbid_dtd=True,
                                     forbid_entities=True, forbid_external=True)
    except defusedxml.DefusedXmlException as exc:
        raise RefusedFile(f"refused: {name} declares a document type or XML entities "
                          f"({type(exc).__name__}), as an entity attack does") from None
    except ParseError as exc:
        raise RefusedFile(f"damaged workbook: {name} is not well-formed XML ({exc})") from None
    except _DAMAGE as exc:
        raise RefusedFile(f"damaged or truncated zip: {name} cannot be read ({exc})") from None


def _rels(archive: zipfile.ZipFile, part: str, budget: list[int]) -> dict[str, tuple[str, str]]:
    """Relationship id → (type, target part) of ``part``'s ``.rels`` (empty when absent)."""
    folder, base = posixpath.split(part)
    rels_name = posixpath.join(folder, "_rels", base + ".rels")
    if rels_name not in archive.NameToInfo:
        return {}
    out = {}
    for _, elem in _iterparse(_member(archive, rels_name, budget), rels_name):
        if elem.tag == _PKG_REL:  # type: ignore[attr-defined]
            target = elem.get("Target", "")  # type: ignore[attr-defined]
            if elem.get("TargetMode") == "External":  # type: ignore[attr-defined]
                continue
            if target.startswith("/"):
                resolved = target.lstrip("/")
            else:
                resolved = posixpath.normpath(posixpath.join(folder, target))
            out[elem.get("Id", "")] = (elem.get("Type", ""), resolved)  # type: ignore
    return out


#: Why a Strict Open XML workbook is refused, and what to do.
STRICT = ("saved as Strict Open XML, whose names of every part differ from an ordinary .xlsx's, "
          "so its sheets cannot be read")
STRICT_FIX = ("in Excel: File > Save As > Excel Workbook (.xlsx), not \"Strict Open XML "
              "Spreadsheet\"")
_STRICT_MAIN = b"http://purl.oclc.org/ooxml/spreadsheetml/main"


def is_strict(archive: zipfile.ZipFile, main: str = "xl/workbook.xml",
              budget: list[int] | None = None) -> bool:
    """Whether the workbook part ``main`` is Strict Open XML (ISO 29500 Strict): its elements
    are in the purl.oclc.org namespace, not the transitional one every reader expects."""
    if main not in archive.NameToInfo:
        return False
    with _member(archive, main, budget or [1 << 20]) as stream:
        return _STRICT_MAIN in stream.read(4096)


def _read_workbook(path: Path, archive: zipfile.ZipFile, limits: Limits) -> XlsxContent:
    budget = [limits.max_uncompressed]
    root = _rels(archive, "", budget) if "_rels/.rels" in archive.NameToInfo else {}
    main = next((target for kind, target in root.values() if kind.endswith(_OFFICE_DOC)), None)
    if main is None:
        main = "xl/workbook.xml" if "xl/workbook.xml" in archive.NameToInfo else None
    if main is None or main not in archive.NameToInfo:
        if "word/document.xml" in archive.NameToInfo or "ppt/presentation.xml" in \
                archive.NameToInfo:
            raise RefusedFile("not an Excel workbook: it is a Word or PowerPoint document")
        raise RefusedFile("not an Excel workbook: a zip file without a workbook part")
    if main.endswith(".bin"):
        raise RefusedFile("an Excel binary workbook (.xlsb), not an .xlsx",
                          "open it in Excel and save it as .xlsx")
    if is_strict(archive, main, budget):
        raise RefusedFile(STRICT, STRICT_FIX)
    rels = _rels(archive, main, budget)
    sheets: list[SheetPart] = []
    names: dict[str, str] = {}
    date1904 = False
    sheet_tag, name_tag, pr_tag = (f"{{{_MAIN}}}{t}" for t in ("sheet", "definedName",
                                                                 "workbookPr"))
    local: list[tuple[str, str]] = []
    for _, elem in _iterparse(_member(archive, main, budget), main):
        tag = elem.tag  # type: ignore[attr-defined]
        if tag == sheet_tag:
            rid = elem.get(f"{{{_REL_NS}}}id", "")  # type: ignore[attr-defined]
            kind, target = rels.get(rid, ("", None))
            short = kind.rsplit("/", 1)[-1]
            sheets.append(SheetPart(elem.get("name", ""),  # type: ignore[attr-defined]
                                    short if short in ("worksheet", "chartsheet") else "other",
                                    target))
        elif tag == name_tag:
            name = elem.get("name", "")  # type: ignore[attr-defined]
            text = (elem.text or "").strip()  # type: ignore[attr-defined]
            if elem.get("localSheetId") is not None:  # type: ignore[attr-defined]
                # A sheet-scoped name never stands in for a workbook-level one.
                local.append((name, text))
            else:
                names[name] = text
        elif tag == pr_tag:
            date1904 = elem.get("date1904", "0").lower() in ("1", "true")  # type: ignore
    strings_part = next((t for k, t in rels.values() if k.endswith("/sharedStrings")), None)
    if strings_part is not None and strings_part not in archive.NameToInfo:
        strings_part = None
    return XlsxContent(path, sheets, names, date1904, archive, limits,
                       _strings_part=strings_part)


def _text_of(elem) -> str:  # type: ignore[no-untyped-def]
    """The text of a shared or inline string: every ``<t>`` run, phonetic runs excluded."""
    phonetic = {id(t) for run in elem.iter(_RPH) for t in run.iter(_T)}
    return "".join(t.text for t in elem.iter(_T) if t.text and id(t) not in phonetic)


def _read_shared_strings(content: XlsxContent, part: str) -> list[str]:
    budget = [content._limits.max_uncompressed]
    strings: list[str] = []
    for _, elem in _iterparse(_member(content, part, budget), part):
        if elem.tag == _SI:  # type: ignore[attr-defined]
            strings.append(_text_of(elem))
            elem.clear()  # type: ignore[attr-defined]
    return strings


_ERRORS = ("#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A")


# A cell as openpyxl, the batch and Excel write the common ones: ``r`` first, then plain
# attributes, an optional plain formula, an optional value (text, or an empty element) or
# one-run inline string. Anything else (shared or array formulas, rich text, another attribute
# order, ``<c>`` without an address) is left to the full parser: the same scan matches every
# other cell start too, in the last group, and one of those sends the sheet to the parser.
_FAST_CELL = re.compile(  # possessive (``*+``, ``?+``): no part ever gives back what it took
    r'<c(?: r="([A-Z]{1,3}+[0-9]{1,7}+)"(?: s="[0-9]++")?+(?: t="([a-zA-Z]++)")?+'
    r'(?: [a-z]++="[^"<>]*+")*+\s*+'
    r"(?:/>|>(?:<f>([^<]*+)</f>)?+(?:<v>([^<]++)</v>|(<v></v>|<v\s*/>))?+"
    r'(?:(<is>)<t(?: xml:space="preserve")?+>([^<]*+)</t></is>)?+</c>)|([\s>/]))')
#: A cell element written with a namespace prefix (``<x:c r="A1">``), which the scan would not
#: see (a text holding ":c " merely sends the sheet to the parser).
_PREFIXED_CELL = re.compile(r":c[\s>/]")
_XML_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&apos;", "'"), ("&amp;", "&"))
_NUMBER_KINDS = frozenset(("", "n", None))  # the t= of a cell whose value is a number
_TEXT_KINDS = frozenset(("str",))  # the t= of a formula's empty text, ""
_INLINE_KINDS = frozenset(("inlineStr",))  # the t= of a cell holding an inline string
_CELL_PARTS = 9  # the items of one cell in ``_FAST_CELL.split``: the text before it, 8 groups
_TAIL = 256  # the end of a sheet, where ``</worksheet>`` closes it


def _read_cells(content: XlsxContent, part: str) -> Sheet:
    """Every cell of a worksheet that has a formula or a value.

    The member is read once (within the size limits) and its prolog checked by defusedxml,
    which refuses any document type declaration, so no entity can be declared, expanded or
    fetched. Common cells are then scanned with one regular expression that expands nothing;
    a sheet with any other kind of cell, or larger than :data:`SCAN_LIMIT`, is parsed by
    defusedxml's iterparse.
    """
    budget = [content._limits.max_uncompressed]
    try:
        size = content._zip.getinfo(part).file_size
    except KeyError:
        raise RefusedFile(f"damaged workbook: the part {part} is missing") from None
    if size > SCAN_LIMIT:
        # A sheet this large is no TFOM sheet: streamed, so only its cells are held.
        return _parse_cells(_member(content, part, budget), part, content)
    try:
        data = _member_bytes(content, part, size, budget)
    except _DAMAGE as exc:
        raise RefusedFile(f"damaged or truncated zip: {part} cannot be read ({exc})") from None
    _check_prolog(data, part)
    cells = _scan_cells(data, content)
    if cells is None:
        cells = _parse_cells(io.BufferedReader(io.BytesIO(data)), part, content)  # type: ignore
    return cells


class _RootSeen(Exception):
    """The root element started: the prolog, the only place a DTD can be, is behind us."""


class _StopAtRoot:
    def start(self, tag: str, attrs: dict) -> None:
        raise _RootSeen

    def end(self, tag: str) -> None:  # pragma: no cover - never reached
        pass

    def data(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass


def _check_prolog(data: bytes, name: str) -> None:
    """Let defusedxml read the XML declaration and prolog; a DTD or an entity is refused."""
    parser = safe_et.DefusedXMLParser(target=_StopAtRoot(), forbid_dtd=True,
                                      forbid_entities=True, forbid_external=True)
    try:
        for start in range(0, len(data), 1 << 14):
            parser.feed(data[start:start + (1 << 14)])
        parser.close()
    except _RootSeen:
        return
    except defusedxml.DefusedXmlException as exc:
        raise RefusedFile(f"refused: {name} declares a document type or XML entities "
                          f"({type(exc).__name__}), as an entity attack does") from None
    except ParseError as exc:
        raise RefusedFile(f"damaged workbook: {name} is not well-formed XML ({exc})") from None
    raise RefusedFile(f"damaged workbook: {name} has no XML element")


@functools.lru_cache(maxsize=1 << 15)  # a template's formulas repeat in every workbook collected
def _unescape(text: str) -> str:
    """Text of an XML element: the five predefined entities and character references."""
    if "&" not in text:
        return text
    if "&#" in text:
        return html.unescape(text)
    for entity, char in _XML_ENTITIES:
        text = text.replace(entity, char)
    return text


_UNESCAPED: dict[str, str] = {}  # a template's escaped formulas, the same in every workbook


def _unescape_all(texts: Iterable[str]) -> list[str]:
    """:func:`_unescape` of each text, looked up in one C loop for the texts seen before."""
    texts = list(texts)
    found = list(map(_UNESCAPED.get, texts))
    if None in found:
        if len(_UNESCAPED) > 1 << 16:
            _UNESCAPED.clear()
        for i in [i for i, text in enumerate(found) if text is None]:
            found[i] = _UNESCAPED[texts[i]] = _unescape(texts[i])
    return found  # type: ignore[return-value]


class _FormulasSeen:
    """The formulas of the sheets scanned last, by the cells' addresses and escaped texts.

    Every workbook of a collect has the template's formulas, with its own values: a sheet
    whose addresses and formula texts are exactly those of one scanned before has its
    formulas, so they are not sorted and unescaped again. Only equal lists match (no hash
    stands in for the text), and each sheet gets its own copy of the dictionary. The sheets
    kept hold at most ``cells`` cells together (a TFOM workbook has some 30,000).
    """

    def __init__(self, cells: int = 1 << 17):
        self._cells = cells
        self._seen: dict[int, tuple[list, list, dict[str, str]]] = {}

    def formulas(self, coords: list, texts: list) -> dict[str, str]:
        key = len(coords)
        seen = self._seen.get(key)
        if seen is not None and seen[1] == texts and seen[0] == coords:
            return dict(seen[2])
        formulas = _formulas_of(coords, texts)
        self._seen.pop(key, None)
        if key <= self._cells:
            while self._seen and sum(self._seen) + key > self._cells:
                self._seen.pop(next(iter(self._seen)))  # the one kept longest
            self._seen[key] = (coords, texts, formulas)
        return dict(formulas)


def _formulas_of(coords: list, texts: list) -> dict[str, str]:
    """Address → unescaped formula text of the cells whose text is not empty or ``None``."""
    with_formula = list(map(bool, texts))
    texts = list(compress(texts, with_formula))
    formula_coords = list(compress(coords, with_formula))
    formulas = dict(zip(formula_coords, texts, strict=True))
    escaped = list(map(operator.contains, texts, repeat("&")))  # ``&lt;=`` in most guards
    if any(escaped):
        formulas.update(zip(compress(formula_coords, escaped),
                            _unescape_all(compress(texts, escaped)), strict=True))
    return formulas


_FORMULAS_SEEN = _FormulasSeen()


def _scan_cells(data: bytes, content: XlsxContent) -> Sheet | None:
    """The cells of a sheet whose cells all have the common form, or ``None``.

    A TFOM sheet has some 15,000 cells: the one scan splits the text into a flat list, the
    eight parts of each cell every :data:`_CELL_PARTS` items, and the cells are sorted into
    formulas and values by slices and loops that run in C (``compress``, ``map``), not cell
    by cell.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None  # another encoding (UTF-16 is allowed): the parser reads it
    if not text[-_TAIL:].rstrip().endswith("</worksheet>") or _PREFIXED_CELL.search(text):
        return None  # truncated, or written another way: the parser decides
    parts = _FAST_CELL.split(text)  # the text between cells, then each group (None if unmatched)
    del text
    if len(parts) == 1:
        return Sheet()
    if any(parts[8::_CELL_PARTS]):
        return None  # a cell of another form
    coords, kinds, texts, stored, empty, inline_strings = (parts[i::_CELL_PARTS]
                                                           for i in range(1, 7))
    formulas = _FORMULAS_SEEN.formulas(coords, texts)
    # A stored value is a number where the cell has no type or "n", a formula's text where it
    # has type "str" (its result, "n/m" or a label), and the empty text where an empty ``<v>``
    # has type "str" (a formula's ""): nearly every value, taken in bulk. Any other kind
    # (shared strings, booleans, errors, dates) is read one by one.
    stored_kinds = set(compress(kinds, stored))
    if (stored_kinds <= _NUMBER_KINDS | _TEXT_KINDS
            and set(compress(kinds, empty)) <= _TEXT_KINDS
            and set(compress(kinds, inline_strings)) <= _INLINE_KINDS):
        numbers = stored
        if stored_kinds & _TEXT_KINDS:  # the cells of type "str" apart, in C loops
            has_value = list(map(bool, stored))
            text = list(map(operator.and_, has_value,
                            map(operator.contains, repeat(_TEXT_KINDS), kinds)))
            numbers = list(map(operator.xor, has_value, text))
        try:
            values: dict[str, object] = dict(zip(compress(coords, numbers),
                                                 map(float, compress(stored, numbers)),
                                                 strict=True))
        except ValueError:
            pass  # a number cell holding text: read one by one
        else:
            if numbers is not stored:
                values.update(zip(compress(coords, text),
                                  map(_unescape, compress(stored, text)), strict=True))
            values.update(dict.fromkeys(compress(coords, empty), ""))
            if any(inline_strings):
                inlines = parts[7::_CELL_PARTS]
                values.update(zip(compress(coords, inline_strings),
                                  map(_unescape, compress(inlines, inline_strings)), strict=True))
            return Sheet(formulas, values)
    values = {}
    inlines = parts[7::_CELL_PARTS]
    for coord, kind, v, blank, inline_string, inline in zip(coords, kinds, stored, empty,
                                                             inline_strings, inlines,
                                                             strict=True):
        if v:
            value = _value(kind or "n", _unescape(v), content)
            if value is not None:  # (a shared string's index out of range: none, as parsed)
                values[coord] = value
        elif kind == "inlineStr" and inline_string:
            values[coord] = _unescape(inline or "")
        elif kind == "str" and blank:
            values[coord] = ""  # a formula whose result is empty text, as Excel stores it
    return Sheet(formulas, values)


def _parse_cells(stream: io.BufferedReader, part: str, content: XlsxContent) -> Sheet:
    """Every cell of a worksheet, parsed element by element with defusedxml's iterparse."""
    sheet = Sheet()
    shared: dict[str, tuple[str, str]] = {}  # shared-formula index → (formula, anchor cell)
    for _, elem in _iterparse(stream, part):
        if elem.tag != _C:  # type: ignore[attr-defined]
            continue
        coord = elem.get("r")  # type: ignore[attr-defined]
        kind = elem.get("t", "n")  # type: ignore[attr-defined]
        formula = None
        value: object = None
        f = elem.find(_F)  # type: ignore[attr-defined]
        if f is not None:
            formula = f.text or ""
            if f.get("t") == "shared":
                index = f.get("si", "")
                if formula:
                    shared[index] = (formula, coord)
                elif index in shared:
                    formula = _translate(*shared[index], coord)
        v = elem.find(_V)  # type: ignore[attr-defined]
        if kind == "inlineStr":
            inline = elem.find(_IS)  # type: ignore[attr-defined]
            value = _text_of(inline) if inline is not None else None
        elif v is not None and v.text is not None:
            value = _value(kind, v.text, content)
        elif v is not None and kind == "str":
            value = ""  # a formula whose result is empty text, as Excel stores it
        elem.clear()  # type: ignore[attr-defined]
        if coord is None:
            continue  # cells without an address are not written by any spreadsheet
        if formula:
            sheet.formulas[coord] = formula
        if value is not None:
            sheet.values[coord] = value
    return sheet


def _value(kind: str, text: str, content: XlsxContent) -> object:
    if kind == "s":
        strings = content.strings()
        try:
            return strings[int(text)]
        except (ValueError, IndexError):
            return None
    if kind in ("str", "d"):
        return text
    if kind == "b":
        return text.strip() in ("1", "true")
    if kind == "e":
        return text.strip()
    try:
        return float(text)
    except ValueError:
        return text


def _translate(formula: str, anchor: str, coord: str) -> str:
    """A shared formula's text at ``coord``, moved from its anchor cell as Excel fills it."""
    from openpyxl.formula.translate import Translator

    return Translator("=" + formula, origin=anchor).translate_formula(coord)[1:]


# -- defined names --------------------------------------------------------------------------------
_REF = re.compile(r"^(?:'((?:[^']|'')+)'|([^'!:]+))!\$?([A-Z]{1,3})\$?(\d+)"
                  r"(?::\$?([A-Z]{1,3})\$?(\d+))?$")


@functools.lru_cache(maxsize=4096)  # every workbook of a batch has the same names
def parse_reference(text: str) -> tuple[str, tuple[str, ...]] | None:
    """``"Inputs!$C$30:$E$30"`` → ``("Inputs", ("C30", "D30", "E30"))``; ``None`` if not a range.

    Only a reference to one sheet's cell or rectangle is understood; a formula, a constant or
    ``#REF!`` gives ``None``.
    """
    match = _REF.match(text.strip())
    if not match:
        return None
    quoted, plain, col1, row1, col2, row2 = match.groups()
    sheet = quoted.replace("''", "'") if quoted is not None else plain
    col2, row2 = col2 or col1, row2 or row1
    c1, c2 = column_index(col1), column_index(col2)
    r1, r2 = int(row1), int(row2)
    if c2 < c1 or r2 < r1 or (c2 - c1 + 1) * (r2 - r1 + 1) > 1000:
        return None
    cells = tuple(f"{column_letter(c)}{r}" for r in range(r1, r2 + 1)
                  for c in range(c1, c2 + 1))
    return sheet, cells


@functools.lru_cache(maxsize=4096)
def canonical_reference(text: str) -> str:
    """A reference written one way (quotes only where needed, ``$`` everywhere) for comparing."""
    parsed = parse_reference(text)
    if parsed is None:
        return text.strip()
    sheet, cells = parsed
    return f"{sheet}!{cells[0]}:{cells[-1]}"
