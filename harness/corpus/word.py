"""The text of a Word document (.docx) as a reader of it reads it, laid out in lines.

A .docx is a zip of XML parts (Office Open XML, ECMA-376); its body is
`word/document.xml`, its styles, list numbering and properties parts beside it. It is
read with the standard library (no Word, no LibreOffice, no network):

- each paragraph is a line; a heading (a paragraph whose style is Word's Title or one
  of its "heading 1-9", in any language's Word, as a style's built-in name is English,
  or a style based on one, or a paragraph with an outline level) is written as
  markdown's, the Title `#` and "heading N" N+1 #'s, so the chunks below it have it as
  their topic and the document has its title;
- a list item is `- item`, or `1. item` in a numbered list (counted per list and level,
  as Word shows it), indented two spaces a level;
- a table row is a line, its cells joined by " | " (as a saved page's);
- read: text in hyperlinks, content controls, a field's shown result, tracked
  insertions, text moved to a place, and text boxes (after their paragraph, once: Word
  writes each twice, for new readers and for old);
- not read: deleted text (tracked deletions, text moved away), field codes, the table
  of contents Word generates (its entries repeat the headings with page numbers, as a
  site's menu does), headers, footers, comments, footnotes and endnotes.

The title is the document properties' title, else the first heading (the caller falls
back to the file's name). A file that is no .docx (a legacy .doc, a password-protected
document, which Word saves as another kind of file) is refused in one line naming it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

from harness.corpus.headings import first_heading
from harness.corpus.ooxml import Package
from harness.errors import ConfigError

_W = (
    "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
    "http://purl.oclc.org/ooxml/wordprocessingml/main",  # "Strict Open XML", a Save As choice
)
_MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
_DC = "http://purl.org/dc/elements/1.1/"
_HEADING = re.compile(r"heading ([1-9])")
_SPACE = re.compile(r"[ \t\u00a0]+")
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


def _name(el: ElementTree.Element) -> str:
    """`el`'s local name when it is WordprocessingML's ("p", "t", ...); "mc:" and its
    local name for markup compatibility's; "" for any other vocabulary's (drawings, VML,
    Office's extensions), whose content is walked through for the text boxes it holds."""
    tag = el.tag
    if not isinstance(tag, str) or not tag.startswith("{"):
        return ""
    ns, _, local = tag[1:].partition("}")
    if ns in _W:
        return local
    return "mc:" + local if ns == _MC else ""


def _attr(el: ElementTree.Element | None, local: str) -> str | None:
    """The value of `el`'s WordprocessingML attribute `local` (`w:val`), or None."""
    if el is None:
        return None
    for ns in _W:
        value = el.get(f"{{{ns}}}{local}")
        if value is not None:
            return value
    return None


def _child(el: ElementTree.Element | None, local: str) -> ElementTree.Element | None:
    """`el`'s first WordprocessingML child named `local`, or None."""
    if el is None:
        return None
    return next((c for c in el if _name(c) == local), None)


@dataclass(frozen=True)
class _Style:
    name: str
    based_on: str | None
    outline: int | None  # Word's outline level, 0 for the top
    numbering: tuple[str | None, int | None]  # the list (id, level) a list style gives


@dataclass
class _Lists:
    """Word's list numbering (`word/numbering.xml`): each list's format per level, and
    the counts shown so far."""

    formats: dict[tuple[str, int], tuple[str, int]] = field(default_factory=dict)
    counts: dict[str, list[int]] = field(default_factory=dict)

    def marker(self, num_id: str, level: int) -> str:
        """The marker of the next item of list `num_id` at `level`: "-" for bullets,
        else its number ("3.", "c.", "iv.") counted per list, deeper levels restarting
        when a shallower item comes."""
        fmt, start = self.formats.get((num_id, level), ("bullet", 1))
        counts = self.counts.setdefault(num_id, [0] * 9)
        counts[level] = counts[level] + 1 if counts[level] else start
        counts[level + 1 :] = [0] * (8 - level)
        n = counts[level]
        if fmt in ("decimal", "decimalZero", "ordinal", "decimalEnclosedParen"):
            return f"{n}."
        if fmt in ("lowerLetter", "upperLetter"):
            letter = chr(ord("a") + (n - 1) % 26)
            return (letter.upper() if fmt == "upperLetter" else letter) + "."
        if fmt in ("lowerRoman", "upperRoman"):
            roman = _roman(n)
            return (roman.upper() if fmt == "upperRoman" else roman) + "."
        return "-"


def _roman(n: int) -> str:
    out = ""
    for value, digits in (
        (1000, "m"),
        (900, "cm"),
        (500, "d"),
        (400, "cd"),
        (100, "c"),
        (90, "xc"),
        (50, "l"),
        (40, "xl"),
        (10, "x"),
        (9, "ix"),
        (5, "v"),
        (4, "iv"),
        (1, "i"),
    ):
        while n >= value:
            out, n = out + digits, n - value
    return out


def _numbering(pr: ElementTree.Element | None) -> tuple[str | None, int | None]:
    """The list id and level a `w:pPr`'s `w:numPr` names, each None where it names none
    (list id "0" means no list: a paragraph taken out of its style's list)."""
    num = _child(pr, "numPr")
    level = _attr(_child(num, "ilvl"), "val")
    return (
        _attr(_child(num, "numId"), "val"),
        min(int(level), 8) if level is not None and level.isdigit() else None,
    )


def _read_styles(root: ElementTree.Element | None) -> dict[str, _Style]:
    styles: dict[str, _Style] = {}
    for el in root if root is not None else ():
        if _name(el) != "style" or _attr(el, "type") not in (None, "paragraph"):
            continue
        pr = _child(el, "pPr")
        outline = _attr(_child(pr, "outlineLvl"), "val")
        styles[_attr(el, "styleId") or ""] = _Style(
            name=(_attr(_child(el, "name"), "val") or "").lower(),
            based_on=_attr(_child(el, "basedOn"), "val"),
            outline=int(outline) if outline and outline.isdigit() else None,
            numbering=_numbering(pr),
        )
    return styles


def _int(value: str | None, default: int) -> int:
    return int(value) if value is not None and value.isdigit() else default


def _read_lists(root: ElementTree.Element | None) -> _Lists:
    """Each list's (format, start) per level: its abstract definition's, with the list's
    own start overrides."""
    abstract: dict[str, dict[int, tuple[str, int]]] = {}
    lists = _Lists()
    for el in root if root is not None else ():
        if _name(el) == "abstractNum":
            levels = abstract.setdefault(_attr(el, "abstractNumId") or "", {})
            for lvl in el:
                if _name(lvl) == "lvl":
                    levels[_int(_attr(lvl, "ilvl"), 0)] = (
                        _attr(_child(lvl, "numFmt"), "val") or "bullet",
                        _int(_attr(_child(lvl, "start"), "val"), 1),
                    )
    for el in root if root is not None else ():
        if _name(el) == "num":
            num_id = _attr(el, "numId") or ""
            levels = abstract.get(_attr(_child(el, "abstractNumId"), "val") or "", {})
            for level, fmt in levels.items():
                lists.formats[(num_id, level)] = fmt
            for override in el:
                start = _attr(_child(override, "startOverride"), "val")
                if _name(override) == "lvlOverride" and start is not None:
                    key = (num_id, _int(_attr(override, "ilvl"), 0))
                    shown = lists.formats.get(key, ("decimal", 1))[0]
                    lists.formats[key] = (shown, _int(start, 1))
    return lists


class _Reader:
    """Walks a document's body into lines (see the module docstring)."""

    def __init__(self, styles: dict[str, _Style], lists: _Lists, *, headings: bool = True) -> None:
        self.styles = styles
        self.lists = lists
        self.headings = headings  # False in a table cell, whose lines join into one
        self.lines: list[str] = []

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
            name = _name(el)
            if name == "p":
                self.paragraph(el)
            elif name == "tbl":
                self.table(el)
            elif name == "sdt":
                if not _generated_contents(el):
                    self.blocks(_content(el))
            elif name == "mc:AlternateContent":
                self.blocks(_alternative(el))
            elif name not in _SKIPPED:  # an insertion, custom XML, a moved-to range
                self.blocks(el)

    def paragraph(self, p: ElementTree.Element) -> None:
        pr = _child(p, "pPr")
        style_id = _attr(_child(pr, "pStyle"), "val")
        chain = list(self._style(style_id))
        own = chain[0].name if chain else ""
        if own.startswith("toc ") or own == "toc heading":
            return  # an entry of the table of contents Word generates
        parts: list[str] = []
        boxes: list[ElementTree.Element] = []
        _inline(p, parts, boxes)
        lines = [_SPACE.sub(" ", line).strip() for line in "".join(parts).split("\n")]
        lines = [line for line in lines if line]
        if lines:
            level = _heading_level(pr, chain) if self.headings else None
            num_id, num_level = _numbering(pr)
            for style in chain:  # what the paragraph leaves unsaid, its list style says
                num_id = num_id if num_id is not None else style.numbering[0]
                num_level = num_level if num_level is not None else style.numbering[1]
            if level is not None:
                self.lines.append("#" * level + " " + " ".join(lines))
            elif num_id is not None and num_id != "0":
                num_level = num_level or 0
                indent = "  " * num_level
                self.lines.append(f"{indent}{self.lists.marker(num_id, num_level)} {lines[0]}")
                self.lines.extend(f"{indent}  {line}" for line in lines[1:])
            else:
                self.lines.extend(lines)
        for box in boxes:
            self.blocks(box)

    def table(self, tbl: ElementTree.Element) -> None:
        for tr in _within(tbl, "tr"):
            cells: list[str] = []
            for tc in _within(tr, "tc"):
                inner = _Reader(self.styles, self.lists, headings=False)
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
        name = _name(el)
        if name == wanted:
            yield el
        elif name == "sdt":
            yield from _within(_content(el), wanted)
        elif name in ("ins", "customXml", "moveTo"):
            yield from _within(el, wanted)


def _content(sdt: ElementTree.Element) -> ElementTree.Element:
    """A content control's content (`w:sdtContent`), or the control itself."""
    content = _child(sdt, "sdtContent")
    return sdt if content is None else content


def _generated_contents(sdt: ElementTree.Element) -> bool:
    """Whether a content control holds the table of contents Word generates."""
    part = _child(_child(_child(sdt, "sdtPr"), "docPartObj"), "docPartGallery")
    return (_attr(part, "val") or "").lower() == "table of contents"


def _alternative(el: ElementTree.Element) -> ElementTree.Element:
    """Of an `mc:AlternateContent`, the first choice (what current Word shows), else its
    fallback: both hold the same text, so only one is read."""
    for name in ("mc:Choice", "mc:Fallback"):
        found = next((c for c in el if _name(c) == name), None)
        if found is not None:
            return found
    return el


def _heading_level(pr: ElementTree.Element | None, chain: list[_Style]) -> int | None:
    """How many #'s a paragraph's heading takes (Title 1, "heading N" N+1, an outline
    level L L+2), or None for a paragraph that is no heading. The paragraph's own
    outline level, then its style's and the styles it is based on, nearest first."""
    own = _attr(_child(pr, "outlineLvl"), "val")
    if own is not None:
        return min(int(own) + 2, 6) if own.isdigit() and int(own) < 9 else None
    for style in chain:
        if style.name == "title":
            return 1
        m = _HEADING.fullmatch(style.name)
        if m:
            return min(int(m.group(1)) + 1, 6)
        if style.outline is not None:
            return min(style.outline + 2, 6) if style.outline < 9 else None
    return None


def _inline(el: ElementTree.Element, parts: list[str], boxes: list[ElementTree.Element]) -> None:
    """Append the text of a paragraph's content to `parts` ("\\n" for a line break) and
    its text boxes to `boxes`, which are read after it."""
    for child in el:
        name = _name(child)
        if name == "t":
            parts.append(child.text or "")
        elif name in ("tab", "ptab"):
            parts.append(" ")
        elif name in ("br", "cr"):
            parts.append("\n")
        elif name == "noBreakHyphen":
            parts.append("-")
        elif name == "txbxContent":
            boxes.append(child)
        elif name == "mc:AlternateContent":
            _inline(_alternative(child), parts, boxes)
        elif name not in _SKIPPED:
            _inline(child, parts, boxes)


def word_text(path: Path) -> tuple[str, str]:
    """The text of the Word document at `path` (lines joined by newlines, see the module
    docstring) and its title (the properties', else its first heading, else "").

    Raises ConfigError naming the file when it is no .docx or a part is damaged
    (`harness.corpus.ooxml`).
    """
    with Package(path, kind=".docx", field="corpus.sources") as package:
        body = package.part("word/document.xml")
        if body is None:
            raise ConfigError(str(path), "corpus.sources", "a .docx without word/document.xml")
        reader = _Reader(
            _read_styles(package.part("word/styles.xml")),
            _read_lists(package.part("word/numbering.xml")),
        )
        core = package.part("docProps/core.xml")
    top = _child(body, "body")
    reader.blocks(body if top is None else top)
    text = "\n".join(reader.lines)
    title = ""
    if core is not None:
        title = _SPACE.sub(" ", core.findtext(f"{{{_DC}}}title") or "").strip()
    return text, title or first_heading(text)
