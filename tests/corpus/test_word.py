"""Word documents (.docx) in a corpus: read as they read, written by hand so the tests need
no Word writer. The styles and list numbering follow what Word writes (a style's ID is
its local name, "berschrift1" in German Word; its name is the built-in English one)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from harness.corpus import chunk_documents, load_documents
from harness.corpus.ooxml import MAX_UNPACKED_BYTES
from harness.corpus.word import word_text
from harness.errors import ConfigError
from tests.corpus.office import write_properties

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
NAMESPACES = (
    f'xmlns:w="{W}" '
    'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
    'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" '
    'xmlns:v="urn:schemas-microsoft-com:vml"'
)
STYLES = f"""<w:styles xmlns:w="{W}">
<w:style w:type="paragraph" w:styleId="Normal"><w:name w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/></w:style>
<w:style w:type="paragraph" w:styleId="berschrift1"><w:name w:val="heading 1"/>
  <w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/></w:style>
<w:style w:type="paragraph" w:styleId="PolicyHeading"><w:name w:val="Policy Heading"/>
  <w:basedOn w:val="Heading2"/></w:style>
<w:style w:type="paragraph" w:styleId="ListBullet"><w:name w:val="List Bullet"/>
  <w:pPr><w:numPr><w:numId w:val="1"/></w:numPr></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="TOC1"><w:name w:val="toc 1"/></w:style>
<w:style w:type="character" w:styleId="Hyperlink"><w:name w:val="Hyperlink"/></w:style>
</w:styles>"""
NUMBERING = f"""<w:numbering xmlns:w="{W}">
<w:abstractNum w:abstractNumId="0">
  <w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="bullet"/></w:lvl>
  <w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="bullet"/></w:lvl>
</w:abstractNum>
<w:abstractNum w:abstractNumId="1">
  <w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/></w:lvl>
  <w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/></w:lvl>
</w:abstractNum>
<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>
<w:num w:numId="2"><w:abstractNumId w:val="1"/></w:num>
<w:num w:numId="3"><w:abstractNumId w:val="1"/>
  <w:lvlOverride w:ilvl="0"><w:startOverride w:val="1"/></w:lvlOverride></w:num>
</w:numbering>"""


def para(text: str, style: str | None = None, num: tuple[int, int] | None = None) -> str:
    """A paragraph of one run, with a style and a list (numId, level) when given."""
    pr = ""
    if style or num:
        pr = "<w:pPr>"
        pr += f'<w:pStyle w:val="{style}"/>' if style else ""
        if num:
            pr += f'<w:numPr><w:ilvl w:val="{num[1]}"/><w:numId w:val="{num[0]}"/></w:numPr>'
        pr += "</w:pPr>"
    return f'<w:p>{pr}<w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:p>'


def docx(
    path: Path,
    body: str,
    *,
    title: str | None = None,
    styles: str | None = STYLES,
    numbering: str | None = NUMBERING,
    parts: dict[str, str] | None = None,
) -> Path:
    """Write a .docx holding `body` (the XML inside `w:body`) at `path`, and `parts`
    (name -> XML) beside it."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr(
            "word/document.xml",
            f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            f"<w:document {NAMESPACES}><w:body>{body}<w:sectPr/></w:body></w:document>",
        )
        if styles is not None:
            z.writestr("word/styles.xml", styles)
        if numbering is not None:
            z.writestr("word/numbering.xml", numbering)
        for part, xml in (parts or {}).items():
            z.writestr(part, xml)
        if title is not None:
            write_properties(z, title)
    return path


def test_headings_lists_and_tables_read_as_a_reader_sees_them(tmp_path):
    body = "".join(
        [
            para("Leave policy", "Title"),
            para("Annual leave", "berschrift1"),  # German Word's "Heading 1"
            para("Employees get 27 days."),
            para("Carrying over", "PolicyHeading"),  # a custom style based on heading 2
            para("Up to 5 days.", "ListBullet"),  # a list style gives the list
            para("Taken by 31 March.", "ListBullet", (1, 1)),  # level from the paragraph
            para("Open Fernhill.", num=(2, 0)),
            para("Choose the dates.", num=(2, 0)),
            para("Half days count.", num=(2, 1)),
            para("Submit.", num=(2, 0)),
            para("Start again.", num=(3, 0)),  # another list: its own count
            para("Not a list item.", "ListBullet", (0, 0)),  # numId 0 takes it out
            "<w:tbl><w:tblPr/><w:tblGrid/>"
            "<w:tr><w:tc><w:tcPr/>" + para("Data") + "</w:tc>"
            "<w:tc>" + para("Kept for") + "</w:tc></w:tr>"
            "<w:tr><w:tc>" + para("Security logs") + "</w:tc><w:sdt><w:sdtContent>"
            "<w:tc>" + para("1 year") + para("then deleted", "berschrift1") + "</w:tc>"
            "</w:sdtContent></w:sdt></w:tr>"
            "</w:tbl>",
        ]
    )
    text, title = word_text(docx(tmp_path / "leave.docx", body))
    assert text.splitlines() == [
        "# Leave policy",
        "## Annual leave",
        "Employees get 27 days.",
        "### Carrying over",
        "- Up to 5 days.",
        "  - Taken by 31 March.",
        "1. Open Fernhill.",
        "2. Choose the dates.",
        "  a. Half days count.",
        "3. Submit.",
        "1. Start again.",
        "Not a list item.",
        "Data | Kept for",
        "Security logs | 1 year then deleted",  # a cell in a content control; no heading marks
    ]
    assert title == "Leave policy"  # the Title-styled paragraph


def test_only_the_text_a_reader_sees_is_read(tmp_path):
    """Tracked deletions, text moved away, field codes, Word's table of contents and the
    second copy of a text box are left out; insertions, hyperlinks, content controls,
    fields' results and breaks are read."""
    toc = (
        '<w:sdt><w:sdtPr><w:docPartObj><w:docPartGallery w:val="Table of Contents"/>'
        "</w:docPartObj></w:sdtPr><w:sdtContent>"
        + para("Contents")
        + para("Annual leave\t3", "TOC1")
        + "</w:sdtContent></w:sdt>"
    )
    tracked = (
        "<w:p><w:r><w:t>Leave is </w:t></w:r>"
        '<w:del w:id="1"><w:r><w:delText>25</w:delText></w:r></w:del>'
        '<w:ins w:id="2"><w:r><w:t>27</w:t></w:r></w:ins>'
        '<w:moveFrom w:id="3"><w:r><w:t>moved away</w:t></w:r></w:moveFrom>'
        '<w:r><w:t xml:space="preserve"> days; see </w:t></w:r>'
        '<w:hyperlink w:history="1"><w:r><w:t>Fernhill</w:t></w:r></w:hyperlink>'
        '<w:r><w:fldChar w:fldCharType="begin"/></w:r>'
        '<w:r><w:instrText xml:space="preserve"> PAGE </w:instrText></w:r>'
        '<w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>(p. 4)</w:t></w:r>'
        '<w:r><w:fldChar w:fldCharType="end"/></w:r>'
        "<w:r><w:br/><w:t>Second line.</w:t></w:r></w:p>"
    )
    box = (
        "<w:p><w:r><w:t>Before the box.</w:t></w:r><w:r><mc:AlternateContent>"
        '<mc:Choice Requires="wps"><w:drawing><wps:txbx><w:txbxContent>'
        + para("In the box.")
        + "</w:txbxContent></wps:txbx></w:drawing></mc:Choice>"
        "<mc:Fallback><w:pict><v:textbox><w:txbxContent>"
        + para("In the box.")
        + "</w:txbxContent></v:textbox></w:pict></mc:Fallback>"
        "</mc:AlternateContent></w:r></w:p>"
    )
    control = (
        "<w:sdt><w:sdtPr/><w:sdtContent>" + para("Owner: People team.") + "</w:sdtContent></w:sdt>"
    )
    text, _ = word_text(docx(tmp_path / "d.docx", toc + tracked + box + control + para("  ")))
    assert text.splitlines() == [
        "Leave is 27 days; see Fernhill(p. 4)",
        "Second line.",
        "Before the box.",
        "In the box.",
        "Owner: People team.",
    ]


def test_the_title_is_the_title_styled_paragraph_then_the_properties_then_a_heading(tmp_path):
    body = para("Purpose", "berschrift1") + para("Leave policy", "Title")
    assert word_text(docx(tmp_path / "a.docx", body, title="Policy template"))[1] == "Leave policy"
    body = para("Purpose", "berschrift1") + para("Hello there.")
    assert word_text(docx(tmp_path / "b.docx", body, title="Expenses"))[1] == "Expenses"
    assert word_text(docx(tmp_path / "c.docx", body))[1] == "Purpose"
    path = docx(tmp_path / "d.docx", para("Plain."), styles=None, numbering=None)
    assert word_text(path) == ("Plain.", "")


NUMBERED = f"""<w:numbering xmlns:w="{W}">
<w:abstractNum w:abstractNumId="10"><w:styleLink w:val="LegalList"/>
  <w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl>
  <w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/><w:lvlText w:val="(%2)"/></w:lvl>
  <w:lvl w:ilvl="2"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1.%3"/></w:lvl>
</w:abstractNum>
<w:abstractNum w:abstractNumId="11"><w:numStyleLink w:val="LegalList"/></w:abstractNum>
<w:abstractNum w:abstractNumId="12">
  <w:lvl w:ilvl="0"><w:start w:val="0"/><w:numFmt w:val="decimalFullWidth"/><w:lvlText w:val="Step %1:"/></w:lvl>
  <w:lvl w:ilvl="1"><w:numFmt w:val="none"/><w:lvlText w:val=""/></w:lvl>
</w:abstractNum>
<w:num w:numId="5"><w:abstractNumId w:val="10"/></w:num>
<w:num w:numId="6"><w:abstractNumId w:val="10"/></w:num>
<w:num w:numId="7"><w:abstractNumId w:val="11"/></w:num>
<w:num w:numId="8"><w:abstractNumId w:val="12"/></w:num>
<w:num w:numId="9"><w:abstractNumId w:val="10"/>
  <w:lvlOverride w:ilvl="0"><w:lvl w:ilvl="0"><w:start w:val="4"/><w:numFmt w:val="upperRoman"/>
  <w:lvlText w:val="%1."/></w:lvl></w:lvlOverride></w:num>
</w:numbering>"""
NUMBERED_STYLES = STYLES.replace(
    "</w:styles>",
    '<w:style w:type="paragraph" w:styleId="Clause"><w:name w:val="heading 2"/>'
    '<w:pPr><w:numPr><w:numId w:val="5"/></w:numPr></w:pPr></w:style>'
    '<w:style w:type="numbering" w:styleId="LegalList"><w:name w:val="Legal List"/>'
    '<w:pPr><w:numPr><w:numId w:val="5"/></w:numPr></w:pPr></w:style></w:styles>',
)


def test_list_numbers_read_as_word_shows_them(tmp_path):
    """Numbered headings keep their numbers; lists of one definition count on together
    and a deeper level restarts under a new item; a level's text (`(%2)`, `%1.%3`,
    `Step %1:`), a list style's link, a start of 0, an override's own level, a level
    without a number, and a format harness does not write out (as digits)."""
    body = "".join(
        [
            para("Scope", "Clause"),  # the heading style numbers it
            para("staff", num=(5, 1)),
            para("contractors", num=(6, 1)),  # another list of the same definition
            para("Duties", "Clause"),
            para("report", num=(5, 1)),  # restarts under the new heading
            para("within an hour", num=(5, 2)),
            para("through the list style", num=(7, 1)),
            para("first", num=(8, 0)),
            para("second", num=(8, 0)),
            para("no number", num=(8, 1)),
            para("roman", num=(9, 0)),
        ]
    )
    path = docx(tmp_path / "n.docx", body, styles=NUMBERED_STYLES, numbering=NUMBERED)
    assert word_text(path)[0].splitlines() == [
        "### 1. Scope",
        "  (a) staff",
        "  (b) contractors",
        "### 2. Duties",
        "  (a) report",
        "    2.1 within an hour",
        "  (b) through the list style",
        "Step 0: first",
        "Step 1: second",
        "  no number",
        "IV. roman",
    ]


RULES = f"""<w:numbering xmlns:w="{W}">
<w:abstractNum w:abstractNumId="20">
  <w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="upperRoman"/><w:lvlText w:val="%1."/></w:lvl>
  <w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1.%2"/>
    <w:isLgl/></w:lvl>
  <w:lvl w:ilvl="2"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%3)"/>
    <w:lvlRestart w:val="0"/></w:lvl>
  <w:lvl w:ilvl="3"><w:numFmt w:val="none"/><w:lvlText w:val="NOTE:"/></w:lvl>
  <w:lvl w:ilvl="4"><w:start w:val="780"/><w:numFmt w:val="lowerLetter"/><w:lvlText w:val="%5."/></w:lvl>
</w:abstractNum>
<w:num w:numId="1"><w:abstractNumId w:val="20"/>
  <w:lvlOverride w:ilvl="0"><w:startOverride w:val="5"/>
    <w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="upperRoman"/><w:lvlText w:val="%1."/></w:lvl>
  </w:lvlOverride></w:num>
</w:numbering>"""


def test_list_rules_legal_numbers_restarts_labels_and_empty_items(tmp_path):
    """A start override beats its level's own start; a legal level shows its parent in
    digits; a level that never restarts counts on under a new parent; a level without
    a number keeps its label; an empty item is counted, as Word shows it; letters past
    zz... are digits."""
    body = "".join(
        [
            para("Leave", num=(1, 0)),
            para("Annual", num=(1, 1)),
            para("first step", num=(1, 2)),
            "<w:p><w:pPr><w:numPr><w:ilvl w:val='1'/><w:numId w:val='1'/></w:numPr></w:pPr></w:p>",
            para("Sick", num=(1, 1)),
            para("second step", num=(1, 2)),  # lvlRestart 0: counts on
            para("Ask your manager.", num=(1, 3)),
            para("letters", num=(1, 4)),
            para("more letters", num=(1, 4)),
        ]
    )
    path = docx(tmp_path / "r.docx", body, numbering=RULES)
    assert word_text(path)[0].splitlines() == [
        "V. Leave",
        "  5.1 Annual",
        "    1) first step",
        "  5.3 Sick",  # the empty item took 5.2
        "    2) second step",
        "      NOTE: Ask your manager.",
        "        " + "z" * 30 + ". letters",
        "        781. more letters",
    ]


def test_footnotes_and_endnotes_follow_the_paragraph_that_names_them(tmp_path):
    footnotes = (
        f'<w:footnotes xmlns:w="{W}">'
        '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>'
        '<w:footnote w:id="7"><w:p><w:r><w:footnoteRef/></w:r>'
        '<w:r><w:t xml:space="preserve"> Statutory pay after 28 weeks.</w:t></w:r></w:p></w:footnote>'
        "</w:footnotes>"
    )
    endnotes = (
        f'<w:endnotes xmlns:w="{W}"><w:endnote w:id="3"><w:p><w:r><w:endnoteRef/></w:r>'
        "<w:r><w:t>See the 2026 handbook.</w:t></w:r></w:p></w:endnote></w:endnotes>"
    )
    body = (
        "<w:p><w:r><w:t>Sick pay is full for 20 days.</w:t></w:r>"
        '<w:r><w:footnoteReference w:id="7"/></w:r>'
        '<w:r><w:t xml:space="preserve"> Then less.</w:t></w:r>'
        '<w:r><w:endnoteReference w:id="3"/></w:r></w:p>' + para("Next paragraph.")
    )
    path = docx(
        tmp_path / "n.docx",
        body,
        parts={"word/footnotes.xml": footnotes, "word/endnotes.xml": endnotes},
    )
    assert word_text(path)[0].splitlines() == [
        "Sick pay is full for 20 days.[1] Then less.[i]",
        "[1] Statutory pay after 28 weeks.",
        "[i] See the 2026 handbook.",
        "Next paragraph.",
    ]


def test_hidden_text_placeholders_and_equations(tmp_path):
    body = (
        "<w:p><w:r><w:rPr><w:vanish/></w:rPr><w:t>HIDDEN </w:t></w:r>"
        '<w:r><w:rPr><w:vanish w:val="false"/></w:rPr><w:t>Shown. </w:t></w:r>'
        "<w:r><w:t>Speed is </w:t></w:r>"
        '<m:oMath xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math">'
        "<m:r><m:t>d/t</m:t></m:r></m:oMath></w:p>"
        "<w:sdt><w:sdtPr><w:showingPlcHdr/></w:sdtPr><w:sdtContent>"
        + para("Click or tap here to enter text.")
        + "</w:sdtContent></w:sdt>"
        "<w:p><w:r><w:t>Owner: </w:t></w:r><w:sdt><w:sdtPr><w:showingPlcHdr/></w:sdtPr>"
        "<w:sdtContent><w:r><w:t>Choose an item.</w:t></w:r></w:sdtContent></w:sdt></w:p>"
    )
    assert word_text(docx(tmp_path / "h.docx", body))[0] == "Shown. Speed is d/t\nOwner:"


def test_strict_open_xml_reads_too(tmp_path):
    strict = "http://purl.oclc.org/ooxml/wordprocessingml/main"
    path = tmp_path / "strict.docx"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(
            "word/document.xml",
            f'<w:document xmlns:w="{strict}"><w:body><w:p><w:r><w:t>Strict.</w:t></w:r></w:p>'
            "</w:body></w:document>",
        )
    assert word_text(path) == ("Strict.", "")


def test_a_folder_of_word_documents_is_read_and_owner_files_are_not(tmp_path, warnings):
    folder = tmp_path / "policies"
    folder.mkdir()
    docx(folder / "leave.docx", para("Leave", "Title") + para("Employees get 27 days."))
    (folder / "~$leave.docx").write_bytes(b"\x0bJane Doe" + b"\x00" * 40)  # Word's owner file
    (folder / "notes.md").write_text("# Notes\n\nPayroll runs monthly.\n")
    docs = {Path(d.source).name: d for d in load_documents([folder])}
    assert set(docs) == {"leave.docx", "notes.md"}
    leave = docs["leave.docx"]
    assert leave.title == "Leave" and "27 days" in leave.text
    for c in chunk_documents([leave], chunk_size=20, chunk_overlap=0):
        assert leave.text[c.start_char : c.start_char + len(c.text)] == c.text
    assert warnings == []  # the owner file is not counted as a file left unread


def test_a_file_that_is_no_docx_or_a_damaged_one_is_named(tmp_path):
    legacy = tmp_path / "old.docx"
    legacy.write_bytes(
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 100
    )  # OLE: .doc, or a password
    with pytest.raises(ConfigError) as e:
        word_text(legacy)
    assert str(legacy) in str(e.value) and "not a .docx" in str(e.value)
    damaged = tmp_path / "broken.docx"
    with zipfile.ZipFile(damaged, "w") as z:
        z.writestr("word/document.xml", "<w:document><unclosed>")
    with pytest.raises(
        ConfigError, match=r"cannot read this \.docx: word/document\.xml is damaged"
    ):
        word_text(damaged)
    empty = tmp_path / "empty.docx"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
    with pytest.raises(ConfigError, match=r"without word/document\.xml"):
        word_text(empty)


def test_a_file_that_unpacks_too_large_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr("harness.corpus.ooxml.MAX_UNPACKED_BYTES", 3000)
    path = docx(tmp_path / "big.docx", para("x" * 2000), styles=STYLES * 2)
    with pytest.raises(ConfigError, match="unpacks to over 3,000 bytes of XML"):
        word_text(path)
    assert MAX_UNPACKED_BYTES >= 64 * 1024 * 1024


def test_damaged_deep_and_empty_files(tmp_path, warnings):
    """A part whose compressed data is damaged, XML nested past the recursion limit and
    XML declaring a DTD (whose entities could expand past any bound) are one error
    naming the file; an empty .docx (Windows' New > Word Document) is a
    document without text, left out with a warning rather than stopping the load."""
    good = docx(tmp_path / "good.docx", para("Leave is 27 days. " * 40))
    raw = bytearray(good.read_bytes())
    start = raw.index(b"word/document.xml") + len("word/document.xml")
    raw[start + 40 : start + 60] = b"\xff" * 20  # into the deflated body
    damaged = tmp_path / "damaged.docx"
    damaged.write_bytes(bytes(raw))
    with pytest.raises(ConfigError) as e:
        word_text(damaged)
    assert str(damaged) in str(e.value) and "damaged" in str(e.value)
    deep = docx(
        tmp_path / "deep.docx", "<w:customXml>" * 5000 + para("x") + "</w:customXml>" * 5000
    )
    with pytest.raises(ConfigError, match="nested too deep"):
        word_text(deep)
    plain = docx(tmp_path / "dtd.docx", para("&e;"))
    with zipfile.ZipFile(plain) as z:  # a DTD, which no Office program writes
        xml = z.read("word/document.xml").replace(
            b"<w:document",
            b'<!DOCTYPE w:document [<!ENTITY e "' + b"x" * 100 + b'">]><w:document',
            1,
        )
    with zipfile.ZipFile(tmp_path / "dtd2.docx", "w") as z:
        z.writestr("word/document.xml", xml)
    with pytest.raises(ConfigError, match="declares a DTD"):
        word_text(tmp_path / "dtd2.docx")
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "New Microsoft Word Document.docx").write_bytes(b"")
    docx(folder / "leave.docx", para("Leave is 27 days."))
    assert [d.doc_id for d in load_documents(folder)] == ["leave.docx"]
    assert any("New Microsoft Word Document.docx" in w for w in warnings)
