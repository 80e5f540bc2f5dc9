"""OpenDocument text (.odt) read as its reader reads it."""

from __future__ import annotations

import pytest

from harness.corpus import load_documents
from harness.corpus.odf import odt_text
from harness.errors import ConfigError
from tests.corpus.office import odf

STYLES = (
    '<text:outline-style style:name="Outline">'
    '<text:outline-level-style text:level="1" style:num-format="1" style:num-suffix="."/>'
    '<text:outline-level-style text:level="2" style:num-format="1" text:display-levels="2"/>'
    "</text:outline-style>"
    '<style:style style:name="P1" style:family="paragraph" style:parent-style-name="Title"/>'
    '<text:list-style style:name="L1">'
    '<text:list-level-style-number text:level="1" style:num-format="1" style:num-suffix="."/>'
    '<text:list-level-style-number text:level="2" style:num-format="a" '
    'style:num-prefix="(" style:num-suffix=")"/>'
    "</text:list-style>"
    '<text:list-style style:name="L2"><text:list-level-style-bullet text:level="1" '
    'text:bullet-char="•"/></text:list-style>'
)


def odt(path, body, *, styles=STYLES, title=None, manifest=None):
    """An .odt written by hand as LibreOffice lays it out: `body` is the XML inside
    office:text, `styles` content.xml's automatic styles."""
    return odf(path, "text", body, styles=styles, title=title, manifest=manifest)


def test_an_odt_reads_as_a_word_document_does(tmp_path):
    """Title and headings (with their stored numbers) as markdown's; lists numbered as
    their style shows them, nested and continued; footnotes after their paragraph; tables
    as rows; text boxes in place; line breaks and spaces."""
    body = (
        '<text:p text:style-name="P1">Leave policy</text:p>'
        "<text:table-of-content><text:index-body><text:p>Annual leave 1</text:p>"
        "</text:index-body></text:table-of-content>"
        '<text:h text:outline-level="1">Annual leave</text:h>'
        '<text:p>Full-time staff get 27 days<text:note text:note-class="footnote">'
        "<text:note-citation>1</text:note-citation><text:note-body><text:p>Pro rata "
        "part-time.</text:p></text:note-body></text:note> a year.</text:p>"
        '<text:list xml:id="a" text:style-name="L1">'
        "<text:list-item><text:p>Ask your manager</text:p></text:list-item>"
        "<text:list-item><text:p>Then:</text:p><text:list>"
        "<text:list-item><text:p>book it</text:p></text:list-item>"
        "<text:list-item><text:p>relax</text:p></text:list-item></text:list></text:list-item>"
        "</text:list>"
        "<text:p>Between the lists.</text:p>"
        '<text:list text:style-name="L1" text:continue-numbering="true">'
        "<text:list-item><text:p>Come back</text:p></text:list-item></text:list>"
        '<text:list text:style-name="L2"><text:list-item><text:p>Carry over 5 days'
        "</text:p></text:list-item></text:list>"
        "<table:table><table:table-column/><table:table-header-rows><table:table-row>"
        "<table:table-cell><text:p>Country</text:p></table:table-cell>"
        "<table:table-cell><text:p>Days</text:p></table:table-cell></table:table-row>"
        "</table:table-header-rows><table:table-row><table:table-cell><text:p>UK</text:p>"
        "</table:table-cell><table:covered-table-cell/><table:table-cell><text:p>8"
        "</text:p></table:table-cell></table:table-row></table:table>"
        "<text:p>See<draw:frame><draw:text-box><text:p>Boxed note</text:p></draw:text-box>"
        '</draw:frame> below:<text:line-break/>one<text:s text:c="3"/>two<text:tab/>three'
        "</text:p>"
        '<text:h text:outline-level="2">Carrying over</text:h>'
        '<text:h text:outline-level="1">Pay</text:h>'
    )
    text, title = odt_text(odt(tmp_path / "leave.odt", body, title="From the template"))
    assert title == "Leave policy"
    assert text.split("\n") == [
        "# Leave policy",
        "## 1. Annual leave",
        "Full-time staff get 27 days[1] a year.",
        "[1] Pro rata part-time.",
        "1. Ask your manager",
        "2. Then:",
        "  (a) book it",
        "  (b) relax",
        "Between the lists.",
        "3. Come back",
        "- Carry over 5 days",
        "Country | Days",
        "UK | 8",
        "See below:",
        "one two three",
        "Boxed note",
        "### 1.1 Carrying over",
        "## 2. Pay",
    ]


def test_what_a_reader_does_not_see_is_not_read(tmp_path):
    body = (
        "<text:tracked-changes><text:changed-region><text:deletion><text:p>Old rule"
        "</text:p></text:deletion></text:changed-region></text:tracked-changes>"
        "<text:p>Kept<office:annotation><dc:creator>Ann</dc:creator><text:p>a comment"
        "</text:p></office:annotation> text.</text:p>"
        "<text:hidden-paragraph>secret</text:hidden-paragraph>"
        '<text:p>Shown<text:hidden-text text:string-value="x">hidden</text:hidden-text>.'
        "</text:p>"
        "<text:p><draw:frame><svg:title>Logo</svg:title><draw:image/></draw:frame></text:p>"
    )
    text, title = odt_text(odt(tmp_path / "a.odt", body, title="Props title"))
    assert text == "Kept text.\nShown."
    assert title == "Props title"


def test_bad_odt_files_are_refused_in_one_line_and_an_empty_one_has_no_text(tmp_path):
    renamed = tmp_path / "old.odt"
    renamed.write_bytes(b"\xd0\xcf\x11\xe0 a legacy binary document")
    with pytest.raises(
        ConfigError, match=r"not a \.odt \(a legacy \.doc renamed\?\): save it from LibreOffice"
    ):
        odt_text(renamed)
    locked = odt(
        tmp_path / "locked.odt",
        "<text:p>x</text:p>",
        manifest='<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:'
        'manifest:1.0"><manifest:file-entry manifest:full-path="content.xml">'
        "<manifest:encryption-data/></manifest:file-entry></manifest:manifest>",
    )
    with pytest.raises(ConfigError, match=r"locked\.odt: corpus\.sources: the document is passw"):
        odt_text(locked)
    (tmp_path / "new.odt").write_bytes(b"")
    (tmp_path / "b.md").write_text("# B\n\nText.\n")
    (tmp_path / "old.odt").unlink()
    (tmp_path / "locked.odt").unlink()
    assert [d.doc_id for d in load_documents(tmp_path)] == ["b.md"]


def test_lists_continue_show_their_levels_and_count_letters_as_odf_does(tmp_path):
    styles = STYLES + (
        '<text:list-style style:name="L3">'
        '<text:list-level-style-number text:level="1" style:num-format="1" style:num-suffix="."/>'
        '<text:list-level-style-number text:level="2" style:num-format="1" '
        'style:num-suffix="." text:display-levels="2"/></text:list-style>'
        '<text:list-style style:name="L4"><text:list-level-style-number text:level="1" '
        'style:num-format="a" style:num-suffix=")"/></text:list-style>'
    )
    item = "<text:list-item><text:p>{}</text:p></text:list-item>"
    body = (
        '<text:list xml:id="list1" text:style-name="L3">'
        + item.format("A")
        + "<text:list-item><text:p>B</text:p><text:list>"
        + item.format("B1")
        + "</text:list></text:list-item></text:list>"
        + '<text:list text:style-name="L2">'
        + item.format("dot")
        + "</text:list>"
        + '<text:list xml:id="list3" text:continue-list="list1" text:style-name="L3">'
        + item.format("C")
        + "</text:list>"
        + '<text:list text:style-name="L4">'
        + "".join(item.format(n) for n in range(28))
        + "</text:list>"
    )
    lines = odt_text(odt(tmp_path / "l.odt", body, styles=styles))[0].split("\n")
    assert lines[:5] == ["1. A", "2. B", "  2.1. B1", "- dot", "3. C"]
    assert lines[5:7] == ["a) 0", "b) 1"] and lines[-2:] == ["aa) 26", "ab) 27"]


def test_hidden_text_frames_shapes_cells_and_notes(tmp_path):
    """Hidden by a style, a field or a section: not read; a page's frame, a shape's
    text and a box within a box: read once; a heading in a cell is text; a note comes
    after its paragraph, before the paragraph's text boxes; empty cells are left out;
    a line feed in the XML's text is a space."""
    styles = STYLES + (
        '<style:style style:name="Hide" style:family="text">'
        '<style:text-properties text:display="none"/></style:style>'
        '<style:style style:name="HideP" style:family="paragraph">'
        '<style:text-properties text:display="none"/></style:style>'
    )
    body = (
        '<text:p>Seen<text:span text:style-name="Hide"> unseen</text:span>.</text:p>'
        '<text:p text:style-name="HideP">hidden paragraph</text:p>'
        '<text:p><text:hidden-paragraph text:is-hidden="true"/>field-hidden</text:p>'
        '<text:p>Shown <text:hidden-text text:is-hidden="false" text:string-value="too">'
        "too</text:hidden-text></text:p>"
        '<text:section text:name="S" text:display="none"><text:p>section text</text:p>'
        "</text:section>"
        "<draw:frame><draw:text-box><text:p>Page frame<draw:frame><draw:text-box><text:p>"
        "Inner</text:p></draw:text-box></draw:frame></text:p></draw:text-box></draw:frame>"
        "<text:p>Cite<text:note><text:note-citation>1</text:note-citation><text:note-body>"
        "<text:p>The note.</text:p></text:note-body></text:note> here<draw:custom-shape>"
        "<text:p>Shape text</text:p></draw:custom-shape></text:p>"
        "<table:table><table:table-row><table:table-cell><text:h>Head</text:h><text:p>a"
        "</text:p></table:table-cell><table:table-cell/><table:table-cell><text:p "
        'text:style-name="P1">z</text:p></table:table-cell></table:table-row></table:table>'
        "<text:p>Hello\n   world</text:p>"
    )
    text, title = odt_text(odt(tmp_path / "h.odt", body, styles=styles))
    assert text.split("\n") == [
        "Seen.",
        "Shown too",
        "Page frame",
        "Inner",
        "Cite[1] here",
        "[1] The note.",
        "Shape text",
        "Head a | z",
        "Hello world",
    ]
    assert title == ""  # no Title-styled paragraph outside a cell, no heading, no properties
