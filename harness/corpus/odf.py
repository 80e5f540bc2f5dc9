"""The text of an OpenDocument text document (.odt: LibreOffice Writer's, and what Google
Docs and Word save as "OpenDocument Text") as a reader of it reads it, laid out in lines.

An .odt is a zip of XML parts (ISO/IEC 26300); its body is `content.xml`, its title in
`meta.xml`. It is read with the standard library and the package reader the Office
files share (`harness.corpus.ooxml.Package`: each part bounded in size, damaged files
and DTDs refused), laid out as a Word document is (`harness.corpus.word`):

- each paragraph is a line; a heading (`text:h`) is markdown's, its outline level + 1
  #'s (`## 3.2 Carrying leave over`, with the number LibreOffice stores beside a
  numbered heading), a Title-styled paragraph `#`;
- a list item is `- item`, or `1.`, `a)`, `(iv)` where its list style numbers that
  level (counted per list, continuing a list that says so; `harness.corpus.wordml`'s
  letters and roman numbers), indented two spaces a level;
- a table row is a line, its cells joined by " | ";
- read: text in links, spans and fields (a field's shown value), text boxes in place,
  footnotes and endnotes (labelled `[1]`, `[i]` where they are cited, their text after
  that paragraph), a ruby's base text;
- not read: tracked deletions (kept apart in `text:tracked-changes`), comments
  (`office:annotation`), hidden paragraphs and text, the tables of contents and indexes
  LibreOffice generates, drawings' titles and descriptions, headers and footers (in
  `styles.xml`).

The title is the first Title-styled paragraph's, else the document properties', else
the first heading (the caller falls back to the file's name). A password-protected
document (its parts encrypted) is refused in one line naming the file; an empty file
has no text.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

from harness.corpus.headings import first_heading
from harness.corpus.ooxml import LINE_SPACE, Package, number
from harness.corpus.wordml import shown
from harness.errors import ConfigError

TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
STYLE = "urn:oasis:names:tc:opendocument:xmlns:style:1.0"
DRAW = "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"
META = "urn:oasis:names:tc:opendocument:xmlns:meta:1.0"
MANIFEST = "urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"
_DC = "http://purl.org/dc/elements/1.1/"

_SKIPPED = frozenset(
    f"{{{TEXT}}}{name}"
    for name in (
        "tracked-changes",
        "table-of-content",
        "alphabetical-index",
        "illustration-index",
        "table-index",
        "object-index",
        "user-index",
        "bibliography",
        "sequence-decls",
        "variable-decls",
        "user-field-decls",
        "hidden-paragraph",
        "hidden-text",
        "note-citation",
        "ruby-text",
    )
) | {f"{{{OFFICE}}}annotation", f"{{{OFFICE}}}annotation-end", f"{{{OFFICE}}}forms"}
"""Elements whose text is not the document's as a reader sees it."""


def _t(name: str) -> str:
    return f"{{{TEXT}}}{name}"


@dataclass
class _ListStyle:
    """A list style's levels: (num-format, prefix, suffix, start) where a level is
    numbered, None where it is a bullet."""

    levels: dict[int, tuple[str, str, str, int] | None] = field(default_factory=dict)


def _list_styles(*roots: ElementTree.Element | None) -> dict[str, _ListStyle]:
    """The list styles of `styles.xml` and `content.xml`'s automatic styles, by name."""
    out: dict[str, _ListStyle] = {}
    for root in roots:
        if root is None:
            continue
        for ls in root.iter(_t("list-style")):
            style = _ListStyle()
            for level in ls:
                n = number(level.get(_t("level")), 1)
                if level.tag == _t("list-level-style-number"):
                    style.levels[n] = (
                        level.get(f"{{{STYLE}}}num-format") or "",
                        level.get(f"{{{STYLE}}}num-prefix") or "",
                        level.get(f"{{{STYLE}}}num-suffix") or "",
                        number(level.get(_t("start-value")), 1),
                    )
                else:
                    style.levels[n] = None
            out[ls.get(f"{{{STYLE}}}name") or ""] = style
    return out


def _paragraph_parents(*roots: ElementTree.Element | None) -> dict[str, str]:
    """Each paragraph style's parent style (an automatic `P1` based on `Title`)."""
    out: dict[str, str] = {}
    for root in roots:
        if root is None:
            continue
        for st in root.iter(f"{{{STYLE}}}style"):
            name, parent = st.get(f"{{{STYLE}}}name"), st.get(f"{{{STYLE}}}parent-style-name")
            if name and parent:
                out[name] = parent
    return out


class _Reader:
    """Walks `office:text`, collecting lines (see the module docstring)."""

    def __init__(self, lists: dict[str, _ListStyle], parents: dict[str, str]) -> None:
        self.lists = lists
        self.parents = parents
        self.lines: list[str] = []
        self.title = ""
        self.notes: list[str] = []  # the notes cited in the paragraph being read
        self.counts: dict[str, list[int]] = {}  # a list's count per level, by its id
        self.last: list[int] = []  # the last list's counts, for continue-numbering

    def _styles(self, name: str | None) -> Iterator[str]:
        """A paragraph style and the styles it is based on."""
        seen: set[str] = set()
        while name and name not in seen:
            seen.add(name)
            yield name
            name = self.parents.get(name)

    def blocks(
        self, elements: Iterable[ElementTree.Element], marker: str = "", depth: int = 0
    ) -> None:
        """Read block elements: paragraphs, headings, lists, tables, sections; `marker`
        leads the first line written (a list item's number)."""
        for el in elements:
            before = len(self.lines)
            if el.tag in _SKIPPED:
                continue
            if el.tag == _t("p"):
                title = "Title" in self._styles(el.get(_t("style-name")))
                self.paragraph(el, "# " if title else marker, depth, title)
            elif el.tag == _t("h"):
                level = min(number(el.get(_t("outline-level")), 1), 5)
                self.paragraph(el, "#" * (level + 1) + " ", 0)
            elif el.tag == _t("list"):
                self.list(el, depth, None)
            elif el.tag == f"{{{TABLE}}}table":
                self.table(el)
            elif el.tag in (_t("section"), _t("index-body")):
                self.blocks(el, marker, depth)
            if len(self.lines) > before:
                marker = ""

    def paragraph(
        self, p: ElementTree.Element, marker: str, depth: int, title: bool = False
    ) -> None:
        """`p`'s text, a line per line break, then its text boxes' paragraphs, then the
        notes it cites."""
        boxes: list[ElementTree.Element] = []
        text = "".join(self._inline(p, boxes))
        heading = marker.startswith("#")
        shown_number = p.find(_t("number"))
        if heading and shown_number is not None and (shown_number.text or "").strip():
            text = f"{(shown_number.text or '').strip()} {text}"
        lines = [LINE_SPACE.sub(" ", line).strip() for line in text.split("\n")]
        lines = [line for line in lines if line]
        if heading:
            lines = [" ".join(lines)] if lines else []
        for i, line in enumerate(lines):
            lead = marker if i == 0 else " " * len(marker)
            self.lines.append("  " * depth + lead + line if not heading else marker + line)
        if title and lines and not self.title:
            self.title = lines[0]
        for box in boxes:
            self.blocks(box, "", depth)
        self.lines.extend(self.notes)
        self.notes = []

    def _inline(self, el: ElementTree.Element, boxes: list[ElementTree.Element]) -> Iterator[str]:
        if el.text:
            yield el.text
        for child in el:
            tag = child.tag
            if tag in _SKIPPED or tag == _t("number"):
                pass
            elif tag in (_t("s"), _t("tab")):
                yield " "  # spaces are one space in a line
            elif tag == _t("line-break"):
                yield "\n"
            elif tag == _t("note"):
                yield from self._note(child)
            elif tag == f"{{{DRAW}}}frame":
                boxes.extend(child.iter(f"{{{DRAW}}}text-box"))
            elif not tag.startswith(f"{{{DRAW}}}"):  # shapes, images: no text of theirs
                yield from self._inline(child, boxes)
            if child.tail:
                yield child.tail

    def _note(self, note: ElementTree.Element) -> Iterator[str]:
        """A footnote's or endnote's label where it is cited; its text kept for after
        the paragraph."""
        citation = note.find(_t("note-citation"))
        label = (citation.text or "").strip() if citation is not None else ""
        label = label or str(len(self.notes) + 1)
        yield f"[{label}]"
        body = note.find(_t("note-body"))
        texts = [
            LINE_SPACE.sub(" ", "".join(self._inline(p, [])).replace("\n", " ")).strip()
            for p in (body.iter() if body is not None else ())
            if p.tag in (_t("p"), _t("h"))
        ]
        said = " ".join(t for t in texts if t)
        if said:
            self.notes.append(f"[{label}] {said}")

    def list(self, lst: ElementTree.Element, depth: int, inherited: _ListStyle | None) -> None:
        """A list's items, each marked as its list style shows it (a nested list without
        a style of its own has its parent's)."""
        own = self.lists.get(lst.get(_t("style-name")) or "")
        style = own or inherited or _ListStyle()
        key = lst.get(f"{{{_XML}}}id") or f"list-{id(lst)}"
        counts = self.counts.setdefault(key, [])
        if lst.get(_t("continue-numbering")) == "true" and not counts:
            counts.extend(self.last)
        level = depth + 1
        for item in lst:
            if item.tag not in (_t("list-item"), _t("list-header")):
                continue
            marker = ""
            if item.tag == _t("list-item"):
                fmt = style.levels.get(level)
                counts.extend([0] * (level - len(counts)))
                restart = number(item.get(_t("start-value")), None)
                start = fmt[3] if fmt else 1
                counts[level - 1] = (
                    restart if restart is not None else max(counts[level - 1] + 1, start)
                )
                del counts[level:]
                marker = _marker(fmt, counts[level - 1])
            for el in item:
                if el.tag == _t("list"):
                    self.list(el, depth + 1, style)
                else:
                    before = len(self.lines)
                    self.blocks([el], marker, depth)
                    if len(self.lines) > before:
                        marker = ""
        self.last = counts

    def table(self, table: ElementTree.Element) -> None:
        """Each row a line, its cells' text joined by " | "."""
        for row in _table_rows(table):
            cells = []
            for cell in row:
                if cell.tag != f"{{{TABLE}}}table-cell":
                    continue  # a cell merged into another, or a column's declaration
                inner = _Reader(self.lists, self.parents)
                inner.blocks(cell)
                cells.append(" ".join(line.strip() for line in inner.lines))
            while cells and not cells[-1]:
                cells.pop()
            if cells:
                self.lines.append(" | ".join(cells))


_XML = "http://www.w3.org/XML/1998/namespace"


def _marker(fmt: tuple[str, str, str, int] | None, n: int) -> str:
    """A list item's marker: `- ` for a bullet, its number as its level's style writes
    it (`1.`, `a)`, `(iv)`) for a numbered level, nothing for a level numbered with no
    number (num-format "")."""
    if fmt is None:
        return "- "
    kind, prefix, suffix, _ = fmt
    if not kind:
        return ""
    return f"{prefix}{shown(n, _FORMATS.get(kind, 'decimal'))}{suffix} "


_FORMATS = {
    "1": "decimal",
    "a": "lowerLetter",
    "A": "upperLetter",
    "i": "lowerRoman",
    "I": "upperRoman",
}
"""ODF's num-format as Word's number formats, which `wordml.shown` writes."""


def _table_rows(table: ElementTree.Element) -> Iterator[ElementTree.Element]:
    for el in table:
        if el.tag == f"{{{TABLE}}}table-row":
            yield el
        elif el.tag in (
            f"{{{TABLE}}}table-header-rows",
            f"{{{TABLE}}}table-rows",
            f"{{{TABLE}}}table-row-group",
        ):
            yield from _table_rows(el)


def _encrypted(package: Package) -> bool:
    """Whether the manifest says the parts are encrypted (a password-protected file)."""
    manifest = package.part("META-INF/manifest.xml")
    return manifest is not None and any(
        True for _ in manifest.iter(f"{{{MANIFEST}}}encryption-data")
    )


def odt_text(path: Path) -> tuple[str, str]:
    """The text of the OpenDocument text document at `path` (lines joined by newlines,
    see the module docstring) and its title ("" when it has none).

    Raises ConfigError naming the file when it is no .odt, is password-protected, or a
    part is damaged (`harness.corpus.ooxml`).
    """
    with Package(path, kind=".odt", field="corpus.sources") as package:
        if package.empty:
            return "", ""
        if _encrypted(package):
            raise ConfigError(
                str(path),
                "corpus.sources",
                "the document is password-protected: save it without a password",
            )
        content = package.main("content.xml")
        styles = package.part("styles.xml")
        meta = package.part("meta.xml")
        reader = _Reader(_list_styles(styles, content), _paragraph_parents(styles, content))
        body = next(content.iter(f"{{{OFFICE}}}text"), None)
        if body is not None:
            package.walk(reader.blocks, body)
        properties = ""
        if meta is not None:
            properties = " ".join((meta.findtext(f".//{{{_DC}}}title") or "").split())
    text = "\n".join(reader.lines)
    return text, reader.title or properties or first_heading(text)
