"""The text of a Word document (.docx) as a reader of it reads it, laid out in lines.

A .docx is a zip of XML parts (Office Open XML, ECMA-376); its body is
`word/document.xml`, its styles, list numbering and properties parts beside it. It is
read with the standard library (no Word, no LibreOffice, no network):

- each paragraph is a line; a heading (a paragraph whose style is Word's Title or one
  of its "heading 1-9", in any language's Word, as a style's built-in name is English,
  or a style based on one, or a paragraph with an outline level) is written as
  markdown's, the Title `#` and "heading N" N+1 #'s, with its number when its style
  numbers it (`## 3.2 Carrying leave over`), so the chunks below it have it as their
  topic and the document has its title;
- a list item is `- item`, or its number as Word shows it (`1.`, `(c)`, `2.1.`: counted
  per list and level, `harness.corpus.wordml`), indented two spaces a level;
- a table row is a line, its cells joined by " | " (as a saved page's);
- read: text in hyperlinks, content controls, a field's shown result, tracked
  insertions, text moved to a place, equations, text boxes (after their paragraph,
  once: Word writes each twice, for new readers and for old), and footnotes and
  endnotes (labelled `[1]`, `[i]` where they are referenced, their text after that
  paragraph);
- not read: deleted text (tracked deletions, text moved away), hidden text, a content
  control's placeholder ("Click or tap here to enter text."), field codes, the table of
  contents Word generates (its entries repeat the headings with page numbers, as a
  site's menu does), headers, footers and comments.

The title is the first Title-styled paragraph's, else the document properties' (often
a template's, so second), else the first heading (the caller falls back to the file's
name). A file that is no .docx (a legacy .doc, a password-protected document, which
Word saves as another kind of file) is refused in one line naming it; an empty file
(Windows' "New > Microsoft Word Document") has no text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

from harness.corpus.headings import first_heading
from harness.corpus.ooxml import LINE_SPACE, Package, number, properties_title
from harness.corpus.wordml import Lists, attr, child, name, on, read_lists, shown

_HEADING = re.compile(r"heading ([1-9])")
_SKIPPED = frozenset(
    [
        "del",  # tracked deletion
        "moveFrom",  # text moved away (its new place is a moveTo)
        "instrText",  # a field's code (its shown result is ordinary text)
        "delText",
        "delInstrText",
        "pPr",
        "rPr",
        "sdtPr",
        "sdtEndPr",
        "tblPr",
        "tblGrid",
        "trPr",
        "tcPr",
        "sectPr",
        "fldData",
    ]
)
"""Elements whose content is not the document's text (or is read elsewhere)."""


@dataclass(frozen=True)
class _Style:
    name: str
    based_on: str | None
    outline: int | None  # Word's outline level, 0 for the top
    numbering: tuple[str | None, int | None]  # the list (id, level) a list style gives


def _numbering(pr: ElementTree.Element | None) -> tuple[str | None, int | None]:
    """The list id and level a `w:pPr`'s `w:numPr` names, each None where it names none
    (list id "0" means no list: a paragraph taken out of its style's list)."""
    num = child(pr, "numPr")
    level = number(attr(child(num, "ilvl"), "val"), None)
    return attr(child(num, "numId"), "val"), None if level is None else min(level, 8)


def _read_styles(root: ElementTree.Element | None) -> tuple[dict[str, _Style], dict[str, str]]:
    """The paragraph styles by id, and each list style's list (`w:numId`)."""
    styles: dict[str, _Style] = {}
    list_styles: dict[str, str] = {}
    for el in root if root is not None else ():
        kind = attr(el, "type")
        if name(el) != "style" or kind not in (None, "paragraph", "numbering"):
            continue
        pr = child(el, "pPr")
        style_id = attr(el, "styleId") or ""
        numbering = _numbering(pr)
        if kind == "numbering":
            if numbering[0] is not None:
                list_styles[style_id] = numbering[0]
            continue
        styles[style_id] = _Style(
            name=(attr(child(el, "name"), "val") or "").lower(),
            based_on=attr(child(el, "basedOn"), "val"),
            outline=number(attr(child(pr, "outlineLvl"), "val"), None),
            numbering=numbering,
        )
    return styles, list_styles


class _Reader:
    """Walks a document's body into lines (see the module docstring)."""

    def __init__(
        self,
        styles: dict[str, _Style],
        lists: Lists,
        notes: dict[tuple[str, str], ElementTree.Element],
        *,
        headings: bool = True,
    ) -> None:
        self.styles = styles
        self.lists = lists
        self.notes = notes  # ("footnoteReference" or "endnoteReference", id) -> the note
        self.counted = {"footnoteReference": 0, "endnoteReference": 0}
        self.headings = headings  # False in a table cell, whose lines join into one
        self.lines: list[str] = []
        self.title = ""  # the first Title-styled paragraph's text

    def _style(self, style_id: str | None) -> Iterator[_Style]:
        """The style `style_id` and those it is based on, nearest first."""
        seen: set[str] = set()
        while style_id and style_id not in seen and style_id in self.styles:
            seen.add(style_id)
            yield self.styles[style_id]
            style_id = self.styles[style_id].based_on

    def blocks(self, parent: ElementTree.Element) -> None:
        """Read the paragraphs and tables in `parent` (the body, a content control, a
        table cell, a text box) into lines."""
        for el in parent:
            kind = name(el)
            if kind == "p":
                self.paragraph(el)
            elif kind == "tbl":
                self.table(el)
            elif kind == "sdt":
                if not _generated_contents(el) and not _placeholder(el):
                    self.blocks(_content(el))
            elif kind == "mc:AlternateContent":
                self.blocks(_alternative(el))
            elif kind not in _SKIPPED:  # an insertion, custom XML, a moved-to range
                self.blocks(el)

    def paragraph(self, p: ElementTree.Element) -> None:
        pr = child(p, "pPr")
        style_id = attr(child(pr, "pStyle"), "val")
        chain = list(self._style(style_id))
        own = chain[0].name if chain else ""
        if own.startswith("toc ") or own == "toc heading":
            return  # an entry of the table of contents Word generates
        parts: list[str] = []
        after: list[ElementTree.Element | str] = []
        self._inline(p, parts, after)
        lines = [LINE_SPACE.sub(" ", line).strip() for line in "".join(parts).split("\n")]
        lines = [line for line in lines if line]
        num_id, num_level = _numbering(pr)
        for style in chain:  # what the paragraph leaves unsaid, its list style says
            num_id = num_id if num_id is not None else style.numbering[0]
            num_level = num_level if num_level is not None else style.numbering[1]
        num_level = num_level or 0
        marker = None  # None: no list item
        if num_id is not None and num_id != "0":  # counted even empty, as Word counts it
            marker = self.lists.marker(num_id, num_level)
        if lines:
            level = _heading_level(pr, chain) if self.headings else None
            if level is not None:
                text = " ".join(lines)
                self.title = self.title or (text if level == 1 else "")
                label = "" if marker in (None, "-") else marker  # "## 3.2 Carrying over"
                self.lines.append(" ".join(filter(None, ["#" * level, label, text])))
            elif marker is not None:
                indent = "  " * num_level
                self.lines.append(indent + (f"{marker} {lines[0]}" if marker else lines[0]))
                self.lines.extend(f"{indent}  {line}" for line in lines[1:])
            else:
                self.lines.extend(lines)
        label = ""
        for item in after:  # text boxes; notes, each after its label
            if isinstance(item, str):
                label = item
                continue
            start = len(self.lines)
            self.blocks(item)
            if label and len(self.lines) > start:
                self.lines[start] = f"{label} {self.lines[start].lstrip()}"
            label = ""

    def _inline(
        self, el: ElementTree.Element, parts: list[str], after: list[ElementTree.Element | str]
    ) -> None:
        """Append the text of a paragraph's content to `parts` ("\\n" for a line break),
        and to `after` what is read after the paragraph: its text boxes, and its notes
        (a footnote's or endnote's label, then the note), whose labels stand where
        they are referenced, as Word numbers them (footnotes 1, 2, ...; endnotes i, ii)."""
        for item in el:
            kind = name(item)
            if kind in ("t", "m:t"):
                parts.append(item.text or "")
            elif kind in ("tab", "ptab"):
                parts.append(" ")
            elif kind in ("br", "cr"):
                parts.append("\n")
            elif kind == "noBreakHyphen":
                parts.append("-")
            elif kind == "txbxContent":
                after.append(item)
            elif kind in ("footnoteReference", "endnoteReference"):
                note = self.notes.get((kind, attr(item, "id") or ""))
                if note is not None and not on(child(item, "customMarkFollows")):
                    self.counted[kind] += 1
                    n = self.counted[kind]
                    label = f"[{n if kind == 'footnoteReference' else shown(n, 'lowerRoman')}]"
                    parts.append(label)
                    after.extend([label, note])
            elif kind == "mc:AlternateContent":
                self._inline(_alternative(item), parts, after)
            elif kind == "r" and on(child(child(item, "rPr"), "vanish")):
                continue  # hidden text
            elif kind == "sdt" and _placeholder(item):
                continue
            elif kind not in _SKIPPED:
                self._inline(item, parts, after)

    def table(self, tbl: ElementTree.Element) -> None:
        for tr in _within(tbl, "tr"):
            cells: list[str] = []
            for tc in _within(tr, "tc"):
                inner = _Reader(self.styles, self.lists, self.notes, headings=False)
                inner.counted = self.counted  # one count of notes for the document
                inner.blocks(tc)
                text = " ".join(inner.lines)
                if text:
                    cells.append(text)
            if cells:
                self.lines.append(" | ".join(cells))


def _within(parent: ElementTree.Element, wanted: str) -> Iterator[ElementTree.Element]:
    """A table's rows or a row's cells (`wanted`: "tr", "tc"), those inside content
    controls, custom XML and tracked insertions too."""
    for el in parent:
        kind = name(el)
        if kind == wanted:
            yield el
        elif kind == "sdt":
            yield from _within(_content(el), wanted)
        elif kind in ("ins", "customXml", "moveTo"):
            yield from _within(el, wanted)


def _content(sdt: ElementTree.Element) -> ElementTree.Element:
    """A content control's content (`w:sdtContent`), or the control itself."""
    content = child(sdt, "sdtContent")
    return sdt if content is None else content


def _generated_contents(sdt: ElementTree.Element) -> bool:
    """Whether a content control holds the table of contents Word generates."""
    part = child(child(child(sdt, "sdtPr"), "docPartObj"), "docPartGallery")
    return (attr(part, "val") or "").lower() == "table of contents"


def _placeholder(sdt: ElementTree.Element) -> bool:
    """Whether a content control shows its placeholder ("Click or tap here to enter
    text."), not text someone wrote."""
    return on(child(child(sdt, "sdtPr"), "showingPlcHdr"))


def _alternative(el: ElementTree.Element) -> ElementTree.Element:
    """Of an `mc:AlternateContent`, the first choice (what current Word shows), else its
    fallback: both hold the same text, so only one is read."""
    for wanted in ("mc:Choice", "mc:Fallback"):
        found = next((c for c in el if name(c) == wanted), None)
        if found is not None:
            return found
    return el


def _heading_level(pr: ElementTree.Element | None, chain: list[_Style]) -> int | None:
    """How many #'s a paragraph's heading takes (Title 1, "heading N" N+1, an outline
    level L L+2), or None for a paragraph that is no heading. The paragraph's own
    outline level, then its style's and the styles it is based on, nearest first."""
    own = attr(child(pr, "outlineLvl"), "val")
    if own is not None:
        outline = number(own, 9)
        return min(outline + 2, 6) if outline is not None and outline < 9 else None
    for style in chain:
        if style.name == "title":
            return 1
        m = _HEADING.fullmatch(style.name)
        if m:
            return min(int(m.group(1)) + 1, 6)
        if style.outline is not None:
            return min(style.outline + 2, 6) if style.outline < 9 else None
    return None


def _notes(
    root: ElementTree.Element | None, reference: str
) -> dict[tuple[str, str], ElementTree.Element]:
    """The footnotes (or endnotes) of their part by (`reference`, id), without the
    separator lines Word keeps among them."""
    return {
        (reference, attr(note, "id") or ""): note
        for note in (root if root is not None else ())
        if name(note) in ("footnote", "endnote") and attr(note, "type") in (None, "normal")
    }


def word_text(path: Path) -> tuple[str, str]:
    """The text of the Word document at `path` (lines joined by newlines, see the module
    docstring) and its title (see there; "" when it has none).

    Raises ConfigError naming the file when it is no .docx or a part is damaged
    (`harness.corpus.ooxml`).
    """
    with Package(path, kind=".docx", field="corpus.sources") as package:
        if package.empty:
            return "", ""
        body = package.main("word/document.xml")
        styles, list_styles = _read_styles(package.part("word/styles.xml"))
        notes = _notes(package.part("word/footnotes.xml"), "footnoteReference")
        notes.update(_notes(package.part("word/endnotes.xml"), "endnoteReference"))
        reader = _Reader(styles, read_lists(package.part("word/numbering.xml"), list_styles), notes)
        properties = properties_title(package)
        top = child(body, "body")
        package.walk(reader.blocks, body if top is None else top)
    text = "\n".join(reader.lines)
    return text, reader.title or properties or first_heading(text)
