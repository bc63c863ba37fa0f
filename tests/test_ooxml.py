"""The package spellings every reader expects (tokenfactory_xl.files.ooxml), on parts as openpyxl
writes them."""

from __future__ import annotations

from tokenfactory_xl.files import ooxml

XDR = "http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing"
A = "http://schemas.openxmlformats.org/drawingml/2006/main"


def test_relationship_targets_become_relative_to_the_part_that_holds_them():
    names = ["_rels/.rels", "xl/_rels/workbook.xml.rels", "xl/worksheets/_rels/sheet1.xml.rels",
             "xl/comments/comment1.xml", "xl/drawings/commentsDrawing1.vml"]
    renames, rewrite = ooxml.conventions(names)
    assert renames == {"xl/comments/comment1.xml": "xl/comments1.xml",
                       "xl/drawings/commentsDrawing1.vml": "xl/drawings/vmlDrawing1.vml"}
    assert rewrite["_rels/.rels"](b'<R Target="/xl/workbook.xml" Id="rId1"/>') \
        == b'<R Target="xl/workbook.xml" Id="rId1"/>'
    assert rewrite["xl/_rels/workbook.xml.rels"](b'<R Target="/xl/worksheets/sheet1.xml"/>'
                                                 b'<R Target="styles.xml"/>') \
        == b'<R Target="worksheets/sheet1.xml"/><R Target="styles.xml"/>'
    sheet_rels = rewrite["xl/worksheets/_rels/sheet1.xml.rels"]
    assert sheet_rels(b'<R Target="/xl/comments/comment1.xml"/>'
                      b'<R Target="/xl/drawings/commentsDrawing1.vml"/>'
                      b'<R Target="/xl/tables/table1.xml"/>') \
        == (b'<R Target="../comments1.xml"/><R Target="../drawings/vmlDrawing1.vml"/>'
            b'<R Target="../tables/table1.xml"/>')


def test_content_types_follow_the_renamed_parts():
    renames, rewrite = ooxml.conventions(["[Content_Types].xml", "xl/comments/comment2.xml"])
    xml = (b'<Override PartName="/xl/comments/comment2.xml" ContentType="c"/>'
           b'<Override PartName="/xl/styles.xml" ContentType="s"/>')
    assert rewrite["[Content_Types].xml"](xml) == (
        b'<Override PartName="/xl/comments2.xml" ContentType="c"/>'
        b'<Override PartName="/xl/styles.xml" ContentType="s"/>')


def test_a_drawing_part_takes_the_xdr_prefix():
    xml = (f'<wsDr xmlns:a="{A}" xmlns="{XDR}"><oneCellAnchor><from><col>5</col></from>'
           f'<graphicFrame><a:graphic/></graphicFrame><clientData /></oneCellAnchor>'
           f'</wsDr>').encode()
    assert ooxml.prefixed_drawing(xml) == (
        f'<xdr:wsDr xmlns:a="{A}" xmlns:xdr="{XDR}"><xdr:oneCellAnchor><xdr:from>'
        f'<xdr:col>5</xdr:col></xdr:from><xdr:graphicFrame><a:graphic/></xdr:graphicFrame>'
        f'<xdr:clientData /></xdr:oneCellAnchor></xdr:wsDr>').encode()
    # already prefixed, or another default namespace: left as it is
    done = ooxml.prefixed_drawing(xml)
    assert ooxml.prefixed_drawing(done) == done
    other = b'<wsDr xmlns="urn:other"><x/></wsDr>'
    assert ooxml.prefixed_drawing(other) == other


def test_text_escaped_and_read_back_as_the_standard_library_does():
    """escape_text and unescape_text give xml.sax.saxutils' escape and unescape (with the two
    quote entities), which the package does not import (it brings in http and ssl)."""
    from xml.sax.saxutils import escape, unescape

    from tokenfactory_xl.files.ooxml import escape_text, unescape_text

    for text in ("R&D <budget> 'Q1' \"net\"", "&amp;lt; stays &lt;", "&apos;&quot;&gt;", "",
                 "plain", "Tab!$A$1:$A$3"):
        assert escape_text(text) == escape(text)
        assert unescape_text(text) == unescape(text, {"&apos;": "'", "&quot;": '"'})
        assert unescape_text(escape_text(text)) == text
