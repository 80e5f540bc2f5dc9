"""Tables in a corpus: CSV and Excel files read as documents, one per record."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config import load_experiment
from harness.corpus import chunk_documents, load_documents, load_questions
from harness.errors import ConfigError
from harness.pipeline import load_inputs
from tests.corpus.office import xlsx

FAQ = (
    "Question,Answer,Product\n"
    'How do I reset my password?,"Open Settings > Account,\n\nthen choose Reset.",Web app\n'
    "\n"
    "Can I pay by invoice?,Yes: on the Team plan and above.,\n"
    ",Ask support for anything else.,All,extra cell\n"
)


def cell(ref: str, text: str) -> str:
    return f'<c r="{ref}" t="inlineStr"><is><t>{text}</t></is></c>'


def test_a_csv_row_is_a_document_its_cells_named_by_the_header(tmp_path):
    """A document a row, as LangChain's CSVLoader makes them, its id the file's with the
    line the row starts on; a line per non-empty cell named by its column; a cell's
    blank lines closed up; a cell past the header and an empty header cell named by
    their column's number; empty rows skipped."""
    (tmp_path / "faq.csv").write_text(FAQ)
    docs = load_documents(tmp_path)
    assert [(d.doc_id, d.title, d.text) for d in docs] == [
        (
            "faq.csv:2",
            "faq",
            "Question: How do I reset my password?\n"
            "Answer: Open Settings > Account,\nthen choose Reset.\n"
            "Product: Web app",
        ),
        (
            "faq.csv:6",
            "faq",
            "Question: Can I pay by invoice?\nAnswer: Yes: on the Team plan and above.",
        ),
        (
            "faq.csv:7",
            "faq",
            "Answer: Ask support for anything else.\nProduct: All\ncolumn 4: extra cell",
        ),
    ]
    assert [d.source for d in docs] == [f"{tmp_path / 'faq.csv'}:{n}" for n in (2, 6, 7)]
    # A record longer than the chunk size is cut as any document is.
    chunks = chunk_documents(docs, chunk_size=60, chunk_overlap=0)
    assert [c.chunk_id for c in chunks][:3] == ["faq.csv:2#0", "faq.csv:2#38", "faq.csv:2#90"]


def test_a_title_row_a_semicolon_csv_and_no_tsv(tmp_path, warnings):
    """A row of one cell above the header is the table's title; Excel's CSV where the
    decimal mark is a comma separates cells with semicolons. A TSV is what labels and run
    files are written as: skipped with the warning for files harness does not read."""
    (tmp_path / "preise.csv").write_text(
        'Preisliste 2026;;\nTarif;Preis;Hinweis\nTeam;"12,50 €";pro Nutzer\nStart;0 €;\n'
    )
    (tmp_path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tpreise.csv\t1\n")
    docs = load_documents(tmp_path)
    assert any("skipped 1 file harness does not read (1 .tsv)" in w for w in warnings)
    assert [(d.doc_id, d.title, d.text) for d in docs] == [
        ("preise.csv:3", "Preisliste 2026", "Tarif: Team\nPreis: 12,50 €\nHinweis: pro Nutzer"),
        ("preise.csv:4", "Preisliste 2026", "Tarif: Start\nPreis: 0 €"),
    ]


def test_a_workbook_reads_each_visible_sheet_s_rows(tmp_path):
    """Each row of each visible sheet a document, its id the sheet and Excel's row
    number, its title the workbook's with the sheet's name."""
    path = xlsx(
        tmp_path / "kb.xlsx",
        {
            "Billing": f'<row r="1">{cell("A1", "Q")}{cell("B1", "A")}</row>'
            f'<row r="3">{cell("A3", "Refunds?")}{cell("B3", "Within 30 days.")}</row>',
            "Old": f'<row r="1">{cell("A1", "Q")}</row><row r="2">{cell("A2", "gone")}</row>',
            "Accounts": f'<row r="1">{cell("A1", "Q")}{cell("B1", "A")}</row>'
            f'<row r="2">{cell("A2", "SSO?")}<c r="B2" t="b"><v>1</v></c></row>',
        },
        hidden=("Old",),
        title="Support knowledge base",
    )
    assert [(d.doc_id, d.title, d.text) for d in load_documents(path)] == [
        ("kb.xlsx:Billing:3", "Support knowledge base: Billing", "Q: Refunds?\nA: Within 30 days."),
        ("kb.xlsx:Accounts:2", "Support knowledge base: Accounts", "Q: SSO?\nA: TRUE"),
    ]
    one = xlsx(
        tmp_path / "one.xlsx",
        {
            "Sheet1": f'<row r="1">{cell("A1", "Team FAQ")}</row>'
            f'<row r="2">{cell("A2", "Q")}{cell("B2", "A")}</row>'
            f'<row r="3">{cell("A3", "Who?")}{cell("B3", "Ops")}</row>'
        },
    )
    (doc,) = load_documents(one)
    assert (doc.doc_id, doc.title, doc.text) == ("one.xlsx:Sheet1:3", "Team FAQ", "Q: Who?\nA: Ops")


def test_a_header_alone_is_a_document_without_text_and_a_broken_table_is_skipped(
    tmp_path, warnings
):
    """A folder's table harness cannot read (a data file with a stray quote) is skipped
    with a warning naming it and the line, as a folder's tables were before harness read
    them; named as a source itself, it is refused."""
    (tmp_path / "a.md").write_text("# A\n\nText.\n")
    (tmp_path / "empty.csv").write_text("Question,Answer\n")
    (tmp_path / "title-only.csv").write_text("Preisliste;;\nTarif;Preis;Hinweis\n")
    (tmp_path / "bad.csv").write_text('Q,A\nfine,row\n"open,quote\nmore,rows\n')
    assert [d.doc_id for d in load_documents(tmp_path)] == ["a.md"]
    assert "skipped bad.csv: line 3: a quote opened on line 3 is never closed" in warnings
    assert any(
        "left out 2 documents without text: empty.csv, title-only.csv" in w for w in warnings
    )
    assert not any("does not read" in w for w in warnings)
    with pytest.raises(ConfigError, match=r"bad\.csv:3: a quote opened on line 3 is never"):
        load_documents(tmp_path / "bad.csv")


def test_excel_s_windows_1252_csv_is_read_with_a_warning(tmp_path, warnings):
    """Excel's "CSV (Comma delimited)" on a Western Windows writes Windows-1252 (and, in
    German, semicolons, with commas unquoted inside cells)."""
    path = tmp_path / "preise.csv"
    path.write_bytes("Preis (netto, €);Hinweis\n12,50 €;für Teams\n0 €;\n".encode("cp1252"))
    assert [d.text for d in load_documents(path)] == [
        "Preis (netto, €): 12,50 €\nHinweis: für Teams",
        "Preis (netto, €): 0 €",
    ]
    assert warnings == [
        f'{path}: not UTF-8, read as Windows-1252 (Excel\'s "CSV (Comma delimited)"); if its '
        'accents read wrong, save it as "CSV UTF-8"'
    ]


def test_a_quote_left_open_under_a_title_row_is_still_refused(tmp_path):
    path = tmp_path / "faq.csv"
    path.write_text('Team FAQ\nQ,A\n"Open quote,x\nWho?,Ops\nWhy?,Because",yes\n')
    with pytest.raises(ConfigError, match=r"faq\.csv:3: a quoted cell runs on to line 5"):
        load_documents(path)


def test_an_html_cell_keeps_every_element_and_a_cell_that_mentions_a_tag_is_text(tmp_path):
    (tmp_path / "kb.csv").write_text(
        "q,a\n"
        'Refunds?,"<p>Within 30 days.</p><aside>Note: not for gift cards.</aside>'
        '<footer>Updated 2026</footer>"\n'
        "Bold?,Wrap it in <b>word</b> or use <br>\n"
        "Blocks?,Tags like </div> close a block\n"
    )
    assert [d.text for d in load_documents(tmp_path)] == [
        "q: Refunds?\na: Within 30 days.\nNote: not for gift cards.\nUpdated 2026",
        "q: Bold?\na: Wrap it in <b>word</b> or use <br>",
        "q: Blocks?\na: Tags like </div> close a block",
    ]


def test_the_questions_file_and_labels_beside_the_documents_are_left_out(tmp_path, warnings):
    """A questions table (or labels) kept in the corpus folder is not read as a document:
    every question would retrieve itself."""
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "faq.csv").write_text(FAQ)
    (folder / "questions.csv").write_text("question\nHow do I reset my password?\n")
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tfaq.csv\t1\n")
    experiment = tmp_path / "e.toml"
    experiment.write_text(
        '[corpus]\nsources = ["kb"]\n[questions]\nfile = "kb/questions.csv"\n'
        'qrels = "kb/qrels.tsv"\n'
    )
    inputs = load_inputs(load_experiment(experiment))
    assert [d.doc_id for d in inputs.docs] == ["faq.csv:2", "faq.csv:6", "faq.csv:7"]
    assert [q.text for q in inputs.questions] == ["How do I reset my password?"]
    assert warnings == [
        f"corpus.sources: left out {folder / 'questions.csv'}, the file questions.file names: "
        "not a document (every question would find itself in it)"
    ]  # and the labels (.tsv, no document harness reads) are not warned of as unread
    # Named as a source itself, it is left out too, and the corpus is then empty; a
    # folder of nothing else says so.
    with pytest.raises(ConfigError, match="the corpus is empty"):
        load_documents(folder / "questions.csv", leave_out={folder / "questions.csv": "x"})
    (folder / "faq.csv").unlink()
    with pytest.raises(
        ConfigError, match=r"holds no document, only the experiment's questions.file \(questi"
    ):
        load_inputs(load_experiment(experiment))


def test_a_semicolon_csv_of_questions_and_errors_in_the_file_s_order(tmp_path: Path):
    path = tmp_path / "fragen.csv"
    path.write_text("id;frage;question\n1;x;Wie beantrage ich Urlaub?\n")
    (q,) = load_questions(path)
    assert (q.question_id, q.text, q.extra) == ("1", "Wie beantrage ich Urlaub?", {"frage": "x"})
    # A bad header is reported before a quote left open further down.
    path.write_text('title,answer\nfine,row\n"open,quote\n')
    with pytest.raises(ConfigError, match=r"fragen\.csv:1: text: expected a header row"):
        load_questions(path)


def test_a_help_desk_export_s_html_bodies_read_as_their_text(tmp_path):
    """An article's body as a help desk or a CMS exports it (HTML in a cell) reads as
    its text; a cell that merely holds a `<` is left as written."""
    (tmp_path / "articles.csv").write_text(
        "id,title,body\n"
        '7,Refunds,"<h2>Refunds</h2><p>Within <strong>30 days</strong> of purchase.</p>'
        '<ul><li>Card</li><li>Invoice</li></ul>"\n'
        "8,Limits,Uploads must be < 2 GB and <b> is kept\n"
    )
    assert [d.text for d in load_documents(tmp_path)] == [
        "id: 7\ntitle: Refunds\nbody: ## Refunds\nWithin 30 days of purchase.\nCard\nInvoice",
        "id: 8\ntitle: Limits\nbody: Uploads must be < 2 GB and <b> is kept",
    ]


def test_a_long_cell_and_a_semicolon_inside_a_quoted_header_cell(tmp_path):
    """A cell past csv's default limit of 131,072 characters (a long article's body) is
    read; semicolons inside a quoted header cell do not make a comma CSV a semicolon one."""
    body = "word " * 40_000
    (tmp_path / "long.csv").write_text(f'"title; or name",body\nGuide,"{body}"\n')
    (doc,) = load_documents(tmp_path)
    assert doc.text == f"title; or name: Guide\nbody: {body.strip()}"


STYLES = (
    '<numFmts count="3"><numFmt numFmtId="164" formatCode="dd/mm/yyyy"/>'
    '<numFmt numFmtId="165" formatCode="[$-409]h:mm AM/PM"/>'
    '<numFmt numFmtId="166" formatCode="&quot;€&quot;#,##0.00;[Red]-&quot;€&quot;#,##0.00"/>'
    "</numFmts>"
    '<cellXfs count="7"><xf numFmtId="0"/><xf numFmtId="164"/><xf numFmtId="165"/>'
    '<xf numFmtId="9"/><xf numFmtId="10"/><xf numFmtId="22"/><xf numFmtId="166"/></cellXfs>'
)


@pytest.mark.parametrize(
    ("style", "value", "date1904", "shown"),
    [
        (0, "46354", False, "46354"),  # General: as stored
        (1, "46354", False, "2026-11-28"),  # a custom date format
        (1, "44892", True, "2026-11-28"),  # the 1904 date system
        (1, "1", False, "1900-01-01"),  # Excel's first day
        (1, "59", False, "1900-02-28"),  # before the 1900-02-29 Excel counts
        (1, "61", False, "1900-03-01"),
        (2, "0.6041666666666666", False, "14:30"),  # a time alone, the minute rounded
        (3, "0.125", False, "13%"),  # rounded half away from zero, as Excel shows it
        (4, "0.125", False, "12.50%"),
        (5, "46354.75", False, "2026-11-28 18:00"),  # built-in date and time
        (6, "12.5", False, "12.5"),  # currency: as stored
        (1, "-3", False, "-3"),  # no date before Excel's first day
    ],
)
def test_a_workbook_shows_dates_times_and_percentages_as_formatted(
    tmp_path, style, value, date1904, shown
):
    path = xlsx(
        tmp_path / "kb.xlsx",
        {
            "S": f'<row r="1">{cell("A1", "Plan")}{cell("B1", "Value")}</row>'
            f'<row r="2">{cell("A2", "Team")}<c r="B2" s="{style}"><v>{value}</v></c></row>'
        },
        styles=STYLES,
        date1904=date1904,
    )
    (doc,) = load_documents(path)
    assert doc.text == f"Plan: Team\nValue: {shown}"


def test_an_id_column_names_the_records_when_its_values_are_unique(tmp_path):
    """A help desk's article id keeps a record's document id when rows are added above
    it; an id repeated on each of an article's sections does not name a record."""
    (tmp_path / "articles.csv").write_text("Article ID,Title\nKB 7,Refunds\nKB-8,Limits\n")
    (tmp_path / "sections.csv").write_text("article_id,Section\n7,Intro\n7,Details\n")
    assert [(d.doc_id, d.source.rsplit("/", 1)[1]) for d in load_documents(tmp_path)] == [
        ("articles.csv:KB_7", "articles.csv:2"),
        ("articles.csv:KB-8", "articles.csv:3"),
        ("sections.csv:2", "sections.csv:2"),
        ("sections.csv:3", "sections.csv:3"),
    ]


def test_a_sheet_name_with_spaces_makes_an_id_a_labels_file_can_hold(tmp_path):
    from harness.analysis.validate import read_qrels

    path = xlsx(
        tmp_path / "kb.xlsx",
        {
            "Billing FAQ 2026": f'<row r="1">{cell("A1", "Q")}</row><row r="2">{cell("A2", "Refunds?")}</row>'
        },
    )
    (doc,) = load_documents(path)
    assert doc.doc_id == "kb.xlsx:Billing_FAQ_2026:2"
    assert doc.source == f"{path}:Billing FAQ 2026:2"
    labels = tmp_path / "labels.tsv"
    labels.write_text(f"query_id\tdoc_id\trelevance\nq1\t{doc.doc_id}#0\t2\nq2\tmy notes.md\t1\n")
    assert read_qrels(labels) == {"q1": {f"{doc.doc_id}#0": 2}, "q2": {"my notes.md": 1}}


def test_a_one_column_csv_keeps_its_semicolons(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("question\nWhich plan; team or start?\nWho signs; and when?\nWhy?\n")
    assert [q.text for q in load_questions(path)] == [
        "Which plan; team or start?",
        "Who signs; and when?",
        "Why?",
    ]
