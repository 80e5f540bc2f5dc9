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
        z.writestr("OEBPS/nav.xhtml", nav)
        z.writestr(
            "OEBPS/toc.ncx", "<ncx><navMap><navPoint><text>Intro</text></navPoint></navMap></ncx>"
        )
        z.writestr("OEBPS/style.css", "h1 { color: red }")
        for name, body in chapters.items():
            z.writestr(f"OEBPS/{name}", body)
        for name, data in (files or {}).items():
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
    (doc,) = load_documents(tmp_path)
    assert (doc.doc_id, doc.title, doc.text) == ("router.epub", "Router Manual", text)


def test_an_epub_2_book_skips_the_page_its_guide_names_as_contents(tmp_path):
    """Calibre's and older writers' books have no navigation document: a contents page
    in the spine, named by the guide. A non-linear chapter (end notes) is read; a spine
    entry whose file is missing is passed over; without a title, the first heading."""
    chapters = {
        "toc.html": xhtml("<h1>Contents</h1><p>Intro ... 1</p><p>Reset ... 2</p>"),
        "a.xhtml": CHAPTERS["a.xhtml"],
        "notes.xhtml": xhtml("<h2>Notes</h2><p>Firmware 2.1 or later.</p>"),
    }
    guide = '<guide><reference type="toc" title="Contents" href="toc.html#top"/></guide>'
    path = epub(
        tmp_path / "old.epub",
        chapters,
        spine=["c0", "c1", "gone", "c2"],
        title=None,
        guide=guide,
        extra='<item id="gone" href="missing.xhtml" media-type="application/xhtml+xml"/>',
    )
    text, title = epub_text(path)
    assert text == (
        "# Intro\nThe router has four gigabit ports.1\n1. Two on the back.\n\n"
        "## Notes\nFirmware 2.1 or later."
    )
    assert title == "Intro"


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
    assert [d.doc_id for d in load_documents(tmp_path)] == ["fonts.epub"]
    assert warnings == [
        "skipped locked.epub: its text is encrypted (1 of its 1 chapters listed in "
        "META-INF/encryption.xml: DRM): harness reads DRM-free books only"
    ]
    with pytest.raises(ConfigError, match=r"locked\.epub: corpus\.sources: its text is encrypt"):
        load_documents(tmp_path / "locked.epub")


def test_files_that_are_no_epub_are_refused_in_one_line_and_an_empty_one_has_no_text(
    tmp_path,
):
    mobi = tmp_path / "book.epub"
    mobi.write_bytes(b"BOOKMOBI a Kindle book renamed")
    with pytest.raises(ConfigError, match=r"book\.epub: corpus\.sources: not an EPUB \(a zip; a K"):
        epub_text(mobi)
    bare = tmp_path / "bare.epub"
    with zipfile.ZipFile(bare, "w") as z:
        z.writestr("mimetype", "application/epub+zip")
    with pytest.raises(ConfigError, match=r"a \.epub without META-INF/container\.xml"):
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
