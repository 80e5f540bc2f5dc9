"""The text of an EPUB book (.epub: what Calibre, pandoc, Pages, Google Docs and the
publishers' tools write), laid out in lines as a saved web page is.

An EPUB is a zip: `META-INF/container.xml` names its package document (the `.opf`),
whose manifest lists the book's files and whose spine orders its content documents
(XHTML). It is read with the standard library and the package reader the Office files
share (`harness.corpus.ooxml.Package`: the book's text bounded in size, damaged files
refused in one line), each content document by the HTML reader (`harness.corpus.html`,
every element's text kept: a book has no site menu around it; headings as markdown's,
a table row a line, page-number markers and ruby readings left out):

- read: the spine's documents in reading order, non-linear ones too (a book's end
  notes, answer keys), each one's text after a blank line;
- not read: the table of contents (the EPUB 3 navigation document, the NCX, a page the
  guide names as the table of contents), which names every chapter and so would match
  many questions; styles, images and fonts.

The title is the package's first `dc:title`, else the first heading (the caller falls
back to the file's name). A book whose content documents are encrypted (DRM: listed in
`META-INF/encryption.xml`, not only its fonts obfuscated) is refused in one line naming
the file; an empty file has no text.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from urllib.parse import unquote
from xml.etree import ElementTree

from harness.corpus.headings import first_heading
from harness.corpus.html import fragment_text
from harness.corpus.ooxml import Package
from harness.errors import ConfigError

CONTAINER = "META-INF/container.xml"
ENCRYPTION = "META-INF/encryption.xml"
HTML_TYPES = frozenset(["application/xhtml+xml", "text/html"])
"""Media types of the content documents read: EPUB 3's XHTML, and the HTML some
EPUB 2 writers declare."""
FONT_OBFUSCATION = frozenset(
    ["http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"]
)
"""The `encryption.xml` algorithms that only hide embedded fonts (the text is plain)."""
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_FIELD = "corpus.sources"


def _local(tag: str) -> str:
    """An element's name without its namespace: EPUB 2 writers differ in theirs."""
    return tag.rsplit("}", 1)[-1]


def _elements(root: ElementTree.Element, name: str) -> list[ElementTree.Element]:
    return [el for el in root.iter() if isinstance(el.tag, str) and _local(el.tag) == name]


def _resolve(folder: str, href: str) -> str:
    """The part a link in the package document names (relative to its folder, with
    %-escapes and no fragment)."""
    return posixpath.normpath(posixpath.join(folder, unquote(href.split("#", 1)[0])))


def _decode(data: bytes) -> str:
    """A content document's text: UTF-16 where a byte-order mark says so, else UTF-8
    (what EPUB allows), a stray byte replaced rather than the book refused."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    return data.decode("utf-8-sig", errors="replace")


def _encrypted(package: Package) -> set[str]:
    """The parts `META-INF/encryption.xml` lists as encrypted by other than a font
    obfuscation (DRM)."""
    root = package.part(ENCRYPTION)
    out: set[str] = set()
    for data in _elements(root, "EncryptedData") if root is not None else ():
        method = next(iter(_elements(data, "EncryptionMethod")), None)
        if method is not None and method.get("Algorithm") in FONT_OBFUSCATION:
            continue
        for ref in _elements(data, "CipherReference"):
            out.add(_resolve("", ref.get("URI", "")).lower())
    return out


def _package_document(package: Package, path: Path) -> str:
    """The name of the book's package document (`content.opf`), from its container."""
    container = package.main(CONTAINER)
    roots = [el.get("full-path", "") for el in _elements(container, "rootfile")]
    opf = next((r for r in roots if r.lower().endswith(".opf")), roots[0] if roots else "")
    if not opf:
        raise ConfigError(str(path), _FIELD, f"an EPUB whose {CONTAINER} names no .opf")
    return opf


def _spine(opf: ElementTree.Element, folder: str) -> list[str]:
    """The content documents the spine orders, but the table of contents: the
    navigation document (`properties="nav"`), the NCX and a page the guide names
    `type="toc"`."""
    items = {el.get("id", ""): el for el in _elements(opf, "item") if el.get("href")}
    contents = {
        _resolve(folder, el.get("href", ""))
        for el in _elements(opf, "reference")
        if (el.get("type") or "").lower() == "toc"
    }
    out: list[str] = []
    for ref in _elements(opf, "itemref"):
        item = items.get(ref.get("idref", ""))
        if item is None or (item.get("media-type") or "").lower() not in HTML_TYPES:
            continue
        if "nav" in (item.get("properties") or "").split():
            continue
        name = _resolve(folder, item.get("href", ""))
        if name not in contents and name not in out:
            out.append(name)
    return out


def epub_text(path: Path) -> tuple[str, str]:
    """The text of the EPUB book at `path` (lines joined by newlines, its content
    documents by blank lines; see the module docstring) and its title ("" when it has
    none).

    Raises ConfigError naming the file when it is no EPUB, its text is encrypted, or a
    part is damaged (`harness.corpus.ooxml`).
    """
    with Package(path, kind=".epub", field=_FIELD) as package:
        if package.empty:
            return "", ""
        opf_name = _package_document(package, path)
        opf = package.main(opf_name)
        spine = _spine(opf, posixpath.dirname(opf_name))
        locked = _encrypted(package).intersection(name.lower() for name in spine)
        if locked:
            raise ConfigError(
                str(path),
                _FIELD,
                f"its text is encrypted ({len(locked)} of its {len(spine)} chapters listed "
                f"in {ENCRYPTION}: DRM): harness reads DRM-free books only",
            )
        chapters: list[str] = []
        for name in spine:
            data = package.data(name)
            text = fragment_text(_decode(data)) if data is not None else ""
            if text:
                chapters.append(text)
        titles = [" ".join((el.text or "").split()) for el in opf.iter(_DC_TITLE)]
    text = "\n\n".join(chapters)
    return text, next((t for t in titles if t), "") or first_heading(text)
