"""The text of an OpenDocument text document (.odt: LibreOffice Writer's, and what Google
Docs and Word save as "OpenDocument Text") as a reader of it reads it, laid out in lines.

An .odt is a zip of XML parts (ISO/IEC 26300); its body is `content.xml`, its title in
`meta.xml`. It is read with the standard library and the package reader the Office
files share (`harness.corpus.ooxml.Package`: each part bounded in size, damaged files
and DTDs refused), laid out as a Word document is (`harness.corpus.word`):

- each paragraph is a line; a heading (`text:h`) is markdown's, its outline level + 1
  #'s, with its number where the document's outline style numbers headings (LibreOffice's
  chapter numbering: `## 3.2 Carrying leave over`), a Title-styled paragraph `#`;
- a list item is `- item`, or `1.`, `a)`, `(iv)`, `1.2.` where its list style numbers
  that level (counted per list and level, continuing a list that says so, by
  `continue-numbering` or `continue-list`; letters `a..z, aa, ab`), indented two spaces
  a level;
- a table row is a line, its non-empty cells joined by " | " (a heading in a cell is
  text);
- read: text in links, spans and fields (a field's shown value), text boxes and shapes'
  text after their paragraph (a page's frames where they stand), footnotes and endnotes
  (labelled `[1]`, `[i]` where they are cited, their text after that paragraph), a
  ruby's base text;
- not read: tracked deletions (kept apart in `text:tracked-changes`), comments
  (`office:annotation`), hidden paragraphs, sections and text (a hidden-paragraph or
  hidden-text field, a style's `text:display="none"`, a section shown on a condition),
  the tables of contents and indexes LibreOffice generates, drawings' titles and
  descriptions, headers and footers (in `styles.xml`).

The title is the first Title-styled paragraph's, else the document properties', else
the first heading (the caller falls back to the file's name). A password-protected
document (its parts encrypted) is refused in one line naming the file; an empty file
has no text.

An OpenDocument spreadsheet (.ods: LibreOffice Calc's) is read as cells, sheet by
sheet, for `harness.corpus.table` to read as an Excel workbook's (`read_ods`): a cell's
paragraphs read as above, a line each.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from xml.etree import ElementTree

from harness.corpus.headings import first_heading
from harness.corpus.ooxml import LINE_SPACE, Package, number, properties_title
from harness.corpus.spreadsheet import Sheet, Workbook
from harness.corpus.wordml import shown
from harness.errors import ConfigError

TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
STYLE = "urn:oasis:names:tc:opendocument:xmlns:style:1.0"
DRAW = "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"
MANIFEST = "urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"

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
        "note-citation",
        "ruby-text",
        "number",
    )
) | {f"{{{OFFICE}}}annotation", f"{{{OFFICE}}}annotation-end", f"{{{OFFICE}}}forms"}
"""Elements whose text is not the document's as a reader sees it (a `text:number` is
a stored list or heading number, which the reader counts itself)."""
_FRAMES = frozenset(f"{{{DRAW}}}{name}" for name in ("frame", "custom-shape", "a", "g"))
"""Drawing elements whose text boxes or paragraphs hold text."""
_FORMATS = {
    "1": "decimal",
    "a": "lowerLetter",
    "A": "upperLetter",
    "i": "lowerRoman",
    "I": "upperRoman",
}
"""ODF's num-format as Word's number formats, which `wordml.shown` writes."""
_XML = "http://www.w3.org/XML/1998/namespace"


def _t(name: str) -> str:
    return f"{{{TEXT}}}{name}"


def _s(name: str) -> str:
    return f"{{{STYLE}}}{name}"


@dataclass(frozen=True)
class _Level:
    """A numbered level of a list or outline style."""

    fmt: str  # ODF's num-format: "1", "a", "A", "i", "I", or "" (no number)
    prefix: str
    suffix: str
    start: int
    display: int  # how many levels the number shows: 2 gives "1.2"
    sync: bool  # letters past z as "aa, bb" (num-letter-sync) rather than "aa, ab"


@dataclass
class _ListStyle:
    """A list (or outline) style's levels: a `_Level` where a level is numbered, None
    where it is a bullet."""

    levels: dict[int, _Level | None] = field(default_factory=dict)


def _level(el: ElementTree.Element) -> _Level:
    return _Level(
        fmt=el.get(_s("num-format")) or "",
        prefix=el.get(_s("num-prefix")) or "",
        suffix=el.get(_s("num-suffix")) or "",
        start=number(el.get(_t("start-value")), 1),
        display=max(1, number(el.get(_t("display-levels")), 1)),
        sync=el.get(_s("num-letter-sync")) == "true",
    )


@dataclass
class _Styles:
    """What the reader needs of a document's styles (`styles.xml` and `content.xml`'s
    automatic styles)."""

    lists: dict[str, _ListStyle] = field(default_factory=dict)
    parents: dict[str, str] = field(default_factory=dict)
    hidden: set[str] = field(default_factory=set)  # styles whose text is not shown
    outline: _ListStyle = field(default_factory=_ListStyle)  # how headings are numbered

    @classmethod
    def read(cls, *roots: ElementTree.Element | None) -> _Styles:
        styles = cls()
        for root in (r for r in roots if r is not None):
            for ls in root.iter(_t("list-style")):
                styles.lists[ls.get(_s("name")) or ""] = _read_list_style(ls)
            for outline in root.iter(_t("outline-style")):
                styles.outline = _read_list_style(outline)
            for st in root.iter(_s("style")):
                name, parent = st.get(_s("name")), st.get(_s("parent-style-name"))
                if name and parent:
                    styles.parents[name] = parent
                props = st.find(_s("text-properties"))
                if name and props is not None and props.get(_t("display")) == "none":
                    styles.hidden.add(name)
        return styles

    def chain(self, name: str | None) -> Iterator[str]:
        """A style and the styles it is based on."""
        seen: set[str] = set()
        while name and name not in seen:
            seen.add(name)
            yield name
            name = self.parents.get(name)

    def hides(self, el: ElementTree.Element) -> bool:
        """Whether `el`'s style (or one it is based on) hides its text."""
        return any(s in self.hidden for s in self.chain(el.get(_t("style-name"))))


def _read_list_style(ls: ElementTree.Element) -> _ListStyle:
    style = _ListStyle()
    for level in ls:
        n = number(level.get(_t("level")), 1)
        numbered = level.tag in (_t("list-level-style-number"), _t("outline-level-style"))
        style.levels[n] = _level(level) if numbered else None
    return style


def _letters(n: int, sync: bool) -> str:
    """`n` in letters as ODF counts them: a..z, aa, ab, ... (bijective base 26), or
    a..z, aa, bb, ... where the style says num-letter-sync (Word's way)."""
    if sync:
        return shown(n, "lowerLetter")
    out = ""
    while n > 0 and len(out) < 8:  # past 8 letters (208 billion): digits
        n, r = divmod(n - 1, 26)
        out = chr(ord("a") + r) + out
    return out if n == 0 else str(n)


def _shown(n: int, level: _Level) -> str:
    """The count `n` in `level`'s number format."""
    if level.fmt in ("a", "A"):
        letters = _letters(n, level.sync)
        return letters.upper() if level.fmt == "A" else letters
    return shown(n, _FORMATS.get(level.fmt, "decimal"))


def _number(style: _ListStyle, counts: list[int], level: int) -> str | None:
    """The number of an item at `level` whose counts per level are `counts`, as
    `style` writes it (`1.`, `(a)`, `1.2.`); "" where the level is numbered with no
    number; None where it is a bullet."""
    own = style.levels.get(level)
    if own is None:
        return None
    if not own.fmt:
        return ""
    parts = []
    for at in range(max(1, level - own.display + 1), level + 1):
        fmt = style.levels.get(at) or own
        parts.append(_shown(counts[at - 1], fmt if fmt.fmt else own))
    return f"{own.prefix}{'.'.join(parts)}{own.suffix}"


def _count(counts: list[int], level: int, start: int, restart: int | None) -> None:
    """Count an item at `level` (1-based): its level's count moves on (or restarts at
    `restart`), the deeper levels' start again."""
    counts.extend([0] * (level - len(counts)))
    counts[level - 1] = restart if restart is not None else max(counts[level - 1] + 1, start)
    del counts[level:]


class _Reader:
    """Walks `office:text`, collecting lines (see the module docstring). In a table
    cell (`cell`), headings and the title are text."""

    def __init__(self, styles: _Styles, cell: bool = False) -> None:
        self.styles = styles
        self.cell = cell
        self.lines: list[str] = []
        self.title = ""
        self.notes: list[str] = []  # the notes cited in the paragraph being read
        self.lists: dict[str, list[int]] = {}  # a list's counts per level, by its xml:id
        self.last: list[int] = []  # the last list's counts, for continue-numbering
        self.outline: list[int] = []  # the headings' counts per level

    def blocks(
        self, elements: Iterable[ElementTree.Element], marker: str = "", depth: int = 0
    ) -> None:
        """Read block elements: paragraphs, headings, lists, tables, sections, a page's
        frames; `marker` leads the first line written (a list item's number)."""
        for el in elements:
            before = len(self.lines)
            if el.tag in _SKIPPED:
                continue
            if el.tag == _t("p"):
                title = not self.cell and "Title" in self.styles.chain(el.get(_t("style-name")))
                self.paragraph(el, "# " if title else marker, depth, title)
            elif el.tag == _t("h"):
                self.heading(el, marker, depth)
            elif el.tag == _t("list"):
                self.list(el, depth, None, None)
            elif el.tag == f"{{{TABLE}}}table":
                self.table(el)
            elif el.tag == _t("section"):
                if el.get(_t("display")) not in ("none", "condition"):
                    self.blocks(el, marker, depth)
            elif el.tag == _t("index-body"):
                self.blocks(el, marker, depth)
            elif el.tag in _FRAMES:
                for box in _boxes(el):
                    self.blocks(box, "", depth)
            if len(self.lines) > before:
                marker = ""

    def heading(self, h: ElementTree.Element, marker: str, depth: int) -> None:
        """A heading: markdown's (its outline level + 1 #'s) with its number where the
        outline style numbers its level; in a list or a table cell, a paragraph."""
        level = min(number(h.get(_t("outline-level")), 1), 9)
        if self.cell or marker:
            self.paragraph(h, marker, depth)
            return
        numbered = ""
        if h.get(_t("is-list-header")) != "true":
            restart = number(h.get(_t("start-value")), None)
            own = self.styles.outline.levels.get(level)
            if h.get(_t("restart-numbering")) == "true" and restart is None:
                restart = own.start if own else 1
            _count(self.outline, level, own.start if own else 1, restart)
            numbered = _number(self.styles.outline, self.outline, level) or ""
        self.paragraph(h, "#" * (min(level, 5) + 1) + " ", 0, lead=numbered)

    def paragraph(
        self,
        p: ElementTree.Element,
        marker: str,
        depth: int,
        title: bool = False,
        lead: str = "",
    ) -> None:
        """`p`'s text, a line per line break (a heading's in one), then the notes it
        cites, then its text boxes' and shapes' paragraphs; a hidden paragraph (its
        style, a hidden-paragraph field) is not read."""
        if self.styles.hides(p) or any(
            f.get(_t("is-hidden")) != "false" for f in p.iter(_t("hidden-paragraph"))
        ):
            return
        boxes: list[ElementTree.Element] = []
        text = "".join(self._inline(p, boxes))
        lines = [LINE_SPACE.sub(" ", line).strip() for line in text.split("\n")]
        lines = [line for line in lines if line]
        heading = marker.startswith("#")
        if heading:
            lines = [" ".join([lead, *lines]).strip()] if lines else []
        for i, line in enumerate(lines):
            lead_ = marker if i == 0 else " " * len(marker)
            self.lines.append(marker + line if heading else "  " * depth + lead_ + line)
        if title and lines and not self.title:
            self.title = lines[0]
        self.lines.extend(self.notes)
        self.notes = []
        for box in boxes:
            self.blocks(box, "", depth)

    def _inline(self, el: ElementTree.Element, boxes: list[ElementTree.Element]) -> Iterator[str]:
        """The text of `el`'s inline content; its frames' text boxes added to `boxes`.
        A line feed or tab in the XML's text is white space, as ODF reads it."""
        if el.text:
            yield _white(el.text)
        for child in el:
            tag = child.tag
            if tag in _SKIPPED or self.styles.hides(child):
                pass
            elif tag in (_t("hidden-text"), _t("hidden-paragraph")):
                if tag == _t("hidden-text") and child.get(_t("is-hidden")) == "false":
                    yield _white(child.get(_t("string-value")) or "")
            elif tag in (_t("s"), _t("tab")):
                yield " "
            elif tag == _t("line-break"):
                yield "\n"
            elif tag == _t("note"):
                yield from self._note(child)
            elif tag in _FRAMES:
                boxes.extend(_boxes(child))
            elif not tag.startswith(f"{{{DRAW}}}"):  # images and the like: no text
                yield from self._inline(child, boxes)
            if child.tail:
                yield _white(child.tail)

    def _note(self, note: ElementTree.Element) -> Iterator[str]:
        """A footnote's or endnote's label where it is cited; its text kept for after
        the paragraph."""
        citation = note.find(_t("note-citation"))
        label = ""
        if citation is not None:
            label = (citation.get(_t("label")) or citation.text or "").strip()
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

    def list(
        self,
        lst: ElementTree.Element,
        depth: int,
        inherited: _ListStyle | None,
        counts: list[int] | None,
    ) -> None:
        """A list's items, each marked as its list style shows it. A nested list counts
        on its parent's levels and, without a style of its own, has its parent's; a
        list that continues another (`continue-list`, `continue-numbering`) counts on
        from it."""
        style = self.styles.lists.get(lst.get(_t("style-name")) or "") or inherited
        style = style or _ListStyle()
        if counts is None:
            continued = lst.get(_t("continue-list"))
            if continued in self.lists:
                counts = self.lists[continued]
            elif lst.get(_t("continue-numbering")) == "true":
                counts = self.last
            else:
                counts = []
            own_id = lst.get(f"{{{_XML}}}id")
            if own_id:
                self.lists[own_id] = counts
            self.last = counts
        level = depth + 1
        for item in lst:
            if item.tag not in (_t("list-item"), _t("list-header")):
                continue
            marker = ""
            if item.tag == _t("list-item"):
                own = style.levels.get(level)
                _count(
                    counts,
                    level,
                    own.start if own else 1,
                    number(item.get(_t("start-value")), None),
                )
                shown_ = _number(style, counts, level)
                marker = "- " if shown_ is None else f"{shown_} " if shown_ else ""
            for el in item:
                if el.tag == _t("list"):
                    self.list(el, depth + 1, style, counts)
                else:
                    before = len(self.lines)
                    self.blocks([el], marker, depth)
                    if len(self.lines) > before:
                        marker = ""

    def table(self, table: ElementTree.Element) -> None:
        """Each row a line, its non-empty cells' text joined by " | "."""
        for row in _table_rows(table):
            cells = []
            for cell in row:
                if cell.tag != f"{{{TABLE}}}table-cell":
                    continue  # a cell merged into another, or a column's declaration
                inner = _Reader(self.styles, cell=True)
                inner.blocks(cell)
                cells.append(" ".join(line.strip() for line in inner.lines))
            cells = [c for c in cells if c]
            if cells:
                self.lines.append(" | ".join(cells))


def _white(text: str) -> str:
    """Text of the XML with its line feeds and tabs as spaces (ODF's white space)."""
    return text.replace("\n", " ").replace("\t", " ").replace("\r", " ")


def _boxes(el: ElementTree.Element) -> list[ElementTree.Element]:
    """What holds the text of a frame, a shape, a link around them or a group: a
    frame's own text boxes (not the ones nested in their paragraphs, which those
    paragraphs read), a shape itself (its paragraphs)."""
    if el.tag == f"{{{DRAW}}}frame":
        return el.findall(f"{{{DRAW}}}text-box")
    if el.tag == f"{{{DRAW}}}custom-shape":
        return [el]
    return [box for child in el if child.tag in _FRAMES for box in _boxes(child)]


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


def _refuse_encrypted(package: Package) -> None:
    """ConfigError naming the file when its manifest says its parts are encrypted (a
    password-protected file)."""
    manifest = package.part("META-INF/manifest.xml")
    if manifest is not None and any(True for _ in manifest.iter(f"{{{MANIFEST}}}encryption-data")):
        raise ConfigError(
            str(package.path),
            package.field,
            "the document is password-protected: save it without a password",
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
        _refuse_encrypted(package)
        content = package.main("content.xml")
        reader = _Reader(_Styles.read(package.part("styles.xml"), content))
        body = next(content.iter(f"{{{OFFICE}}}text"), None)
        if body is not None:
            package.walk(reader.blocks, body)
        properties = properties_title(package, "meta.xml")
    text = "\n".join(reader.lines)
    return text, reader.title or properties or first_heading(text)


MAX_CELLS = 4_000_000
"""Cells one spreadsheet may give once its repeated rows and columns are written out
(a row LibreOffice stores once with `number-rows-repeated`): a few bytes of XML can
repeat a row a million times over."""
MAX_COLUMNS = 16_384
MAX_ROWS = 1_048_576
"""Columns and rows a sheet has (LibreOffice's and Excel's limits): a cell past them is
not read."""
_TIME = re.compile(r"PT(\d{1,9})H(\d{1,2})M(\d{1,2})(?:\.\d+)?S")
_DATE = re.compile(
    r"(-?\d{4,9}-\d{2}-\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:\d{2})?"
)


def _t_(name: str) -> str:
    return f"{{{TABLE}}}{name}"


def _cell_value(cell: ElementTree.Element, styles: _Styles) -> str:
    """A spreadsheet cell's text as its sheet shows it (its paragraphs, a line each),
    but as an .xlsx's reads: a date as `2026-11-28` (with its time to the nearest
    minute, `2026-11-28 14:30`), a time of day as `14:30`, whatever the locale's format
    shows, and TRUE or FALSE; a cell whose paragraphs hold no text (some writers leave
    them out) by its stored value. Drawings anchored to the cell (LibreOffice writes
    them inside it) are not its text."""
    kind = cell.get(f"{{{OFFICE}}}value-type")
    shown = _date(cell.get(f"{{{OFFICE}}}date-value") or "") if kind == "date" else None
    if kind == "time":
        found = _TIME.fullmatch(cell.get(f"{{{OFFICE}}}time-value") or "")
        if found and int(found.group(1)) < 24:  # else a duration, or a date's time: as shown
            minutes = int(found.group(1)) * 60 + int(found.group(2)) + (int(found.group(3)) >= 30)
            shown = f"{min(minutes, 1439) // 60:02d}:{min(minutes, 1439) % 60:02d}"
    if kind == "boolean":
        shown = "TRUE" if cell.get(f"{{{OFFICE}}}boolean-value") == "true" else "FALSE"
    if shown:
        return shown
    reader = _Reader(styles, cell=True)
    reader.blocks(c for c in cell if not c.tag.startswith(f"{{{DRAW}}}"))
    if reader.lines:
        return "\n".join(line.strip() for line in reader.lines)
    for name in ("string-value", "value"):
        stored = cell.get(f"{{{OFFICE}}}{name}")
        if stored is not None:
            return stored
    return ""


def _date(value: str) -> str | None:
    """An ODF date value (`2026-11-28`, `2026-11-28T14:30:45.12+02:00`) as an .xlsx's
    date reads, its time rounded to the minute and shown where it is not midnight;
    None for one it cannot read."""
    found = _DATE.fullmatch(value)
    if found is None:
        return None
    day, hours, minutes, seconds = found.groups()
    if hours is None:
        return day
    total = int(hours) * 60 + int(minutes) + (int(seconds or 0) >= 30)
    if total >= 1440:  # 23:59:30 and later: the next day, which only datetime counts
        try:
            moment = datetime.fromisoformat(day) + timedelta(minutes=total)
        except ValueError:
            return day
        return moment.strftime("%Y-%m-%d")
    return day if total == 0 else f"{day} {total // 60:02d}:{total % 60:02d}"


class _Cells:
    """What a spreadsheet's repeated rows and columns have written out so far, against
    MAX_CELLS."""

    def __init__(self, path: Path, field: str) -> None:
        self.path, self.field, self.left = path, field, MAX_CELLS

    def take(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise ConfigError(
                str(self.path),
                self.field,
                f"its rows (repeated ones written out) make over {MAX_CELLS:,} cells, more "
                "than harness reads from one file: split the spreadsheet",
            )


def _sheet_rows(
    table: ElementTree.Element, styles: _Styles, cells: _Cells
) -> list[tuple[int, list[str]]]:
    """A sheet's non-empty rows, numbered as the sheet shows them (repeated rows
    counted), each cell placed in its column (repeated cells counted)."""
    rows: list[tuple[int, list[str]]] = []
    at = 0
    for row in _table_rows(table):
        if at >= MAX_ROWS:
            break
        repeat = min(max(1, number(row.get(_t_("number-rows-repeated")), 1)), MAX_ROWS - at)
        values: dict[int, str] = {}
        column = 0
        for cell in row:
            if cell.tag not in (_t_("table-cell"), _t_("covered-table-cell")):
                continue
            span = max(1, number(cell.get(_t_("number-columns-repeated")), 1))
            covered = cell.tag == _t_("covered-table-cell")  # merged into another
            value = _cell_value(cell, styles) if column < MAX_COLUMNS and not covered else ""
            if value.strip():
                for c in range(column, min(column + span, MAX_COLUMNS)):
                    values[c] = value
            column += span
        if values:
            width = max(values) + 1
            cells.take(width * repeat)
            line = [values.get(i, "") for i in range(width)]
            rows.extend((at + k + 1, list(line)) for k in range(repeat))
        at += repeat
    return rows


def read_ods(path: Path, field: str) -> Workbook:
    """The visible sheets of the OpenDocument spreadsheet (.ods: LibreOffice Calc's) at
    `path`, in its order, and its title (`meta.xml`'s, else ""): each sheet's non-empty
    rows numbered as Calc shows them, a cell's text as the sheet shows it, dates and
    times as ISO's (`_cell_value`). Merged-away cells, comments and hidden text are not
    read; a hidden row is, as an .xlsx's is.

    Raises ConfigError naming the file (and `field`) when it is no .ods, is
    password-protected, a part is damaged, its repeats make over MAX_CELLS cells, or it
    has no visible sheet; an empty file has no sheets.
    """
    with Package(path, kind=".ods", field=field) as package:
        if package.empty:
            return Workbook([], "")
        _refuse_encrypted(package)
        content = package.main("content.xml")
        styles = _Styles.read(package.part("styles.xml"), content)
        hidden = {
            name
            for st in content.iter(_s("style"))
            if any(p.get(_t_("display")) == "false" for p in st.iter(_s("table-properties")))
            for name in [st.get(_s("name"))]
            if name
        }
        bodies = list(content.iter(f"{{{OFFICE}}}spreadsheet"))
        if not bodies:
            raise ConfigError(
                str(path), field, "not a spreadsheet (an OpenDocument text renamed .ods?)"
            )
        cells = _Cells(path, field)
        sheets = [
            Sheet(table.get(_t_("name")) or "", package.walk(_sheet_rows, table, styles, cells))
            for body in bodies
            for table in body
            if table.tag == _t_("table") and table.get(_t_("style-name")) not in hidden
        ]
        title = properties_title(package, "meta.xml")
    if not sheets:
        raise ConfigError(str(path), field, "the spreadsheet has no visible sheet")
    return Workbook(sheets, title)
