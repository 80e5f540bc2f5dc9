"""The text of an EPUB book (.epub: what Calibre, pandoc, Sigil, Pages, Google Docs and
the publishers' tools write), laid out in lines as a saved web page is.

An EPUB is a zip: `META-INF/container.xml` names its package document (the `.opf`),
whose manifest lists the book's files and whose spine orders its content documents
(XHTML). It is read with the standard library and the package reader the Office files
share (`harness.corpus.ooxml.Package`: the book bounded in size, damaged files refused
in one line), each content document by the HTML reader (`harness.corpus.html`, every
element's text kept: a book has no site menu around it; headings as markdown's, a
table row a line, page-number markers and ruby readings left out):

- read: the spine's documents in reading order, non-linear ones too (a book's end
  notes, answer keys), each a chapter (`epub_chapters`; a corpus's document each, as a
  table's rows and a mailbox's messages are, so a chunk never runs from one chapter
  into the next and names its chapter), or the book's text with a blank line between
  them (`epub_text`); a page of headings alone (a title page, a part's divider) is no
  chapter;
- not read: the table of contents (a `<nav epub:type="toc">`, in the EPUB 3
  navigation document or any other; the NCX; a contents page the guide or the
  landmarks name, when links make most of its text), which names every chapter and so
  would match many questions; the page lists and landmarks; styles, images and fonts.

The title is the package's first `dc:title`, else the first heading (the caller falls
back to the file's name). A book whose content documents are encrypted (DRM: listed in
`META-INF/encryption.xml`, not only its fonts obfuscated) is refused in one line naming
the file, as is a chapter past MAX_CHAPTER_BYTES or one the HTML parser gives up on; a
spine entry whose file the book lacks is passed over with a warning; an empty file has
no text.
"""

from __future__ import annotations

import codecs
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote
from xml.etree import ElementTree

from loguru import logger

from harness.corpus.headings import first_heading
from harness.corpus.html import RejectedMarkup, fragment_text, link_share, toc_links
from harness.corpus.ooxml import Package
from harness.errors import ConfigError

CONTAINER = "META-INF/container.xml"
ENCRYPTION = "META-INF/encryption.xml"
HTML_TYPES = frozenset(["application/xhtml+xml", "text/html", "text/x-oeb1-document"])
"""Media types of the content documents read: EPUB 3's XHTML, and the HTML and OEB
documents EPUB 2 books declare."""
FONT_OBFUSCATION = frozenset(
    ["http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"]
)
"""The `encryption.xml` algorithms that only hide embedded fonts (the text is plain)."""
MAX_CHAPTER_BYTES = 8 * 1024 * 1024
"""The largest content document read: the HTML parser's tree takes up to some 150 times
its size in memory (about 1.2 GB here). Writers split a book's chapters into files well
under a megabyte (Calibre and Project Gutenberg at about 260 KB)."""
CONTENTS_LINK_SHARE = 0.5
"""A page the guide or the landmarks name as the contents is left out when links make
at least this share of its text: a guide can point at a prologue."""
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_FIELD = "corpus.sources"
_DECLARATION = re.compile(r"\A\s*<\?xml[^>]*>")
_DECLARED = re.compile(
    rb"""encoding\s*=\s*["']([A-Za-z0-9._-]+)|charset\s*=\s*["']?([A-Za-z0-9._-]+)"""
)


def _local(tag: str) -> str:
    """An element's name without its namespace: EPUB 2 writers differ in theirs."""
    return tag.rsplit("}", 1)[-1]


def _elements(root: ElementTree.Element, name: str) -> list[ElementTree.Element]:
    return [el for el in root.iter() if isinstance(el.tag, str) and _local(el.tag) == name]


def _resolve(folder: str, href: str) -> str:
    """The part a link in a package or content document names: relative to `folder`
    (from the book's root when it starts with `/`), %-escapes undone, `\\` read as `/`
    (as some Windows writers put them), without its fragment."""
    target = unquote(href.split("#", 1)[0]).replace("\\", "/")
    if target.startswith("/"):
        return posixpath.normpath(target.lstrip("/"))
    return posixpath.normpath(posixpath.join(folder, target))


def _decode(data: bytes) -> str:
    """A content document's text: UTF-16 where a byte-order mark says so, else UTF-8
    (what EPUB allows), else the encoding its XML declaration or meta element names
    (old EPUB 2 books declare ISO-8859-1 or Windows-1252), a stray byte replaced rather
    than the book refused; without its XML declaration, which the HTML parser would
    otherwise warn of on the console."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16", errors="replace")
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = data.decode(_declared(data[:1024]), errors="replace")
    return _DECLARATION.sub("", text, count=1)


def _declared(head: bytes) -> str:
    """The encoding a document's start declares, if Python knows it, else UTF-8."""
    found = _DECLARED.search(head)
    name = (found.group(1) or found.group(2)).decode("ascii") if found else "utf-8"
    try:
        return codecs.lookup(name).name
    except LookupError:
        return "utf-8"


def _encrypted(package: Package) -> set[str]:
    """The parts `META-INF/encryption.xml` lists as encrypted by other than a font
    obfuscation (DRM), lowercased."""
    root = package.part(ENCRYPTION)
    out: set[str] = set()
    for data in _elements(root, "EncryptedData") if root is not None else ():
        method = next(iter(_elements(data, "EncryptionMethod")), None)
        if method is not None and method.get("Algorithm") in FONT_OBFUSCATION:
            continue
        for ref in _elements(data, "CipherReference"):
            out.add(_resolve("", ref.get("URI", "")).lower())
    return out


def _package_document(package: Package) -> str:
    """The name of the book's package document (`content.opf`), from its container."""
    container = package.part(CONTAINER)
    roots = (
        [el.get("full-path", "") for el in _elements(container, "rootfile")]
        if container is not None
        else []
    )
    opf = next((r for r in roots if r.lower().endswith(".opf")), roots[0] if roots else "")
    if not opf:
        why = (
            f"its {CONTAINER} names no package document (.opf)"
            if container is not None
            else f"no {CONTAINER}, which every EPUB holds to name its package document"
        )
        raise ConfigError(
            str(package.path),
            _FIELD,
            f"{why}: open it in an e-book editor (Calibre, Sigil) and save it again",
        )
    return opf


class _Book:
    """A book's package document: its spine's content documents and the pages its
    guide names as the contents."""

    def __init__(self, opf: ElementTree.Element, folder: str) -> None:
        items = {el.get("id", ""): el for el in _elements(opf, "item") if el.get("href")}
        self.spine: list[str] = []
        seen: set[str] = set()
        for ref in _elements(opf, "itemref"):
            item = _content(items, items.get(ref.get("idref", "")))
            if item is None:
                continue
            name = _resolve(folder, item.get("href", ""))
            if name not in seen:
                seen.add(name)
                self.spine.append(name)
        self.nav = [  # the EPUB 3 navigation documents, in the spine or not
            _resolve(folder, el.get("href", ""))
            for el in items.values()
            if "nav" in (el.get("properties") or "").split()
        ]
        self.contents = {
            _resolve(folder, href)
            for el in _elements(opf, "reference")
            if (el.get("type") or "").lower() == "toc"
            for href in [el.get("href", "")]
            if "#" not in href
        }


def _content(
    items: dict[str, ElementTree.Element], item: ElementTree.Element | None
) -> ElementTree.Element | None:
    """`item` if it is a content document, else the content document its fallback
    chain leads to (EPUB 2's way to put other kinds in the spine), else None."""
    seen: set[str] = set()
    while item is not None and (item.get("media-type") or "").lower() not in HTML_TYPES:
        fallback = item.get("fallback") or ""
        if fallback in seen:
            return None
        seen.add(fallback)
        item = items.get(fallback)
    return item


def _landmarks(package: Package, navs: list[str]) -> set[str]:
    """The pages the navigation documents' landmarks name as the table of contents."""
    out: set[str] = set()
    for nav in dict.fromkeys(navs):
        data = package.data(nav, MAX_CHAPTER_BYTES)
        try:
            links = toc_links(_decode(data)) if data is not None else []
        except RejectedMarkup:
            continue  # read, or refused, as a chapter if the spine holds it
        out.update(_resolve(posixpath.dirname(nav), href) for href in links)
    return out


def _contents_page(html: str) -> bool:
    """Whether a page named as the contents is one: links make most of its text."""
    try:
        return link_share(html) >= CONTENTS_LINK_SHARE
    except RejectedMarkup:
        return False  # refused as a chapter


def _chapter(package: Package, name: str, html: str) -> str:
    """The text of content document `name`, whose markup is `html`."""
    try:
        return fragment_text(html)
    except RejectedMarkup as exc:
        raise ConfigError(
            str(package.path), _FIELD, f"cannot read this .epub: {name} is damaged ({exc})"
        ) from None


@dataclass(frozen=True)
class Chapter:
    """A content document of a book with text: its name in the book (`OEBPS/ch01.xhtml`),
    its text, and its title (its first heading, "" without one)."""

    name: str
    text: str
    title: str


@dataclass(frozen=True)
class Book:
    """A book's chapters in reading order and its title ("" when it has none)."""

    chapters: list[Chapter]
    title: str


def epub_text(path: Path) -> tuple[str, str]:
    """The text of the EPUB book at `path` (its chapters' text, lines joined by newlines,
    chapters by blank lines; see the module docstring) and its title, else its first
    heading ("" when it has neither). Raises as `epub_chapters` does."""
    book = epub_chapters(path)
    text = "\n\n".join(c.text for c in book.chapters)
    return text, book.title or first_heading(text)


def epub_chapters(path: Path) -> Book:
    """The chapters of the EPUB book at `path` (see the module docstring) and its title
    (its first `dc:title`).

    Raises ConfigError naming the file when it is no EPUB, its text is encrypted, or a
    part is damaged or too large (`harness.corpus.ooxml`).
    """
    with Package(path, kind=".epub", field=_FIELD) as package:
        if package.empty:
            return Book([], "")
        opf_name = _package_document(package)
        opf = package.main(opf_name)
        book = _Book(opf, posixpath.dirname(opf_name))
        locked = _encrypted(package).intersection(name.lower() for name in book.spine)
        if locked:
            count = len(set(book.spine) - set(book.nav))
            which = (
                "every chapter"
                if len(locked) >= count
                else f"{len(locked)} of its {count} chapters"
            )
            raise ConfigError(
                str(path),
                _FIELD,
                f"its text is encrypted ({which} listed in {ENCRYPTION}: DRM): harness "
                "reads DRM-free books only",
            )
        contents = book.contents | _landmarks(package, book.nav)
        chapters: list[Chapter] = []
        missing: list[str] = []
        for name in book.spine:
            data = package.data(name, MAX_CHAPTER_BYTES)
            if data is None:
                missing.append(name)
                continue
            html = _decode(data)
            if name in contents and len(book.spine) > 1 and _contents_page(html):
                continue
            text = _chapter(package, name, html)
            if any(not line.startswith("#") for line in text.splitlines()):
                chapters.append(Chapter(name, text, first_heading(text)))
        titles = [" ".join((el.text or "").split()) for el in opf.iter(_DC_TITLE)]
    if missing:
        shown = ", ".join(missing[:3]) + (
            f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        )
        logger.warning(
            "{}: its spine names {} file{} the book lacks ({}): read without {}",
            path,
            len(missing),
            "" if len(missing) == 1 else "s",
            shown,
            "it" if len(missing) == 1 else "them",
        )
    return Book(chapters, next((t for t in titles if t), ""))
