"""The package conventions every ``.xlsx`` reader expects, applied to what openpyxl writes.

A workbook is a zip of XML parts tied by relationships (ECMA-376 Part 2). openpyxl writes valid
parts, but in spellings that Excel and LibreOffice accept and some readers do not: relationship
targets as absolute paths (``/xl/drawings/drawing1.xml``), the drawing part in a default
namespace instead of the ``xdr:`` prefix, comments at ``xl/comments/comment1.xml`` (their
shapes at ``xl/drawings/commentsDrawing1.vml``). exceljs, on
which many finance tools are built, opens none of them. Here each part is written as Excel
itself writes it: targets relative to the part that holds the relationship
(``../drawings/drawing1.xml``), ``<xdr:wsDr xmlns:xdr=…>``, comments at ``xl/comments1.xml``
and ``xl/drawings/vmlDrawing1.vml``.
The meaning of every part is unchanged; a strict Office Open XML reader reads either spelling.

:func:`conventions` says, from a package's member names, which members to rename and how to
rewrite which others; the workbook's and the portfolio's writers apply it member by member.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable

_DRAWING = re.compile(r"xl/drawings/drawing\d+\.xml")
_COMMENTS = re.compile(r"xl/comments/comment(\d+)\.xml")
_COMMENTS_VML = re.compile(r"xl/drawings/commentsDrawing(\d+)\.vml")
_XDR = b"http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing"
_DEFAULT_XDR = b'xmlns="' + _XDR + b'"'
#: An element's start or end tag without a namespace prefix.
_BARE_TAG = re.compile(rb"<(/?)(?![?!])([A-Za-z_][\w.-]*)(?=[\s/>])")
_TARGET = re.compile(rb'Target="/([^"]*)"')
_PART_NAME = re.compile(rb'PartName="/([^"]*)"')

Rewrite = Callable[[bytes], bytes]


def escape_text(text: str) -> str:
    """XML character data: ``&``, ``<`` and ``>`` as entities (what ``xml.sax.saxutils.escape``
    gives, without importing that module, which imports ``urllib.request``, ``http`` and
    ``ssl``: 20 ms of a command's CPU)."""
    return text.replace("&", "&amp;").replace(">", "&gt;").replace("<", "&lt;")


def unescape_text(text: str) -> str:
    """The text of an XML element or attribute: :func:`escape_text`'s inverse, quotes included
    (``xml.sax.saxutils.unescape`` with ``&apos;`` and ``&quot;``)."""
    text = text.replace("&lt;", "<").replace("&gt;", ">")
    text = text.replace("&apos;", "'").replace("&quot;", '"')
    return text.replace("&amp;", "&")  # last: "&amp;lt;" is the text "&lt;"


def conventions(names: Iterable[str]) -> tuple[dict[str, str], dict[str, Rewrite]]:
    """For a package of these member names: (old name → new name, member → rewrite of its
    content), the rewrite keyed by the member's old name."""
    names = list(names)
    renames = {name: f"xl/comments{m.group(1)}.xml"
               for name in names if (m := _COMMENTS.fullmatch(name))}
    renames |= {name: f"xl/drawings/vmlDrawing{m.group(1)}.vml"
                for name in names if (m := _COMMENTS_VML.fullmatch(name))}
    rewrite: dict[str, Rewrite] = {}
    for name in names:
        if name.endswith(".rels"):
            rewrite[name] = _relative_targets(name, renames)
        elif name == "[Content_Types].xml":
            rewrite[name] = _renamed_parts(renames)
        elif _DRAWING.fullmatch(name):
            rewrite[name] = prefixed_drawing
    return renames, rewrite


def _relative_targets(rels_name: str, renames: dict[str, str]) -> Rewrite:
    # the part a .rels describes: "xl/worksheets/_rels/sheet1.xml.rels" → "xl/worksheets";
    # the package's own "_rels/.rels" → the root
    folder = posixpath.dirname(posixpath.dirname(rels_name))

    def rewrite(xml: bytes) -> bytes:
        def relative(match: re.Match[bytes]) -> bytes:
            target = match.group(1).decode("utf-8")
            target = renames.get(target, target)
            if folder == "":
                return b'Target="' + target.encode("utf-8") + b'"'
            return b'Target="' + posixpath.relpath(target, folder).encode("utf-8") + b'"'
        return _TARGET.sub(relative, xml)
    return rewrite


def _renamed_parts(renames: dict[str, str]) -> Rewrite:
    def rewrite(xml: bytes) -> bytes:
        def renamed(match: re.Match[bytes]) -> bytes:
            part = match.group(1).decode("utf-8")
            return b'PartName="/' + renames.get(part, part).encode("utf-8") + b'"'
        return _PART_NAME.sub(renamed, xml) if renames else xml
    return rewrite


def prefixed_drawing(xml: bytes) -> bytes:
    """A drawing part written with the ``xdr:`` prefix for its own namespace, where openpyxl
    declares that namespace as the default. Any other spelling is returned as it is."""
    if xml.count(b'xmlns="') != 1 or _DEFAULT_XDR not in xml:
        return xml
    xml = xml.replace(_DEFAULT_XDR, b'xmlns:xdr="' + _XDR + b'"')
    return _BARE_TAG.sub(rb"<\1xdr:\2", xml)
