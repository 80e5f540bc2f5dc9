"""Tables: the rows of a CSV or TSV file, and a table in a corpus read as records.

A team's FAQ or knowledge base kept in a spreadsheet (question, answer, product, ...) is
a corpus as much as a folder of pages. Each row of a CSV file, or of each visible sheet
of an Excel workbook (.xlsx; `harness.corpus.spreadsheet`) or an OpenDocument
spreadsheet (.ods; `harness.corpus.odf`), after the header is a record, read as a
document of its own, a line per non-empty cell named by its column's header (`column
3` where the header cell is empty or the row runs past it):

    Question: How do I reset my password?
    Answer: Open Settings > Account and choose "Reset password".
    Product: Web app

A document a row is how LangChain's CSVLoader reads a table into a RAG application, a
record is what a question is answered from, and every chunk then carries its column
names, which a reader needs to tell a price from a plan; the judge exam's unrelated
passages, drawn from other documents, are then other records. A record's id is its
file's with its key: the value of its id column, where the header names one (`id`,
`Article ID`, `ticket_id`, `key`) whose values are all there and all different
(`faq.csv:KB-12`, which stays when rows are added above it), else its place, the line
the row starts on (`faq.csv:12`) or the sheet and Excel's row number
(`kb.xlsx:Billing:5`); white space in a key is `_`, as labels files split columns at
it. Its source is the file's path with the place. A cell's own line breaks are kept (blank
lines within it closed up). A cell of HTML, as a help desk's or a CMS's export writes an
article's body (`<p>Within <strong>30 days</strong>.</p>`), is read as its text, every
element's (`harness.corpus.html.fragment_text`); a cell that only mentions a tag
(`wrap it in <b>`) is text. The first non-empty row is the header, except that a row
holding one cell above a row holding several is the table's title (a spreadsheet's
"Support FAQ, 2026" line above its header), every record's title: so a header that
names its first column alone reads as a title. A record's title is the table's (the
workbook's document title, else its title row, else the file's name), with the sheet's
name in a workbook that shows several. Rows are read as `read_rows` reads them for a
questions file (the delimiter a comma, or a semicolon where the first line holds one
and it reads the first lines as a table more consistently): a broken quote is an error
naming the line.
"""

from __future__ import annotations

import contextlib
import csv
import io
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import ConfigError

if TYPE_CHECKING:
    from harness.corpus.spreadsheet import Workbook

WORKBOOK_SUFFIXES = (".xlsx", ".ods")
"""Spreadsheets `read_book` reads, sheet by sheet (a CSV is one table)."""
TABLE_SUFFIXES = (".csv", *WORKBOOK_SUFFIXES)
"""Tables read as documents in a corpus. Not .tsv, which is what labels (BEIR's
`qrels/test.tsv`, `harness label`'s output), run files and logs are written as: a
folder of them beside the documents is skipped with a warning, as before."""
_QUOTED = re.compile(r'"[^"]*"?')
DELIMITER_SAMPLE = 20
"""Non-empty lines a CSV's delimiter is chosen by."""
MAX_CELL_CHARS = 64 * 1024 * 1024
"""The longest cell `read_rows` reads (Python's csv stops at 131,072 characters by
default, which a long article's body in a help desk's export can pass). Set for the
process's csv module when a table is read."""
_BLANK_LINES = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")
_HTML = re.compile(
    r"</(?:p|div|li|ul|ol|h[1-6]|table|tr|td|strong|em|b|i|a|span|blockquote|pre|code)\s*>"
    r"|<br\s*/?>",
    re.IGNORECASE,
)
"""Markup that makes a cell that starts with a tag HTML: a closing tag of text markup,
or a line break."""


def delimiter(raw: str, tsv: bool) -> str:
    """The cell delimiter of a delimited text: a tab for TSV; for CSV a semicolon when
    the first line holds one outside quotes and the first lines (DELIMITER_SAMPLE) read
    as a table of two or more columns more consistently with semicolons than with
    commas (Excel writes `;` where the decimal mark is a comma: German, French,
    Dutch..., and does not quote a comma in a cell), else a comma."""
    if tsv:
        return "\t"
    sample = [line for line in raw.split("\n") if line.strip()][:DELIMITER_SAMPLE]
    if not sample or ";" not in _QUOTED.sub("", sample[0]):
        return ","  # a header of one column: its cells' semicolons are text
    return max((",", ";"), key=lambda d: _consistency(sample, d))


def _consistency(lines: list[str], delimiter: str) -> tuple[int, int]:
    """(lines of the commonest cell count, that count) of `lines` split by
    `delimiter`; (0, 0) when the commonest count is one cell."""
    counts = Counter(len(row) for row in csv.reader(lines, delimiter=delimiter))
    width, lines_of_width = counts.most_common(1)[0] if counts else (1, 0)
    return (lines_of_width, width) if width > 1 else (0, 0)


def read_rows(raw: str, p: Path) -> Iterator[tuple[int, list[str]]]:
    """The non-empty rows of a CSV (quoted cells as spreadsheets write them; a quoted
    cell may hold line breaks) or a TSV (no quoting: a `"` is text, as in a log's
    query), each with the line it starts on, read as they are asked for (a reader of
    the rows meets their errors in the file's order).

    Quotes are read strictly: a quote left open to the end of the file, closed by a
    stray quote within the text, or whose cell runs over lines that each read as a row
    of the table (a quote left open until a later stray quote closes it), is a
    ConfigError naming `p` and the line it opened on, rather than rows swallowed into
    one."""
    tsv = p.suffix.lower() == ".tsv"
    if csv.field_size_limit() < MAX_CELL_CHARS:
        csv.field_size_limit(MAX_CELL_CHARS)
    reader = csv.reader(
        io.StringIO(raw),
        delimiter=delimiter(raw, tsv),
        quoting=csv.QUOTE_NONE if tsv else csv.QUOTE_MINIMAL,
        strict=True,
    )
    widths: list[int] = []  # of the first two rows: a title row's one cell, the header's
    line = 0
    try:
        for row in reader:
            first, line = line + 1, reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if first != line and widths and _swallows_rows(row, max(widths), reader.dialect):
                raise ConfigError(
                    f"{p}:{first}",
                    "",
                    f"a quoted cell runs on to line {line} over lines that read as rows (a "
                    f"quote opened on line {first} left open?)",
                )
            if len(widths) < 2:
                widths.append(len(row))
            yield first, row
    except csv.Error as exc:
        opened = line + 1  # the row that failed started after the last one read
        detail = (
            f"a quote opened on line {opened} is never closed"
            if "end of data" in str(exc) or "field limit" in str(exc)
            else f"not a readable table row ({exc}; a quote opened on line {opened} and "
            "closed early?)"
            if reader.line_num > opened
            else f"not a readable table row ({exc})"
        )
        raise ConfigError(f"{p}:{opened}", "", detail) from None


def _swallows_rows(row: Sequence[str], columns: int, dialect: Any) -> bool:
    """Whether a row read over several lines holds, inside a cell, lines that each read
    as a whole row of `columns` cells (two or more): the mark of a quote left open until
    a later stray quote, where a spreadsheet's cell with line breaks holds text."""
    if columns < 2:
        return False
    inner = [ln for cell in row if "\n" in cell for ln in cell.split("\n")[1:] if ln.strip()]

    def cells(line: str) -> int:
        try:
            return len(next(csv.reader([line], dialect), []))
        except csv.Error:  # a quote of the cell's own text ('"hi'): no row
            return 0

    return bool(inner) and all(cells(ln) == columns for ln in inner)


def _filled(row: Sequence[str]) -> int:
    return sum(1 for cell in row if cell.strip())


@dataclass(frozen=True)
class Record:
    """One row of a table as a document: `key` names it in its file (its id column's
    value, or the CSV line it starts on, `12`, or in a workbook the sheet with either,
    `Billing:5`)."""

    key: str
    text: str
    title: str
    place: str
    """Where it lies: the CSV line the row starts on, or the sheet and Excel's row."""


def records(
    rows: Sequence[tuple[int, Sequence[str]]],
) -> tuple[list[tuple[str, int, str]], str]:
    """(each record's key, row number and text, the table's title or "") of a table's
    numbered rows, header first (see the module docstring); empty rows are skipped. A
    record's key is its id column's value where the header names one and its values are
    unique (`id_column`), else its row number. A table of a header alone has no
    records."""
    rows = [(n, r) for n, r in rows if _filled(r)]
    title = ""
    if len(rows) > 1 and _filled(rows[0][1]) == 1 and _filled(rows[1][1]) > 1:
        title = next(cell.strip() for cell in rows[0][1] if cell.strip())
        rows = rows[1:]
    if not rows:
        return [], title
    header = [" ".join(cell.split()) for cell in rows[0][1]]
    out = []
    for n, row in rows[1:]:
        cells = [(i, _cell_text(cell)) for i, cell in enumerate(row)]
        lines = [f"{_name(header, i)}: {text}" for i, text in cells if text]
        if lines:
            out.append((n, row, "\n".join(lines)))
    column = id_column(header, [row for _, row, _ in out])
    keys = [str(n) if column is None else _key(row[column]) for n, row, _ in out]
    return [(key, n, text) for key, (n, _, text) in zip(keys, out, strict=True)], title


_ID_NAME = re.compile(r"(?:.*[ _-])?(?:id|key|uuid)", re.IGNORECASE)


def id_column(header: Sequence[str], rows: Sequence[Sequence[str]]) -> int | None:
    """The column that names each record, or None: the first whose header is an id's
    name (`id`, `_id`, `key`, `uuid`, `Article ID`, `ticket_id`) and whose values are
    all there and all different (a help desk's article id; not one repeated on each of
    an article's sections)."""
    for i, name in enumerate(header):
        if not _ID_NAME.fullmatch(name):
            continue
        values = [_key(row[i]) if i < len(row) else "" for row in rows]
        if all(values) and len(set(values)) == len(values):
            return i
    return None


def _key(cell: str) -> str:
    """A cell as part of a document id: white space made `_` (a labels file's columns
    are split at white space)."""
    return "_".join(cell.split())


def _cell_text(cell: str) -> str:
    """A cell's text, stripped, blank lines closed up: a cell that starts with a tag and
    holds text markup (`_HTML`) read as an HTML fragment, every element's text kept (a
    note in an `<aside>` too), where a cell that mentions a tag (`wrap it in <b>`), or
    one the HTML parser gives up on, is text."""
    cell = cell.strip()
    if cell.startswith("<") and _HTML.search(cell):
        from harness.corpus.html import RejectedMarkup, fragment_text  # bs4 only if needed

        with contextlib.suppress(RejectedMarkup):  # else no HTML after all: as written
            cell = fragment_text(cell)
    return _BLANK_LINES.sub("\n", cell)


def _name(header: Sequence[str], i: int) -> str:
    """Column `i`'s name: its header cell, else `column <i+1>`."""
    return header[i] if i < len(header) and header[i] else f"column {i + 1}"


def csv_records(raw: str, p: Path) -> tuple[list[Record], str]:
    """(the records, the table's title row or "") of a CSV file's text `raw`."""
    rows, title = records(list(read_rows(raw, p)))
    return [Record(key, text, title, str(n)) for key, n, text in rows], title


def read_book(path: Path, field: str) -> Workbook:
    """The visible sheets and the title of a spreadsheet: an OpenDocument .ods
    (`harness.corpus.odf.read_ods`), else an Excel .xlsx
    (`harness.corpus.spreadsheet.read_workbook`)."""
    if path.suffix.lower() == ".ods":
        from harness.corpus.odf import read_ods

        return read_ods(path, field)
    from harness.corpus.spreadsheet import read_workbook

    return read_workbook(path, field)


def workbook_records(path: Path) -> tuple[list[Record], str]:
    """(the records of each visible sheet, the title) of a spreadsheet (.xlsx, .ods) in
    a corpus. The title is the workbook's document title, else a single sheet's title
    row, else ""; a record's is the title (or the sheet's title row), with its sheet's
    name when the workbook shows several."""
    book = read_book(path, "corpus.sources")
    title = ""
    out: list[Record] = []
    for sheet in book.sheets:
        rows, own = records(sheet.rows)
        title = title or (own if len(book.sheets) == 1 else "")
        named = book.title or own or path.stem
        named = f"{named}: {sheet.name}" if len(book.sheets) > 1 else named
        out.extend(
            Record(f"{_key(sheet.name)}:{key}", text, named, f"{sheet.name}:{n}")
            for key, n, text in rows
        )
    return out, book.title or title
