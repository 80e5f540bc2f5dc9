"""Load documents from files, folders and URLs into `Document` records.

Local: markdown (.md, .markdown, .mdx, .qmd, .rmd), Jupyter notebooks (.ipynb), .txt,
.rst, .adoc (.asciidoc), .html, .pdf, .docx, .odt, .pptx, .epub, .eml, mailboxes (.mbox)
and tables (.csv, .xlsx, .ods) files, or folders searched recursively for them (a
folder's other files are skipped, and the run says which kinds; so are links whose
target is gone, Office's owner files, a table, book or mailbox it cannot read, with a
warning naming it, and the files `leave_out` names; a file a page includes is no
document of its own). Markdown is read as its pages show it, without front matter,
admonition markers or MDX imports (`harness.corpus.markdown`), with Quarto's includes
read in; a Sphinx page without its directives' and roles' markup
(`harness.corpus.rst`); an AsciiDoc page without its attribute entries, block markup
and macros, with its includes read in (`harness.corpus.asciidoc`), and of an Antora
component only its pages (`harness.corpus.antora`); a notebook as its markdown and code cells
(`harness.corpus.notebook`). A PDF's text is what pypdf extracts, page after page; a PDF
without text (scanned pages) is refused. A Word document (.docx) is read as it reads,
headings as markdown's, lists and tables in lines (`harness.corpus.word`), and an
OpenDocument text (.odt) alike (`harness.corpus.odf`); a PowerPoint
deck (.pptx) slide by slide, each under its title, with its speaker notes
(`harness.corpus.slides`); a table's rows a document each, each cell named by its
column (`harness.corpus.table`); an EPUB book's chapters a document each, without its
table of contents (`harness.corpus.epub`); an email message under its headers, without
what it quotes, and a mailbox's messages a document each (`harness.corpus.mail`). URLs
are fetched by LangChain's WebBaseLoader.
An HTML page, saved or fetched, gives its main content in lines, without the site's
menus, header and footer (`harness.corpus.html`). With `html_classes`, only the elements
with those CSS classes (a blog's post-title / post-header / post-content, say); a URL's
then as WebBaseLoader's text, as the reference-free guide read them. A document without
text is left out with a warning.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from loguru import logger

from harness.corpus.antora import Component, Components
from harness.corpus.asciidoc import XrefTitle, asciidoc_text, asciidoc_title
from harness.corpus.epub import epub_chapters
from harness.corpus.headings import first_heading
from harness.corpus.mail import eml_text, mailbox_messages
from harness.corpus.markdown import MARKDOWN_SUFFIXES, Include, IncludeRaw, markdown_text
from harness.corpus.odf import odt_text
from harness.corpus.slides import slides_text
from harness.corpus.table import (
    TABLE_SUFFIXES,
    WORKBOOK_SUFFIXES,
    csv_records,
    workbook_records,
)
from harness.corpus.word import word_text
from harness.errors import ConfigError
from harness.types import Document

ASCIIDOC_SUFFIXES = (".adoc", ".asciidoc")
SUFFIXES = (
    *MARKDOWN_SUFFIXES,
    ".ipynb",
    ".txt",
    ".rst",
    *ASCIIDOC_SUFFIXES,
    ".html",
    ".htm",
    ".pdf",
    ".docx",
    ".pptx",
    ".odt",
    ".epub",
    ".eml",
    ".mbox",
    *TABLE_SUFFIXES,
)
"""Files read from folders. A `.jsonl` source is a BEIR corpus (one document a line)."""
SKIPPED_UNREAD = (*TABLE_SUFFIXES, ".epub", ".mbox", ".eml")
"""Files a folder's load skips with a warning when it cannot read one (a data file, a
book with DRM, a damaged mailbox), as it skipped these kinds before harness read them;
named as a source, such a file is refused."""
USER_AGENT = "harness-retrieval-tuning/0.1 (+https://github.com/; offline-first)"
CONTROL_SHARE = 0.25
"""A text with more than this share of control characters (other than tab, newline,
carriage return, form feed) is refused as binary."""
_CONTROLS = re.compile("[\x00-\x08\x0e-\x1f\x7f]")


def read_text_file(path: Path, field: str) -> str:
    """A UTF-8 text file's content, newlines made `\\n` (as `Path.read_text` reads them)
    and a byte-order mark (some Windows editors write one) skipped; a file that starts
    with UTF-16's byte-order mark is read as UTF-16. A `.csv` that is not UTF-8 is read
    as Windows-1252, with a warning: what Excel's "CSV (Comma delimited)" writes on a
    Western-language Windows (its "CSV UTF-8" is UTF-8).

    Raises ConfigError naming the file and `field` for bytes that are not UTF-8 (nor
    Windows-1252 in a `.csv`), a NUL byte, or mostly control characters: a binary file
    given where text was expected.
    """
    raw = path.read_bytes()
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        # Excel's "Unicode Text" and some Windows tools: UTF-16 with its byte-order mark
        try:
            raw = raw.decode("utf-16").encode("utf-8")
        except UnicodeError:
            raise ConfigError(
                str(path), field, "expected UTF-16 after its byte-order mark"
            ) from None
    if b"\0" in raw:
        raise ConfigError(str(path), field, "expected a text file, found NUL bytes (binary?)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if path.suffix.lower() == ".csv":
            try:
                text = raw.decode("cp1252")
            except UnicodeDecodeError:
                pass
            else:
                logger.warning(
                    '{}: not UTF-8, read as Windows-1252 (Excel\'s "CSV (Comma delimited)"); '
                    'if its accents read wrong, save it as "CSV UTF-8"',
                    path,
                )
                return _checked_text(text, path, field)
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            str(path),
            field,
            f"expected a UTF-8 text file (line {line}, byte {exc.start} is not UTF-8): save it "
            f"as UTF-8, e.g. iconv -f cp1252 -t utf-8 {path.name} > {path.stem}.utf8{path.suffix}",
        ) from None
    return _checked_text(text, path, field)


def _checked_text(text: str, path: Path, field: str) -> str:
    """`text` without a byte-order mark, newlines made `\\n`; raises ConfigError for
    mostly control characters."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    controls = len(_CONTROLS.findall(text))
    if controls > CONTROL_SHARE * len(text):
        raise ConfigError(
            str(path), field, f"expected a text file, found {controls} control characters"
        )
    return text


def _html_text(html: str, html_classes: Sequence[str], where: str) -> tuple[str, str]:
    """`html_text` of a page, refused in one line naming `where` when `html_classes`
    match no element with text or the HTML parser gives up on it."""
    from harness.corpus.html import RejectedMarkup, html_text  # bs4 only when a page is read

    try:
        text, title = html_text(html, html_classes)
    except RejectedMarkup as exc:
        raise ConfigError(where, "corpus.sources", f"cannot read this page: {exc}") from None
    if html_classes and not text:
        raise ConfigError(
            where, "corpus.html_classes", f"no element with classes {list(html_classes)} found"
        )
    return text, title


def _pdf_text(path: Path) -> tuple[str, str]:
    """The text pypdf extracts from a PDF, its pages joined by a blank line, and its
    title (the document information's, else ""). Raises ConfigError naming the file for
    a PDF it cannot read (damaged, encrypted) or one without text (scanned pages)."""
    import pypdf
    from pypdf.errors import PdfReadError

    try:
        reader = pypdf.PdfReader(path)
        if reader.is_encrypted:
            raise ConfigError(str(path), "corpus.sources", "the PDF is encrypted; decrypt it first")
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        meta = reader.metadata
        title = str((meta.title if meta is not None else None) or "").strip()
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise ConfigError(
            str(path), "corpus.sources", f"cannot read this PDF ({type(exc).__name__}: {exc})"
        ) from None
    text = "\n\n".join(p for p in pages if p)
    if not text:
        raise ConfigError(
            str(path),
            "corpus.sources",
            f"the PDF holds no text in its {len(pages)} pages (scanned images?): run OCR on it "
            "first, or leave it out",
        )
    return text, title


_BINARY = {
    ".pdf": _pdf_text,
    ".docx": word_text,
    ".pptx": slides_text,
    ".odt": odt_text,
    ".eml": eml_text,
}
"""Files that are no text, and the function that reads each kind: its text and title."""

MAX_INCLUDE_DEPTH = 8
"""How deep included files may include others."""
MAX_INCLUDED_CHARS = 5_000_000
"""Characters one page may take in through its includes: partials that include each
other many times over grow a page exponentially."""
INCLUDE_COST = 1_000
"""Characters each include takes from the page's allowance besides its text, read or
refused: empty partials that include each other many times over cost time, not text."""
_TOO_MUCH = f"the page would take in over {MAX_INCLUDED_CHARS:,} characters"


class _Includes:
    """Reads the files pages include, from within the corpus folder `root` only, not from
    hidden files or folders (an `.env` is no part of any page), and never from the
    network: Quarto's include shortcodes (`{{< include _part.md >}}`, markdown files
    read as markdown with their own includes), AsciiDoc's `include::` directives (in an
    Antora component a resource ID such as `partial$intro.adoc` too) and
    reStructuredText's `.. include::` and `.. literalinclude::` (any text file, as
    written, for the page's reader). Keeps which files it read and why it could not
    read the others, and the titles of the AsciiDoc pages cross references name."""

    def __init__(self, root: Path) -> None:
        self.folder = Path(os.path.abspath(root))  # as written: where links are placed
        self.root = root.resolve()
        self.read: set[Path] = set()
        self.missing: dict[str, set[Path]] = {}  # "file -> target (why)": pages it was met in
        self._texts: dict[tuple[Path, int], str] = {}  # by file and depth
        self._bounded = 0  # includes refused for the page they were met in (loop, size)
        self._titles: dict[Path, str | None] = {}  # AsciiDoc pages' titles, by file
        self._raw: dict[Path, str] = {}  # AsciiDoc and rST includes as written, by file
        self._checks: dict[tuple[Path, bool], tuple[Path, str | None]] = {}
        self._places: dict[tuple[Path, str, Path], Path | str] = {}
        self._names: dict[Path, str] = {}
        self.as_written: set[Path] = set()  # files AsciiDoc and rST pages included

    def reader(self, page: Path) -> Include:
        """The `include` of the markdown document `page`: a target relative to the page
        (or, starting with /, to the folder), read as markdown with its own includes;
        None (and the reason remembered) when it is not a markdown file in the folder,
        is hidden, cannot be read as text, includes itself on the way, lies deeper than
        MAX_INCLUDE_DEPTH, or takes the page past MAX_INCLUDED_CHARS."""
        return self._markdown(page, (page.resolve(),), [MAX_INCLUDED_CHARS])

    def asciidoc(self, page: Path, component: Component | None) -> IncludeRaw:
        """The `include` of the AsciiDoc document `page`: a target relative to the file
        that names it (a resource ID of `component`'s modules, `partial$a.adoc`, where
        Antora places it), read as written, with a reader of its own includes; None
        (and the reason remembered) when it is outside the folder, hidden, no file, not
        text, includes itself on the way, lies deeper than MAX_INCLUDE_DEPTH, takes the
        page past MAX_INCLUDED_CHARS, is a URL or another component's file."""
        return self._as_written(page, (page.resolve(),), [MAX_INCLUDED_CHARS], component, page)

    def rst(self, page: Path) -> IncludeRaw:
        """The `include` of the reStructuredText document `page` (`.. include::`,
        `.. literalinclude::`): where `_place` puts it, read as written, with a reader of
        its own includes; None on the grounds `asciidoc` gives."""
        return self._as_written(page, (page.resolve(),), [MAX_INCLUDED_CHARS], None, page)

    def _markdown(self, page: Path, chain: tuple[Path, ...], budget: list[int]) -> Include:
        def include(target: str) -> str | None:
            base = self.folder if target.startswith("/") else Path(os.path.abspath(page.parent))
            written = Path(os.path.normpath(base / target.lstrip("/")))
            got = self._fetch(page, target, written, chain, budget, markdown=True)
            return None if got is None else got[0]

        return include

    def _as_written(
        self,
        at: Path,
        chain: tuple[Path, ...],
        budget: list[int],
        component: Component | None,
        page: Path,
    ) -> IncludeRaw:
        def include(target: str, optional: bool = False) -> tuple[str, IncludeRaw] | None:
            key = (at, target, page)
            if key not in self._places:
                self._places[key] = self._place(target, at, page, component)
            place = self._places[key]
            if isinstance(place, str):
                self.missing.setdefault(f"{self._name(at)} -> {target} ({place})", set()).add(
                    chain[0]
                )
                return None
            got = self._fetch(at, target, place, chain, budget, markdown=False, optional=optional)
            if got is None:
                return None
            text, p = got
            self.as_written.add(p)
            return text, self._as_written(p, (*chain, p), budget, component, page)

        return include

    def _place(self, target: str, at: Path, page: Path, component: Component | None) -> Path | str:
        """Where the include `target` in the file `at` (of the page `page`) points, or why
        it points nowhere harness reads. A reStructuredText target starting with / lies
        in Sphinx's source folder (the nearest holding conf.py, else the corpus folder);
        a relative one beside the file that names it, else (as Sphinx reads a nested
        include) beside the page."""
        if re.match(r"^[A-Za-z][\w+.-]*://", target):
            return "a URL: harness reads no include from the network"
        if component is not None and "$" in target:
            place = component.resource(target, page, "page")
            return place if isinstance(place, str) else Path(os.path.normpath(place))
        here = Path(os.path.abspath(at.parent))
        if page.suffix.lower() == ".rst" and target.startswith("/"):
            return Path(os.path.normpath(self._source_folder(page) / target.lstrip("/")))
        place = Path(os.path.normpath(here / target))
        if page.suffix.lower() == ".rst" and at != page and not place.exists():
            beside_page = Path(os.path.normpath(Path(os.path.abspath(page.parent)) / target))
            place = beside_page if beside_page.exists() else place
        return place

    def _source_folder(self, page: Path) -> Path:
        """Sphinx's source folder of `page`: the nearest folder above it, up to the corpus
        folder, holding conf.py; else the corpus folder."""
        here = Path(os.path.abspath(page.parent))
        while here.is_relative_to(self.folder) and here != self.folder:
            if (here / "conf.py").is_file():
                return here
            here = here.parent
        return self.folder

    def _fetch(
        self,
        page: Path,
        target: str,
        written: Path,
        chain: tuple[Path, ...],
        budget: list[int],
        *,
        markdown: bool,
        optional: bool = False,
    ) -> tuple[str, Path] | None:
        """The text of the file `page` includes as `target` (`written`: where it points)
        and its resolved path, within the page's budget; None, with why remembered
        (unless the include is optional and there is no such file)."""
        if budget[0] <= 0:  # the page took in all it may: refuse at once
            self._bounded += 1
            self.missing.setdefault(f"{self._name(page)} -> {target} ({_TOO_MUCH})", set()).add(
                chain[0]
            )
            return None
        budget[0] -= INCLUDE_COST  # each include, read or refused, takes time
        p, why = self._checked(written, markdown=markdown)
        if why is None and p in chain:
            self._bounded += 1
            why = "a loop"
        elif why is None and len(chain) > MAX_INCLUDE_DEPTH:
            why = f"deeper than {MAX_INCLUDE_DEPTH} includes"
        if why is None:
            try:
                if markdown:
                    text = self._text(p, chain, budget)
                else:
                    self.read.add(p)
                    if p not in self._raw:
                        self._raw[p] = read_text_file(p, "corpus.sources")
                    text = self._raw[p]
            except ConfigError as exc:
                why = exc.expected
            else:
                if len(text) > budget[0]:
                    why = _TOO_MUCH
                    budget[0] = 0
                    self._bounded += 1
                else:
                    budget[0] -= len(text)
                    return text, p
        if not (optional and why == "no such file"):
            self.missing.setdefault(f"{self._name(page)} -> {target} ({why})", set()).add(chain[0])
        return None

    def _checked(self, written: Path, *, markdown: bool) -> tuple[Path, str | None]:
        """The target (`written`, the path a page names) resolved, and why it is not
        read whoever includes it, or None; worked out once per load. A link placed in
        the folder is read, as the folder's own links are read as documents."""
        key = (written, markdown)
        if key not in self._checks:
            p = written.resolve()
            why = self._outside(written)
            if why is None and not p.is_file():
                why = "no such file"
            elif why is None and markdown and p.suffix.lower() not in MARKDOWN_SUFFIXES:
                why = "not a markdown file"
            self._checks[key] = (p, why)
        return self._checks[key]

    def _outside(self, written: Path) -> str | None:
        """Why `written` is no file of the folder, or None: its folder (resolved, so no
        linked folder leads out of it) lies outside the corpus folder, or it is hidden. A
        link placed in the folder is read, as the folder's own links are read as
        documents."""
        parent = Path(os.path.realpath(written.parent))
        if not parent.is_relative_to(self.root):
            return "outside the folder"
        if _hidden(parent / written.name, self.root):
            return "a hidden file"
        return None

    def _text(self, p: Path, chain: tuple[Path, ...], budget: list[int]) -> str:
        """The included file's text as a reader sees it, read once per load and depth
        (the depth bound cuts it deeper down), unless an include within it was refused
        for the page it was met in (a loop, the page's size), which another page need
        not meet."""
        self.read.add(p)
        key = (p, len(chain))
        if key in self._texts:
            return self._texts[key]
        bounded = self._bounded
        raw = read_text_file(p, "corpus.sources")
        text = markdown_text(raw, include=self._markdown(p, (*chain, p), budget))[0]
        if self._bounded == bounded:
            self._texts[key] = text
        return text

    def xref_title(self, page: Path, component: Component | None) -> XrefTitle:
        """The titles of the AsciiDoc pages `page` cross-references (`xref:b.adoc[]`):
        in a component, a page ID of its modules (`./b.adoc` beside the page); else a
        file beside the page; None for one outside the folder, hidden or unreadable."""

        def title(target: str) -> str | None:
            if component is not None and not target.startswith(("./", "../")):
                place = component.resource(target, page, "page")
            else:
                place = Path(os.path.abspath(page.parent)) / target
            if isinstance(place, str):
                return None
            written = Path(os.path.normpath(place))
            p = written.resolve()
            if self._outside(written) is not None:
                return None
            if p not in self._titles:
                try:
                    raw = read_text_file(p, "corpus.sources") if p.is_file() else ""
                except ConfigError:
                    raw = ""
                attrs = component.attributes if component is not None else None
                self._titles[p] = asciidoc_title(raw, attrs) if raw else None
            return self._titles[p]

        return title

    def _name(self, page: Path) -> str:
        """How a warning names `page`: its path in the folder."""
        if page not in self._names:
            try:
                self._names[page] = page.resolve().relative_to(self.root).as_posix()
            except ValueError:
                self._names[page] = page.name
        return self._names[page]

    def partial(self, path: Path) -> bool:
        """Whether `path` is a partial some page included, whose text lives only in the
        pages: a file an AsciiDoc or reStructuredText page includes (a book's chapter,
        a Sphinx page's part), and one whose name starts with `_` (Quarto renders no
        page for it)."""
        p = path.resolve()
        return p in self.as_written or (path.name.startswith("_") and p in self.read)


def _load_file(
    path: Path,
    doc_id: str,
    html_classes: Sequence[str],
    includes: _Includes | None = None,
    components: Components | None = None,
) -> Document:
    binary = _BINARY.get(path.suffix.lower())
    if binary is not None:
        text, title = binary(path)
        return Document(doc_id=doc_id, text=text, source=str(path), title=title or path.stem)
    raw = read_text_file(path, "corpus.sources")
    suffix = path.suffix.lower()
    if suffix in (".html", ".htm"):
        text, title = _html_text(raw, html_classes, str(path))
    elif suffix in MARKDOWN_SUFFIXES:
        include = includes.reader(path) if includes is not None else None
        text, title = markdown_text(raw, mdx=suffix == ".mdx", include=include)
    elif suffix == ".rst":
        from harness.corpus.rst import rst_text

        text, title = rst_text(raw, include=includes.rst(path) if includes is not None else None)
    elif suffix in ASCIIDOC_SUFFIXES:
        component = components.of(path) if components is not None else None
        page = {"docdir": str(path.parent.resolve()), "docname": path.stem}
        text, title = asciidoc_text(
            raw,
            attributes={**(component.attributes if component is not None else {}), **page},
            include=includes.asciidoc(path, component) if includes is not None else None,
            xref_title=includes.xref_title(path, component) if includes is not None else None,
        )
    elif suffix == ".ipynb":
        from harness.corpus.notebook import notebook_text

        text, title = notebook_text(raw, str(path))
    else:
        text, title = raw, first_heading(raw)
    return Document(doc_id=doc_id, text=text, source=str(path), title=title or path.stem)


def _load(
    path: Path,
    doc_id: str,
    html_classes: Sequence[str],
    includes: _Includes | None = None,
    components: Components | None = None,
) -> list[Document]:
    """The documents of the file at `path`: a table's records (`_load_table`), a
    mailbox's messages (`_load_mailbox`), a book's chapters (`_load_book`), or the file
    as one document."""
    if path.suffix.lower() in TABLE_SUFFIXES:
        return _load_table(path, doc_id)
    if path.suffix.lower() == ".mbox" or _apple_mailbox(path):
        return _load_mailbox(path, doc_id)
    if path.suffix.lower() == ".epub":
        return _load_book(path, doc_id)
    return [_load_file(path, doc_id, html_classes, includes, components)]


def _load_book(path: Path, doc_id: str) -> list[Document]:
    """An EPUB book's chapters, a document each, their ids the file's with the
    chapter's name in the book (`manual.epub:OEBPS/ch03.xhtml`, white space as `_`),
    their source the file's path with it, their title the book's with the chapter's
    heading; a book without text is one document without text (left out with the
    others, and said so)."""
    book = epub_chapters(path)
    title = book.title or path.stem
    return _parts(
        path,
        doc_id,
        title,
        [
            (
                "_".join(c.name.split()),
                c.name,
                c.text,
                f"{title}: {c.title}" if c.title and c.title != title else title,
            )
            for c in book.chapters
        ],
    )


def _parts(
    path: Path, doc_id: str, title: str, parts: Sequence[tuple[str, str, str, str]]
) -> list[Document]:
    """The documents of a file read in parts (a book's chapters, a mailbox's messages, a
    table's records), each part's (key, place, text, title): their ids the file's with
    the key, their source the file's path with the place. A file without parts is one
    document without text, titled `title` (left out with the others, and said so)."""
    if not parts:
        return [Document(doc_id=doc_id, text="", source=str(path), title=title)]
    return [
        Document(doc_id=f"{doc_id}:{key}", text=text, source=f"{path}:{place}", title=named)
        for key, place, text, named in parts
    ]


def _apple_mailbox(path: Path) -> bool:
    """Whether `path` is the `mbox` file of a mailbox Apple Mail exports, a folder named
    `Inbox.mbox`."""
    return path.name == "mbox" and path.parent.suffix.lower() == ".mbox"


def _load_mailbox(path: Path, doc_id: str) -> list[Document]:
    """A mailbox's messages, a document each, their ids the file's with the message's
    key (its Message-ID, `inbox.mbox:CAF1@mail.gmail.com`, else its number there,
    `inbox.mbox:12`), their source the file's path with the number, their title the
    subject; the messages left out are counted in a warning. A mailbox without a message
    with text is one document without text (left out with the others, and said so)."""
    box = mailbox_messages(path)
    left = [
        f"{n} {what}"
        for n, what in (
            (box.empty, "without text"),
            (box.unreadable, "the email package could not take apart"),
            (box.junk, "Gmail labels spam, trash or chat"),
        )
        if n
    ]
    if left:
        logger.warning("{}: left out messages: {}", path, "; ".join(left))
    stem = path.stem
    if _apple_mailbox(path):  # Apple Mail's Inbox.mbox/mbox: named by its folder
        stem = path.parent.stem
        doc_id = doc_id.removesuffix("/mbox") if "/" in doc_id else path.parent.name
    return _parts(
        path,
        doc_id,
        stem,
        [(m.key, str(m.number), m.text, m.subject or stem) for m in box.messages],
    )


def _load_table(path: Path, doc_id: str) -> list[Document]:
    """A table's records, a document each, their ids the file's with the record's key
    (its id column's value, `faq.csv:KB-12`, else its place, `faq.csv:12`,
    `kb.xlsx:Billing:5`), their source the file's path with the place; a table without
    records is one document without text (left out with the others, and said so)."""
    if path.suffix.lower() in WORKBOOK_SUFFIXES:
        rows, title = workbook_records(path)
    else:
        rows, title = csv_records(read_text_file(path, "corpus.sources"), path)
    return _parts(
        path,
        doc_id,
        title or path.stem,
        [(r.key, r.place, r.text, r.title or path.stem) for r in rows],
    )


def _load_url(url: str, html_classes: Sequence[str], timeout_s: float) -> Document:
    """A page fetched by WebBaseLoader: with `html_classes`, its text of those elements
    as the reference-free guide read it (so its chunk offsets stay the guide's);
    without, the page's main content in lines, as a saved page is read."""
    import bs4
    import requests
    from langchain_community.document_loaders import WebBaseLoader

    bs_kwargs = {"parse_only": bs4.SoupStrainer(class_=tuple(html_classes))} if html_classes else {}
    loader = WebBaseLoader(
        web_paths=(url,),
        bs_kwargs=bs_kwargs,
        default_parser="html.parser",
        raise_for_status=True,
        header_template={"User-Agent": os.environ.get("USER_AGENT", USER_AGENT)},
        # Bounds the connect and each wait for more bytes: a server that accepts and never
        # answers would otherwise hold the run forever.
        requests_kwargs={"timeout": timeout_s},
    )
    try:
        page = loader.load() if html_classes else loader.scrape()
    except requests.Timeout:
        raise ConfigError(
            url, "corpus.timeout_s", f"no answer within {timeout_s:g} s (raise corpus.timeout_s?)"
        ) from None
    except Exception as exc:  # requests raises many types; the user needs the URL and cause
        raise ConfigError(url, "corpus.sources", f"could not fetch the page ({exc})") from None
    if html_classes:
        text = "\n".join(line.strip() for d in page for line in d.page_content.splitlines())
        text = "\n".join(line for line in text.splitlines() if line)
        title = str(page[0].metadata.get("title", "")) if page else ""
    else:
        from harness.corpus.html import html_text  # bs4 only when a page is read

        text, title = html_text(str(page))
    if not text:
        why = "check html_classes" if html_classes else "a page its scripts draw?"
        raise ConfigError(url, "corpus.sources", f"the page has no text ({why})")
    return Document(doc_id=url, text=text, source=url, title=title or url)


def load_documents(
    sources: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    html_classes: Sequence[str] = (),
    where: str = "",
    timeout_s: float = 30.0,
    leave_out: Mapping[str | os.PathLike[str], str] | None = None,
) -> list[Document]:
    """Load every source; doc ids are paths relative to a given folder (or the file name),
    or the URL, so they stay stable across runs and machines; a table's rows are a
    document each, the file's id with the row's (`faq.csv:12`, `harness.corpus.table`).

    `sources`: paths (strings or `Path`s) and URLs, or one of them. `leave_out`: files
    that are not documents, each with the setting that names it, left out with a
    warning where a source holds them: the questions file kept beside the documents (a
    table or a text file, which harness reads as documents) would let every question
    retrieve itself.

    Raises ConfigError for a missing path, an empty folder, an empty corpus, a binary
    file, or a URL that gives no answer within `timeout_s` seconds.
    """
    docs: list[Document] = []
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    kept_out = {Path(p).resolve(): field for p, field in (leave_out or {}).items()}
    for given in sources:
        source = os.fspath(given)
        if source.startswith(("http://", "https://")):
            docs.append(_load_url(source, html_classes, timeout_s))
            continue
        path = Path(source)
        if path.is_dir():
            found = sorted(path.rglob("*"))
            files = [
                p
                for p in found
                if (p.suffix.lower() in SUFFIXES or _apple_mailbox(p))
                and p.is_file()
                and not _hidden(p, path)
            ]
            # The experiment's own files here (not warned of as unread), each path
            # resolved once, and only when the experiment names any.
            own = {p for p in found if p.resolve() in kept_out} if kept_out else set()
            named = [p for p in files if p in own]
            _warn_left_out(named, kept_out)
            files = [p for p in files if p not in named]
            components = Components(path)
            published = _antora_pages(path, files, components)
            if not published:
                raise ConfigError(
                    where or str(path),
                    "corpus.sources",
                    f"folder {path} holds no document, only the experiment's "
                    + ", ".join(f"{kept_out[p.resolve()]} ({p.name})" for p in named)
                    if named and not files
                    else f"folder {path} holds no {', '.join(SUFFIXES)} files"
                    if not files
                    else f"folder {path} holds no page: its AsciiDoc files are Antora "
                    "navigation, partials or examples (pages lie in modules/<name>/pages/)",
                )
            includes = _Includes(path)
            loaded: list[tuple[Path, list[Document]]] = []
            unreadable: list[Path] = []
            for f in published:
                doc_id = f.relative_to(path).as_posix()
                try:
                    loaded.append((f, _load(f, doc_id, html_classes, includes, components)))
                except ConfigError as exc:
                    if f.suffix.lower() not in SKIPPED_UNREAD and not _apple_mailbox(f):
                        raise
                    # A folder's spreadsheets, books and mailboxes were skipped before
                    # harness read them: one it cannot read (data; a book with DRM) does
                    # not stop the rest.
                    logger.warning("skipped {}: {}", doc_id, _reason(exc, f))
                    unreadable.append(f)
            _warn_skipped(path, found, [*files, *own, *unreadable, *includes.read], components)
            partial = [includes.partial(f) for f, _ in loaded]
            docs.extend(d for (_, ds), p in zip(loaded, partial, strict=True) if not p for d in ds)
            _report_includes(
                path,
                includes,
                [
                    f.relative_to(path).as_posix()
                    for (f, _), p in zip(loaded, partial, strict=True)
                    if p
                ],
            )
        elif path.is_file() and path.resolve() in kept_out:
            _warn_left_out([path], kept_out)
        elif path.is_file() and path.suffix.lower() == ".jsonl":
            docs.extend(load_beir_corpus(path))
        elif path.is_file():
            includes = _Includes(path.parent)
            components = Components(path.parent)
            docs.extend(_load(path, path.name, html_classes, includes, components))
            _report_includes(path, includes, [])
        else:
            raise ConfigError(where or str(path), "corpus.sources", f"{path} does not exist")
    empty = [d.doc_id for d in docs if not d.text.strip()]
    if empty:
        pages = any(e.lower().endswith((".html", ".htm")) for e in empty)
        logger.warning(
            "left out {} without text: {}{}",
            _count(empty, "document"),
            _first_names(empty),
            " (a page its scripts draw holds no text when saved)" if pages else "",
        )
    docs = [d for d in docs if d.text.strip()]
    if not docs:
        raise ConfigError(where, "corpus.sources", "the corpus is empty (no text in any source)")
    ids = [d.doc_id for d in docs]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ConfigError(where, "corpus.sources", f"two documents share the id {dup!r}")
    logger.info("loaded {} documents ({} chars)", len(docs), sum(len(d.text) for d in docs))
    return docs


ASSETS = frozenset(
    [
        ".js",
        ".mjs",
        ".css",
        ".map",
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".svg",
        ".webp",
        ".ico",
        ".bmp",
        ".woff",
        ".woff2",
        ".ttf",
        ".otf",
        ".eot",
        ".json",
        ".mp4",
        ".webm",
        ".mp3",
        ".wasm",
        ".lock",
    ]
)
"""Suffixes of files a saved site or a repository holds beside its documents (scripts,
styles, images, fonts, JSON data): skipped without a warning. XML and archives may be
documents (DocBook, a zip of PDFs), so they are warned about."""


def _reason(exc: ConfigError, f: Path) -> str:
    """`exc`'s message without the file's name where it leads (a line number kept)."""
    where = exc.where.removeprefix(str(f)).lstrip(":")
    return f"line {where}: {exc.expected}" if where.isdigit() else exc.expected


def _warn_left_out(paths: Sequence[Path], kept_out: Mapping[Path, str]) -> None:
    """Say which of the files a corpus source holds are left out as the experiment's
    own (`load_documents`' `leave_out`)."""
    for p in paths:
        logger.warning(
            "corpus.sources: left out {}, the file {} names: not a document (every question "
            "would find itself in it)",
            p,
            kept_out[p.resolve()],
        )


def _count(names: Sequence[str], noun: str) -> str:
    """A count with its noun: "1 link", "3 links"."""
    return f"{len(names)} {noun}s" if len(names) > 1 else f"1 {noun}"


def _first_names(names: Sequence[str], shown: int = 3) -> str:
    """The first `shown` names, then ", ..." when there are more."""
    return ", ".join(names[:shown]) + (", ..." if len(names) > shown else "")


def _antora_pages(folder: Path, files: list[Path], components: Components) -> list[Path]:
    """`files` without those of Antora components that the site publishes as no page
    (navigation, partials, examples, attachments), said in one line: pages read them
    where they include them."""
    kept: list[Path] = []
    left: list[str] = []
    for f in files:
        component = components.of(f)
        if component is None or component.is_page(f):
            kept.append(f)
        else:
            left.append(f.relative_to(folder).as_posix())
    if left:
        logger.info(
            "{}: left out {} of Antora components that are no page (navigation, partials, "
            "examples, attachments; read where a page includes them): {}",
            folder,
            _count(left, "file"),
            _first_names(left),
        )
    return kept


def _report_includes(source: Path, includes: _Includes, partials: Sequence[str]) -> None:
    """Say which partials were read into the pages that include them (info), and which
    includes were not read, and why (a warning: the page lacks that text)."""
    if partials:
        logger.info(
            "{}: read {} into the pages that include them: {}",
            source,
            _count(partials, "partial"),
            _first_names(partials),
        )
    # a partial read as a page first (before any page included it) names its includes as
    # they stand beside it, which the pages that include it need not
    shown = [m for m, pages in includes.missing.items() if not all(map(includes.partial, pages))]
    if shown:
        logger.warning(
            "{}: {} not read into {}: {}",
            source,
            _count(shown, "include"),
            "its page" if len(shown) == 1 else "their pages",
            _first_names(shown),
        )


def _hidden(p: Path, folder: Path) -> bool:
    """Whether `p` lies in a hidden file or folder under `folder` (`.git`,
    `.ipynb_checkpoints`, `.github`), or is an owner file Word leaves beside a document
    open in it (`~$ave-policy.docx`, a few bytes naming who has it open): not the
    documents, and a notebook's checkpoint is a second copy of it."""
    parts = p.relative_to(folder).parts
    return any(part.startswith(".") for part in parts) or p.name.startswith("~$")


def _warn_skipped(
    folder: Path, found: Sequence[Path], read: Sequence[Path], components: Components
) -> None:
    """Warn, by kind, about the files `found` under `folder` that are not `read`: a
    corpus of Word files beside two notes would otherwise be indexed as the two notes.
    Hidden files and folders (.git, .DS_Store) are not counted, nor files a page
    includes (an AsciiDoc page's code examples); ASSETS and an Antora component's files
    (its `antora.yml`, examples, attachments) are counted in an info line only, as no
    one converts a site's scripts, images and configuration to text; links whose target
    is gone are named; an Apple Mail export's other files are not counted."""
    taken = {p.resolve() for p in read}
    kinds: dict[str, int] = {}
    assets = 0
    broken: list[str] = []
    for p in found:
        if _hidden(p, folder) or p.resolve() in taken:
            continue
        if p.is_symlink() and not p.exists():
            broken.append(p.relative_to(folder).as_posix())
            continue
        export = p.parent / "mbox"  # an Apple Mail export's Info.plist, table of contents
        if not p.is_file() or (_apple_mailbox(export) and export.is_file()):
            continue
        kind = p.suffix.lower() or "(no suffix)"
        if kind in ASSETS or components.of(p) is not None:
            assets += 1
        else:
            kinds[kind] = kinds.get(kind, 0) + 1
    if assets:
        logger.info(
            "{}: skipped {} scripts, styles, images, JSON and site configuration files",
            folder,
            assets,
        )
    if broken:
        logger.warning(
            "{}: skipped {} whose target is missing: {}",
            folder,
            _count(broken, "link"),
            _first_names(broken),
        )
    if kinds:
        listed = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
        files = sum(kinds.values())
        logger.warning(
            "{}: skipped {} harness does not read ({}); it reads {}: convert the others to one "
            "of them",
            folder,
            f"{files} file{'s' if files > 1 else ''}",
            listed,
            " ".join(SUFFIXES),
        )


def load_beir_corpus(path: Path) -> list[Document]:
    """A BEIR corpus.jsonl: {"_id" or "id", "title", "text"} per line. The title, when
    there is one, opens the text (as BEIR's retrievers see it)."""
    docs = []
    for n, line in enumerate(read_text_file(path, "corpus.sources").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, RecursionError):  # RecursionError: nested too deep
            raise ConfigError(f"{path}:{n}", "", "expected a JSON object per line") from None
        did = obj.get("_id", obj.get("id")) if isinstance(obj, dict) else None
        text = obj.get("text") if isinstance(obj, dict) else None
        if did is None or str(did) == "":
            raise ConfigError(f"{path}:{n}", "_id", "expected a document id")
        if not isinstance(text, str):
            raise ConfigError(f"{path}:{n}", "text", "expected the document text")
        title = str(obj.get("title") or "")
        docs.append(
            Document(
                doc_id=str(did),
                text=f"{title}\n{text}" if title else text,
                source=f"{path}:{n}",
                title=title,
            )
        )
    return docs


def corpus_hash(docs: Sequence[Document]) -> str:
    """Content hash of a corpus: ids and texts, order-independent."""
    h = hashlib.sha256()
    for d in sorted(docs, key=lambda d: d.doc_id):
        h.update(d.doc_id.encode())
        h.update(b"\0")
        h.update(hashlib.sha256(d.text.encode()).digest())
    return h.hexdigest()
