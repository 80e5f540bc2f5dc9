"""OpenDocument spreadsheets (.ods, LibreOffice Calc's) read as tables: a corpus's
records and a questions file, as an Excel workbook is."""

from __future__ import annotations

import pytest

from harness.corpus import load_documents, load_questions
from harness.corpus.odf import MAX_CELLS, MAX_ROWS, read_ods
from harness.errors import ConfigError
from tests.corpus.office import odf

HIDDEN = (
    '<style:style style:name="ta2" style:family="table">'
    '<style:table-properties table:display="false"/></style:style>'
)


def ods(path, *sheets, title=None, styles=HIDDEN, manifest=None):
    """An .ods laid out as LibreOffice Calc writes one: each sheet (name, rows XML,
    style) inside office:spreadsheet."""
    tables = "".join(
        f'<table:table table:name="{name}" table:style-name="{style}">'
        f'<table:table-column table:number-columns-repeated="1024"/>{rows}</table:table>'
        for name, rows, style in sheets
    )
    return odf(path, "spreadsheet", tables, styles=styles, title=title, manifest=manifest)


def cell(text: str, repeat: int = 1) -> str:
    more = f' table:number-columns-repeated="{repeat}"' if repeat > 1 else ""
    return f'<table:table-cell office:value-type="string"{more}><text:p>{text}</text:p></table:table-cell>'


def row(*cells: str, repeat: int = 1) -> str:
    more = f' table:number-rows-repeated="{repeat}"' if repeat > 1 else ""
    return f"<table:table-row{more}>{''.join(cells)}</table:table-row>"


EMPTY_ROW = row('<table:table-cell table:number-columns-repeated="1024"/>')
TAIL = row('<table:table-cell table:number-columns-repeated="1024"/>', repeat=1048000)
"""The empty rows Calc writes to a sheet's end: a million, in one element."""


def test_an_ods_reads_as_an_excel_workbook_does(tmp_path):
    """Rows numbered as Calc shows them (repeated empty rows counted, never written
    out), cells placed by column (repeated empty cells counted), a title row, the
    document's title, a hidden sheet left out; a cell's paragraphs are its lines, a
    comment and a merged-away cell are not read; a date and a time as ISO's, whatever
    the locale shows; a number, a percentage and a currency as shown; a cell some
    writers leave without a paragraph by its value."""
    faq = (
        row(cell("Support FAQ")),
        EMPTY_ROW,
        row(cell("Question"), cell("Answer"), cell("Updated"), cell("Price")),
        row(
            cell("Reset a password?"),
            '<table:table-cell office:value-type="string"><text:p>Open Settings.</text:p>'
            "<office:annotation><text:p>check this</text:p></office:annotation>"
            "<text:p>Choose <text:span>Reset</text:span>.</text:p></table:table-cell>",
            '<table:table-cell office:value-type="date" office:date-value="2026-11-28">'
            "<text:p>28/11/26</text:p></table:table-cell>",
            '<table:table-cell office:value-type="currency" office:currency="EUR" '
            'office:value="12.5"><text:p>12,50 €</text:p></table:table-cell>',
        ),
        EMPTY_ROW,
        EMPTY_ROW,
        row(
            '<table:table-cell table:number-columns-spanned="2" office:value-type="string">'
            "<text:p>Merged over two columns</text:p></table:table-cell>"
            '<table:covered-table-cell office:value-type="string"><text:p>hidden by the '
            "merge</text:p></table:covered-table-cell>",
            '<table:table-cell office:value-type="date" '
            'office:date-value="2026-11-28T14:30:00"><text:p>28/11/26 14:30</text:p>'
            "</table:table-cell>",
            '<table:table-cell office:value-type="percentage" office:value="0.125">'
            "<text:p>12.50%</text:p></table:table-cell>",
        ),
        row(
            '<table:table-cell table:number-columns-repeated="3"/>',
            '<table:table-cell office:value-type="float" office:value="3"/>',
        ),
        row(
            cell("When?"),
            '<table:table-cell office:value-type="time" office:time-value="PT09H05M00S">'
            "<text:p>09:05:00 AM</text:p></table:table-cell>",
        ),
        TAIL,
    )
    path = ods(
        tmp_path / "faq.ods",
        ("FAQ", "".join(faq), "ta1"),
        ("Old", row(cell("Question")) + row(cell("Retired")), "ta2"),
    )
    book = read_ods(path, "corpus.sources")
    assert book.title == ""
    ((name, rows),) = [(s.name, s.rows) for s in book.sheets]
    assert name == "FAQ"
    assert [n for n, _ in rows] == [1, 3, 4, 7, 8, 9]
    docs = load_documents(tmp_path)
    assert [(d.doc_id, d.title, d.source) for d in docs] == [
        ("faq.ods:FAQ:4", "Support FAQ", f"{path}:FAQ:4"),
        ("faq.ods:FAQ:7", "Support FAQ", f"{path}:FAQ:7"),
        ("faq.ods:FAQ:8", "Support FAQ", f"{path}:FAQ:8"),
        ("faq.ods:FAQ:9", "Support FAQ", f"{path}:FAQ:9"),
    ]
    assert [d.text for d in docs] == [
        "Question: Reset a password?\nAnswer: Open Settings.\nChoose Reset.\n"
        "Updated: 2026-11-28\nPrice: 12,50 €",
        "Question: Merged over two columns\nUpdated: 2026-11-28 14:30\nPrice: 12.50%",
        "Price: 3",
        "Question: When?\nAnswer: 09:05",
    ]


def test_a_questions_file_kept_in_calc(tmp_path):
    """The first visible sheet whose first row names the questions' column; a message
    names the sheet and the row Calc shows."""
    path = ods(
        tmp_path / "questions.ods",
        ("Notes", row(cell("Draft questions below")), "ta1"),
        (
            "Eval",
            row(cell("id"), cell("question"))
            + EMPTY_ROW
            + row(cell("q7"), cell("How?"))
            + row(cell("q8"), cell("Why?"), cell("extra")),
            "ta1",
        ),
        title="Eval set",
    )
    with pytest.raises(ConfigError, match=r"questions\.ods: sheet 'Eval', row 4: 3 cells where"):
        load_questions(path)
    ok = ods(
        tmp_path / "ok.ods",
        ("Eval", row(cell("question")) + row(cell("How?"), repeat=2), "ta1"),
    )
    assert [(q.question_id, q.text) for q in load_questions(ok)] == [("q1", "How?"), ("q2", "How?")]


def test_bad_ods_files_are_refused_in_one_line(tmp_path, warnings):
    """No zip (a legacy .xls renamed), a password-protected file, a sheet whose repeats
    would write out millions of cells: one line each, naming the file; in a folder,
    skipped with a warning as a folder's unreadable tables are. An empty file has no
    sheets."""
    legacy = tmp_path / "old.ods"
    legacy.write_bytes(b"\xd0\xcf\x11\xe0 a legacy workbook")
    with pytest.raises(
        ConfigError,
        match=r"not a \.ods \(a legacy \.xls renamed\?\): save it from LibreOffice Calc",
    ):
        read_ods(legacy, "corpus.sources")
    locked = ods(
        tmp_path / "locked.ods",
        ("A", row(cell("x")), "ta1"),
        manifest='<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:'
        'manifest:1.0"><manifest:file-entry manifest:full-path="content.xml">'
        "<manifest:encryption-data/></manifest:file-entry></manifest:manifest>",
    )
    with pytest.raises(ConfigError, match=r"locked\.ods: questions\.file: the document is pass"):
        load_questions(locked)
    bomb = ods(
        tmp_path / "bomb.ods",
        ("A", row(cell("Q")) + row(cell("spam", repeat=1000), repeat=MAX_CELLS), "ta1"),
    )
    with pytest.raises(
        ConfigError,
        match=r"bomb\.ods: corpus\.sources: its rows \(repeated ones written out\) make over",
    ):
        read_ods(bomb, "corpus.sources")
    (tmp_path / "new.ods").write_bytes(b"")
    assert read_ods(tmp_path / "new.ods", "corpus.sources").sheets == []
    (tmp_path / "a.md").write_text("# A\n\nText.\n")
    assert [d.doc_id for d in load_documents(tmp_path)] == ["a.md"]
    assert sorted(w.split(":")[0] for w in warnings if w.startswith("skipped")) == [
        "skipped bomb.ods",
        "skipped locked.ods",
        "skipped old.ods",
    ]


def test_what_calc_writes_beside_a_cell_s_value_reads_as_an_xlsx_s_would(tmp_path):
    """A shape anchored to a cell (LibreOffice writes it inside the cell) is not its
    text; a boolean reads TRUE whatever the locale shows; a date-time rounds to the
    minute and a timezone is no part of a date; a time of day past 24 hours (a
    date-time shown as a time, or a duration) reads as shown; a value written with
    more digits than Python reads is no number; rows past Calc's last are not read."""
    shape = (
        '<table:table-cell office:value-type="string"><draw:custom-shape><text:p>Callout: '
        "do not edit</text:p></draw:custom-shape><text:p>Reset it.</text:p></table:table-cell>"
    )
    values = [
        shape,
        '<table:table-cell office:value-type="boolean" office:boolean-value="true">'
        "<text:p>WAHR</text:p></table:table-cell>",
        '<table:table-cell office:value-type="date" office:date-value="2026-11-28T14:30:45">'
        "<text:p>28.11.26</text:p></table:table-cell>",
        '<table:table-cell office:value-type="date" office:date-value="2026-11-28Z">'
        "<text:p>28.11.26</text:p></table:table-cell>",
        '<table:table-cell office:value-type="time" office:time-value="PT1117254H37M12.12S">'
        "<text:p>14:37</text:p></table:table-cell>",
        '<table:table-cell office:value-type="time" office:time-value="PT9H5M0S">'
        "<text:p>09:05:00</text:p></table:table-cell>",
    ]
    header = row(*(cell(f"c{i}") for i in range(len(values))))
    digits = f'table:number-rows-repeated="{"9" * 5000}"'
    rows = "".join(
        [
            header,
            row(*values),
            row(cell("once")).replace("<table:table-row", f"<table:table-row {digits}"),
            row('<table:table-cell table:number-columns-repeated="9"/>', repeat=MAX_ROWS - 4),
            row(cell("last")),
            row(cell("past Calc's last row")),
        ]
    )
    nameless = '<style:style style:family="table"><style:table-properties table:display="false"/></style:style>'
    path = ods(tmp_path / "calc.ods", ("A", rows, "ta1"), styles=HIDDEN + nameless)
    assert read_ods(path, "corpus.sources").sheets[0].rows == [
        (1, [f"c{i}" for i in range(len(values))]),
        (2, ["Reset it.", "TRUE", "2026-11-28 14:31", "2026-11-28", "14:37", "09:05"]),
        (3, ["once"]),
        (MAX_ROWS, ["last"]),
    ]
