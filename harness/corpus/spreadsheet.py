"""The cells of an Excel workbook (.xlsx), sheet by sheet, as text: a questions file kept
in a spreadsheet is read as its CSV export would be, without exporting it.

Read with the standard library (`harness.corpus.ooxml`): each visible worksheet in the
workbook's order, its rows by Excel's row numbers (so a message names the row a user
sees), each cell's text: shared and inline strings (rich text joined, without phonetic
guides, Excel's `_x000D_` escapes undone), a formula's last result (none in a file no
spreadsheet program has recalculated), a number as stored (`3`, `2.5`; a date as
Excel's day number and a percentage as a fraction, as number formats are not applied),
TRUE / FALSE. Empty rows are left out; a row's cells are placed by their column letters,
so an empty cell keeps its column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

from harness.corpus.ooxml import Package, number, properties_title, rel_id, relationships
from harness.errors import ConfigError

_MAIN = (
    "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
    "http://purl.oclc.org/ooxml/spreadsheetml/main",  # "Strict Open XML"
)
_COLUMN = re.compile(r"([A-Z]{1,3})[0-9]*")
_ESCAPE = re.compile(r"_x([0-9A-Fa-f]{4})_")
"""How Excel writes a character XML cannot hold (`_x000D_`, a carriage return), and a
literal `_x` that would read as one (`_x005F_x0041_`: "_x0041_")."""


@dataclass(frozen=True)
class Sheet:
    """One worksheet's name and its non-empty rows: (Excel's row number, cells)."""

    name: str
    rows: list[tuple[int, list[str]]]


def _local(el: ElementTree.Element) -> str:
    """`el`'s local name when it is SpreadsheetML's, else ""."""
    tag = el.tag if isinstance(el.tag, str) else ""
    ns, _, local = tag[1:].partition("}")
    return local if tag.startswith("{") and ns in _MAIN else ""


def _children(el: ElementTree.Element | None, name: str) -> list[ElementTree.Element]:
    return [] if el is None else [c for c in el if _local(c) == name]


def _text(el: ElementTree.Element) -> str:
    """A string item's text: its `t`, or its rich-text runs' `t`s joined, not the
    phonetic guide (`rPh`) Japanese workbooks carry; Excel's escapes undone."""
    parts: list[str] = []
    for child in el:
        name = _local(child)
        if name == "t":
            parts.append(child.text or "")
        elif name == "r":
            parts.extend(t.text or "" for t in _children(child, "t"))
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), "".join(parts))


def _column(ref: str | None, after: int) -> int:
    """The 0-based column of a cell reference ("C7" -> 2); the next column after `after`
    for a cell written without one."""
    m = _COLUMN.fullmatch(ref or "")
    if not m:
        return after + 1
    n = 0
    for letter in m.group(1):
        n = n * 26 + ord(letter) - ord("A") + 1
    return n - 1


def _value(cell: ElementTree.Element, shared: list[str]) -> str:
    kind = cell.get("t", "n")
    if kind == "inlineStr":
        return "".join(_text(s) for s in _children(cell, "is"))
    v = next((c.text or "" for c in _children(cell, "v")), "")
    if kind == "s":
        index = number(v, len(shared))
        return shared[index] if index < len(shared) else ""
    if kind == "b":
        return "TRUE" if v == "1" else "FALSE"
    if kind == "n" and v:
        try:
            amount = float(v)
        except ValueError:
            return v
        return str(int(amount)) if amount.is_integer() and abs(amount) < 1e15 else v
    return v  # str (a formula's text), e (an error such as #N/A), d (an ISO date)


def _rows(sheet: ElementTree.Element, shared: list[str]) -> list[tuple[int, list[str]]]:
    rows: list[tuple[int, list[str]]] = []
    for data in _children(sheet, "sheetData"):
        at = 0
        for row in _children(data, "row"):
            at = number(row.get("r"), at + 1)
            cells: dict[int, str] = {}
            column = -1
            for cell in _children(row, "c"):
                column = _column(cell.get("r"), column)
                cells[column] = _value(cell, shared)
            if any(v.strip() for v in cells.values()):
                rows.append((at, [cells.get(i, "") for i in range(max(cells) + 1)]))
    return rows


@dataclass(frozen=True)
class Workbook:
    """A workbook's visible worksheets, in its order, and its document title ("" when
    its properties name none)."""

    sheets: list[Sheet]
    title: str


def read_workbook(path: Path, field: str) -> Workbook:
    """The visible worksheets of the workbook at `path`, in the workbook's order, and its
    title.

    Raises ConfigError naming the file (and `field`, the setting that named it) when it
    is no .xlsx, a part is damaged, or it has no worksheet; an empty file has no sheets.
    """
    with Package(path, kind=".xlsx", field=field) as package:
        if package.empty:
            return Workbook([], "")
        workbook = package.main("xl/workbook.xml")
        targets = relationships(package, "xl/workbook.xml")
        strings = package.part("xl/sharedStrings.xml")
        shared = [_text(si) for si in _children(strings, "si")]
        sheets: list[Sheet] = []
        for entry in (
            s for group in _children(workbook, "sheets") for s in _children(group, "sheet")
        ):
            target = targets.get(rel_id(entry) or "")
            if target is None or entry.get("state") in ("hidden", "veryHidden"):
                continue
            part = package.part(target[1])
            if part is not None and _local(part) == "worksheet":  # not a chart sheet
                sheets.append(Sheet(entry.get("name", ""), _rows(part, shared)))
        title = properties_title(package)
    if not sheets:
        raise ConfigError(str(path), field, "the workbook has no visible worksheet")
    return Workbook(sheets, title)
