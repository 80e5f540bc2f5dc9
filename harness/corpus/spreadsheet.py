"""The cells of an Excel workbook (.xlsx), sheet by sheet, as text: a questions file kept
in a spreadsheet is read as its CSV export would be, without exporting it.

Read with the standard library (`harness.corpus.ooxml`): each visible worksheet in the
workbook's order, its rows by Excel's row numbers (so a message names the row a user
sees), each cell's text: shared and inline strings (rich text joined, without phonetic
guides, Excel's `_x000D_` escapes undone), a formula's last result (none in a file no
spreadsheet program has recalculated), a number as stored (`3`, `2.5`), TRUE / FALSE.
Of number formats, dates and times and percentages are applied (`Formats`): a date
reads `2026-11-28` (with its time, `2026-11-28 14:30`, or a time alone, `14:30`), a
percentage `12.5%`; other formats (currency, thousands separators, fractions) are not.
Empty rows are left out; a row's cells are placed by their column letters, so an empty
cell keeps its column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
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
    """One worksheet's name and its non-empty rows: (the row number the spreadsheet
    shows, cells)."""

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


_DATE_FORMATS = frozenset([14, 15, 16, 17, 22, *range(27, 37), *range(50, 59)])
"""Excel's built-in number formats that show a date (with a time for 22; 27-36 and
50-58 are the East Asian locales' date formats)."""
_TIME_FORMATS = frozenset([18, 19, 20, 21, 45, 46, 47])
_PERCENT_FORMATS = {9: 0, 10: 2}
"""Built-in percentage formats and their decimals ("0%", "0.00%")."""
_LITERALS = re.compile(
    r'"[^"]*"|\\.|_.|\*.|\[(?!h\]|m\]|s\]|hh\]|mm\]|ss\])[^\]]*\]', re.IGNORECASE
)
"""What a format code shows as written or uses for layout, not a placeholder: quoted
text, an escaped character, `_x` (a space as wide as x), `*x` (fill), and bracketed
colours, conditions and locales ([Red], [<100], [$-409]); not elapsed time ([h])."""
_DEC = re.compile(r"\.(0+)")


@dataclass(frozen=True)
class Format:
    """How a cell's number is shown: "date" (`date` and/or `time` parts), "percent"
    (with `decimals`), or "" (as stored)."""

    kind: str = ""
    date: bool = False
    time: bool = False
    decimals: int = 0


def number_format(fmt_id: int, code: str | None) -> Format:
    """The `Format` of a number format: its code (custom formats) or built-in id."""
    if code is None:
        if fmt_id in _PERCENT_FORMATS:
            return Format("percent", decimals=_PERCENT_FORMATS[fmt_id])
        if fmt_id in _DATE_FORMATS:
            return Format("date", date=True, time=fmt_id == 22)
        return Format("date", time=True) if fmt_id in _TIME_FORMATS else Format()
    plain = _LITERALS.sub("", code.split(";")[0]).lower()
    if "%" in plain:
        found = _DEC.search(plain)
        return Format("percent", decimals=len(found.group(1)) if found else 0)
    time = any(c in plain for c in "hs")
    date = any(c in plain for c in "yd") or ("m" in plain and not time)  # m: month or minute
    return Format("date", date=date, time=time) if date or time else Format()


class Formats:
    """The number format of each cell style of a workbook (`xl/styles.xml`), and its
    date system: days from 1899-12-31, with Excel's 1900-02-29 (day 60, a day that
    never was, which Lotus 1-2-3 counted) read as 1900-03-01 and every later day one
    less; or from 1904-01-01 in a workbook saved with the 1904 system."""

    def __init__(self, styles: ElementTree.Element | None, date1904: bool) -> None:
        codes = {
            number(f.get("numFmtId"), -1): f.get("formatCode") or ""
            for group in _children(styles, "numFmts")
            for f in _children(group, "numFmt")
        }
        self.styles = [
            number_format(fmt_id, codes.get(fmt_id))
            for group in _children(styles, "cellXfs")
            for xf in _children(group, "xf")
            for fmt_id in [number(xf.get("numFmtId"), 0)]
        ]
        self.epoch = datetime(1904, 1, 1) if date1904 else datetime(1899, 12, 30)

    def show(self, amount: float, style: int) -> str | None:
        """`amount` as the cell's style shows it, or None where it is shown as stored."""
        fmt = self.styles[style] if 0 <= style < len(self.styles) else Format()
        if fmt.kind == "percent":  # rounded half away from zero, as Excel shows it
            shown = Decimal(repr(amount * 100)).quantize(
                Decimal(1).scaleb(-fmt.decimals), ROUND_HALF_UP
            )
            return f"{shown}%"
        if fmt.kind != "date" or not 0 <= amount < 2958466:  # Excel's last day: 9999-12-31
            return None
        early = self.epoch.year == 1899 and amount < 60  # before Excel's phantom 1900-02-29
        moment = self.epoch + timedelta(days=amount + early)
        moment = (moment + timedelta(seconds=30)).replace(second=0, microsecond=0)
        if fmt.date and fmt.time:
            return moment.strftime("%Y-%m-%d %H:%M")
        return moment.strftime("%Y-%m-%d") if fmt.date else moment.strftime("%H:%M")


def _value(cell: ElementTree.Element, shared: list[str], formats: Formats) -> str:
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
        shown = formats.show(amount, number(cell.get("s"), 0))
        if shown is not None:
            return shown
        return str(int(amount)) if amount.is_integer() and abs(amount) < 1e15 else v
    return v  # str (a formula's text), e (an error such as #N/A), d (an ISO date)


def _rows(
    sheet: ElementTree.Element, shared: list[str], formats: Formats
) -> list[tuple[int, list[str]]]:
    rows: list[tuple[int, list[str]]] = []
    for data in _children(sheet, "sheetData"):
        at = 0
        for row in _children(data, "row"):
            at = number(row.get("r"), at + 1)
            cells: dict[int, str] = {}
            column = -1
            for cell in _children(row, "c"):
                column = _column(cell.get("r"), column)
                cells[column] = _value(cell, shared, formats)
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
        date1904 = any(
            (pr.get("date1904") or "").lower() in ("1", "true")
            for pr in _children(workbook, "workbookPr")
        )
        formats = Formats(package.part("xl/styles.xml"), date1904)
        sheets: list[Sheet] = []
        for entry in (
            s for group in _children(workbook, "sheets") for s in _children(group, "sheet")
        ):
            target = targets.get(rel_id(entry) or "")
            if target is None or entry.get("state") in ("hidden", "veryHidden"):
                continue
            part = package.part(target[1])
            if part is not None and _local(part) == "worksheet":  # not a chart sheet
                sheets.append(Sheet(entry.get("name", ""), _rows(part, shared, formats)))
        title = properties_title(package)
    if not sheets:
        raise ConfigError(str(path), field, "the workbook has no visible worksheet")
    return Workbook(sheets, title)
