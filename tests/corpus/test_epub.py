"""EPUB books read chapter after chapter, as their reader reads them."""

from __future__ import annotations

import zipfile

import pytest

from harness.corpus import load_documents
from harness.corpus.epub import epub_text
from harness.errors import ConfigError

CONTAINER = (
    '<?xml version="1.0"?><container version="1.0" '
    'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
    '<rootfile full-path="{opf}" media-type="application/oebps-package+xml"/>'
    "</rootfiles></container>"
)


def xhtml(body: str, *, doctype: str = "<!DOCTYPE html>") -> str:
    """A content document as EPUB writers lay one out (XML declaration, DOCTYPE, head)."""
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>{doctype}<html '
        'xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">'
        f"<head><title>chapter file</title></head><body>{body}</body></html>"
    )


def epub(path, chapters, *, spine=None, title="Router Manual", extra="", guide="", files=None):
    """An EPUB 3 written by hand: `chapters` maps a file name (in OEBPS/) to its XHTML,
    listed in the manifest in that order; `spine` the itemrefs' ids in reading order
    (default: the chapters' order after the navigation document); `files` more
    parts, by their names in the zip."""
    ids = {name: f"c{i}" for i, name in enumerate(chapters)}
    items = "".join(
        f'<item id="{ids[n]}" href="{n.replace(" ", "%20")}" media-type="application/xhtml+xml"/>'
        for n in chapters
    )
    order = spine if spine is not None else ["nav", *ids.values()]
    meta = f"<dc:title>{title}</dc:title>" if title is not None else ""
    opf = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
        f'<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">{meta}</metadata><manifest>'
        '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
        '<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>'
        '<item id="css" href="style.css" media-type="text/css"/>'
        f'{items}{extra}</manifest><spine toc="ncx">'
        + "".join(f'<itemref idref="{i}"/>' for i in order)
        + f"</spine>{guide}</package>"
    )
    nav = xhtml(
        '<nav epub:type="toc"><h1>Contents</h1><ol><li><a href="a.xhtml">Intro</a></li>'
        '<li><a href="b.xhtml">Reset</a></li></ol></nav>'
    )
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("mimetype", "application/epub+zip")
        z.writestr("META-INF/container.xml", CONTAINER.format(opf="OEBPS/content.opf"))
        z.writestr("OEBPS/content.opf", opf)
        files = {"OEBPS/nav.xhtml": nav, **(files or {})}
        z.writestr(
            "OEBPS/toc.ncx", "<ncx><navMap><navPoint><text>Intro</text></navPoint></navMap></ncx>"
        )
        z.writestr("OEBPS/style.css", "h1 { color: red }")
        for name, body in chapters.items():
            z.writestr(f"OEBPS/{name}", body)
        for name, data in files.items():
            z.writestr(name, data)
    return path


CHAPTERS = {
    "a.xhtml": xhtml(
        '<section epub:type="chapter"><h1>Intro</h1><p>The router<span epub:type="pagebreak" '
        'id="p2" title="2">2</span> has four <em>gigabit</em> ports.<a epub:type="noteref" '
        'href="#n1">1</a></p><aside epub:type="footnote" id="n1"><p>1. Two on the back.</p>'
        "</aside></section>"
    ),
    "part 2/b.xhtml": xhtml(
        '<h1>Reset</h1><p>Hold <span role="doc-pagebreak" aria-label="3"/>the reset button for '
        "10 seconds.</p><table><tr><th>LED</th><th>Meaning</th></tr><tr><td>Red</td>"
        "<td>Fault</td></tr></table>"
        "<p><ruby>漢字<rp>(</rp><rt>かんじ</rt><rp>)</rp></ruby> labels.</p>"
    ),
    "cover.xhtml": xhtml('<div><svg><image href="cover.jpg"/></svg></div>'),
}


def test_an_epub_reads_its_chapters_in_spine_order_without_its_table_of_contents(tmp_path):
    """The spine, not the manifest, orders the chapters; the navigation document (in
    the spine, as ebooklib writes it) and the NCX are no text; page-number markers and
    ruby readings are not part of a sentence; a chapter of a picture only adds nothing;
    an href with an escaped space finds its file."""
    path = epub(tmp_path / "router.epub", CHAPTERS, spine=["nav", "c2", "c0", "c1"])
    text, title = epub_text(path)
    assert title == "Router Manual"
    assert text == (
        "# Intro\nThe router has four gigabit ports.1\n1. Two on the back.\n\n"
        "# Reset\nHold the reset button for 10 seconds.\nLED | Meaning\nRed | Fault\n"
        "漢字 labels."
    )
    docs = load_documents(tmp_path)
    assert [(d.doc_id, d.title, d.source) for d in docs] == [
        ("router.epub:OEBPS/a.xhtml", "Router Manual: Intro", f"{path}:OEBPS/a.xhtml"),
        (
            "router.epub:OEBPS/part_2/b.xhtml",
            "Router Manual: Reset",
            f"{path}:OEBPS/part 2/b.xhtml",
        ),
    ]
    assert "\n\n".join(d.text for d in docs) == text


def test_a_book_is_a_document_a_chapter_without_its_title_pages(tmp_path):
    """As a table's rows and a mailbox's messages, a book's chapters are documents of
    their own, so no chunk runs from one into the next; a page of headings alone (a
    title page, a part's divider) is none; a chapter without a heading takes the
    book's title; a book without text is one document without text, left out."""
    chapters = {
        "title.xhtml": xhtml("<h1>Router Manual</h1><h2>Second edition</h2>"),
        "a.xhtml": xhtml("<p>No heading here.</p>"),
        "part.xhtml": xhtml("<h1>Part II</h1>"),
        "b.xhtml": xhtml("<h1>Router Manual</h1><p>Same title as the book.</p>"),
    }
    epub(tmp_path / "m.epub", chapters)
    epub(tmp_path / "pictures.epub", {"cover.xhtml": CHAPTERS["cover.xhtml"]})
    docs = load_documents(tmp_path)
    assert [(d.doc_id, d.title) for d in docs] == [
        ("m.epub:OEBPS/a.xhtml", "Router Manual"),
        ("m.epub:OEBPS/b.xhtml", "Router Manual"),
    ]


def test_an_epub_2_book_skips_the_page_its_guide_names_as_contents(tmp_path, warnings):
    """Calibre's and older writers' books have no navigation document: a contents page
    in the spine, named by the guide, left out when links make most of its text. A
    non-linear chapter (end notes) is read; a spine entry whose file is missing is
    passed over with a warning; without a title, the first heading. An item of another
    type in the spine is read through its fallback; an absolute href and a name the zip
    stores without its UTF-8 flag (Info-ZIP's) find their files."""
    chapters = {
        "toc.html": xhtml(
            '<h1>Contents</h1><p><a href="a.xhtml">Intro</a></p><p><a href="b.xhtml">Reset</a></p>'
        ),
        "a.xhtml": CHAPTERS["a.xhtml"],
        "notes.xhtml": xhtml("<h2>Notes</h2><p>Firmware 2.1 or later.</p>"),
    }
    guide = '<guide><reference type="toc" title="Contents" href="toc.html"/></guide>'
    extra = (
        '<item id="gone" href="missing.xhtml" media-type="application/xhtml+xml"/>'
        '<item id="dtb" href="x.dtb" media-type="application/x-dtbook+xml" fallback="bad"/>'
        '<item id="bad" href="/OEBPS/Caf%C3%A9.xhtml" media-type="application/xhtml+xml"/>'
    )
    path = epub(
        tmp_path / "old.epub",
        chapters,
        spine=["c0", "c1", "gone", "dtb", "c2"],
        title=None,
        guide=guide,
        extra=extra,
    )
    with zipfile.ZipFile(path, "a") as z:  # an ASCII name, for its UTF-8 bytes below
        z.writestr("OEBPS/CafXX.xhtml", xhtml("<p>Appendix.</p>"))
    path.write_bytes(path.read_bytes().replace(b"CafXX", "Café".encode()))
    with zipfile.ZipFile(path) as z:
        assert "OEBPS/Caf\u251c\u2310.xhtml" in z.namelist()  # as zipfile decodes it
    text, title = epub_text(path)
    assert text == (
        "# Intro\nThe router has four gigabit ports.1\n1. Two on the back.\n\n"
        "Appendix.\n\n## Notes\nFirmware 2.1 or later."
    )
    assert title == "Intro"
    assert warnings == [
        f"{path}: its spine names 1 file the book lacks (OEBPS/missing.xhtml): read without it"
    ]


def test_a_contents_page_is_left_out_only_when_it_is_one(tmp_path):
    """A guide can point at a page's anchor in a book of one file, or at a prologue: a
    page named as the contents is left out only when it names a whole page and links
    make most of its text. The landmarks of an EPUB 3 navigation document name one too,
    and a navigation document in the spine is read without its lists."""
    one = xhtml('<h1>Router</h1><p id="toc"><a href="#a">Intro</a></p><p>Ports: four.</p>')
    guide = '<guide><reference type="toc" href="book.xhtml#toc"/></guide>'
    path = epub(tmp_path / "one.epub", {"book.xhtml": one}, spine=["c0"], guide=guide)
    assert epub_text(path)[0] == "# Router\nIntro\nPorts: four."
    prologue = {
        "prologue.xhtml": xhtml("<h1>Prologue</h1><p>It began with a <a href='#x'>router</a>.</p>"),
        "a.xhtml": CHAPTERS["a.xhtml"],
    }
    guide = '<guide><reference type="toc" href="prologue.xhtml"/></guide>'
    path = epub(tmp_path / "p.epub", prologue, spine=["c0", "c1"], guide=guide)
    assert epub_text(path)[0].startswith("# Prologue\nIt began with a router.\n\n# Intro")
    landmarks = xhtml(
        '<p>Router Manual, 2nd edition</p><nav epub:type="toc"><ol><li><a href="a.xhtml">'
        'Intro</a></li></ol></nav><nav epub:type="landmarks"><ol><li><a epub:type="toc" '
        'href="contents.xhtml">Contents</a></li></ol></nav>'
    )
    book = {
        "contents.xhtml": xhtml('<h1>Contents</h1><p><a href="a.xhtml">1. Intro</a></p>'),
        "a.xhtml": CHAPTERS["a.xhtml"],
    }
    path = epub(tmp_path / "l.epub", book, files={"OEBPS/nav.xhtml": landmarks})
    assert epub_text(path)[0].startswith("Router Manual, 2nd edition\n\n# Intro\nThe router")


def test_a_book_with_drm_is_refused_but_one_with_obfuscated_fonts_is_read(tmp_path, warnings):
    """Encrypted chapters (DRM) cannot be read: named as a source the book is refused in
    one line, in a folder it is skipped with a warning, as a folder's books were before
    harness read them. Fonts obfuscated by the IDPF algorithm leave the text plain."""

    def encryption(algorithm: str, uri: str) -> str:
        return (
            '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
            'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>'
            f'<enc:EncryptionMethod Algorithm="{algorithm}"/><enc:CipherData>'
            f'<enc:CipherReference URI="{uri}"/></enc:CipherData></enc:EncryptedData>'
            "</encryption>"
        )

    fonts = {
        "META-INF/encryption.xml": encryption(
            "http://www.idpf.org/2008/embedding", "OEBPS/fonts/serif.otf"
        )
    }
    epub(tmp_path / "fonts.epub", {"a.xhtml": CHAPTERS["a.xhtml"]}, files=fonts)
    locked = {
        "META-INF/encryption.xml": encryption(
            "http://www.w3.org/2001/04/xmlenc#aes128-cbc", "OEBPS/a.xhtml"
        )
    }
    epub(tmp_path / "locked.epub", {"a.xhtml": "\x8f\x02 ciphertext"}, files=locked)
    assert [d.doc_id for d in load_documents(tmp_path)] == ["fonts.epub:OEBPS/a.xhtml"]
    assert warnings == [
        "skipped locked.epub: its text is encrypted (every chapter listed in "
        "META-INF/encryption.xml: DRM): harness reads DRM-free books only"
    ]
    with pytest.raises(ConfigError, match=r"locked\.epub: corpus\.sources: its text is encrypt"):
        load_documents(tmp_path / "locked.epub")


def test_files_that_are_no_epub_are_refused_in_one_line_and_an_empty_one_has_no_text(
    tmp_path,
):
    mobi = tmp_path / "book.epub"
    mobi.write_bytes(b"BOOKMOBI a Kindle book renamed")
    with pytest.raises(
        ConfigError, match=r"book\.epub: corpus\.sources: not an EPUB \(no zip: a K"
    ):
        epub_text(mobi)
    bare = tmp_path / "bare.epub"
    with zipfile.ZipFile(bare, "w") as z:
        z.writestr("mimetype", "application/epub+zip")
    with pytest.raises(
        ConfigError, match=r"bare\.epub: corpus\.sources: no META-INF/container\.xml, which every"
    ):
        epub_text(bare)
    nowhere = tmp_path / "nowhere.epub"
    with zipfile.ZipFile(nowhere, "w") as z:
        z.writestr("META-INF/container.xml", CONTAINER.format(opf="content.opf"))
    with pytest.raises(ConfigError, match=r"a \.epub without content\.opf"):
        epub_text(nowhere)
    (tmp_path / "new.epub").write_bytes(b"")
    assert epub_text(tmp_path / "new.epub") == ("", "")


def test_a_chapter_in_utf_16_or_with_an_xhtml_1_1_doctype_reads(tmp_path):
    """EPUB allows UTF-16 content documents; EPUB 2's declare XHTML 1.1's DTD, which an
    HTML parser reads past (it is never fetched, nor its entities expanded)."""
    doctype = (
        '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" '
        '"http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">'
    )
    wide = xhtml("<h1>Größe</h1><p>Vier&nbsp;Anschlüsse.</p>", doctype=doctype)
    path = epub(
        tmp_path / "de.epub",
        {"a.xhtml": wide.replace("UTF-8", "UTF-16").encode("utf-16")},
        title=" Router\n Handbuch ",
    )
    assert epub_text(path) == ("# Größe\nVier Anschlüsse.", "Router Handbuch")


def test_an_epub_2_package_document_may_name_its_dtd_and_a_chapter_its_encoding(tmp_path):
    """OEB 1.2's package DOCTYPE (which epubcheck accepts) reads; one that declares
    entities of its own is refused. A chapter that is not UTF-8 is read in the encoding
    its XML declaration names (old books declare ISO-8859-1)."""
    latin = xhtml("<p>Caf\u00e9 cr\u00e8me.</p>").replace("UTF-8", "ISO-8859-1").encode("latin-1")
    path = epub(tmp_path / "old.epub", {"a.xhtml": latin})
    with zipfile.ZipFile(path) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    doctype = (
        b'<!DOCTYPE package PUBLIC "+//ISBN 0-9673008-1-9//DTD OEB 1.2 Package//EN" '
        b'"http://openebook.org/dtds/oeb-1.2/oebpkg12.dtd">'
    )
    for name, declared in (
        ("dtd.epub", doctype),
        ("bomb.epub", b'<!DOCTYPE p [<!ENTITY a "aaaa">]>'),
    ):
        with zipfile.ZipFile(tmp_path / name, "w") as z:
            for part, data in parts.items():
                z.writestr(
                    part,
                    data.replace(b"<package", declared + b"<package", 1)
                    if part.endswith(".opf")
                    else data,
                )
    assert epub_text(tmp_path / "dtd.epub") == ("Café crème.", "Router Manual")
    with pytest.raises(
        ConfigError,
        match=r"bomb\.epub: corpus\.sources: cannot read this \.epub: OEBPS/content\.opf is damaged \(ValueError: it declares a DTD",
    ):
        epub_text(tmp_path / "bomb.epub")


def test_a_damaged_or_huge_chapter_is_refused_and_skipped_in_a_folder(tmp_path, warnings):
    """A chapter Python's HTML parser gives up on, or one past MAX_CHAPTER_BYTES (an HTML
    tree takes some 150 times its size in memory), refuses the book in one line; in a
    folder the book is skipped with a warning and the rest is read."""
    from harness.corpus.epub import MAX_CHAPTER_BYTES

    epub(tmp_path / "damaged.epub", {"a.xhtml": xhtml("<p>a</p><![ xx<p>b</p>")})
    epub(tmp_path / "huge.epub", {"a.xhtml": xhtml("<b>x</b>" * (MAX_CHAPTER_BYTES // 8 + 1))})
    epub(tmp_path / "fine.epub", {"a.xhtml": CHAPTERS["a.xhtml"]})
    with pytest.raises(
        ConfigError,
        match=r"damaged\.epub: corpus\.sources: cannot read this \.epub: OEBPS/a\.xhtml is damaged \(the HTML parser rejected it",
    ):
        epub_text(tmp_path / "damaged.epub")
    with pytest.raises(
        ConfigError,
        match=r"huge\.epub: corpus\.sources: OEBPS/a\.xhtml holds [\d,]+ bytes, more than harness reads of one part \(8,388,608\): split it",
    ):
        epub_text(tmp_path / "huge.epub")
    assert [d.doc_id for d in load_documents(tmp_path)] == ["fine.epub:OEBPS/a.xhtml"]
    assert sorted(w.split(":")[0] for w in warnings) == [
        "skipped damaged.epub",
        "skipped huge.epub",
    ]
