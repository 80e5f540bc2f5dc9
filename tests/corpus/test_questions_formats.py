"""Questions as users have them: JSONL, a JSON array, a spreadsheet's CSV/TSV, text."""

from __future__ import annotations

import pytest

from harness.corpus import load_questions
from harness.errors import ConfigError
from tests.corpus.office import xlsx


def _texts(path):
    return [(q.question_id, q.text) for q in load_questions(path)]


def test_csv_from_a_spreadsheet_with_a_byte_order_mark_and_quoted_cells(tmp_path):
    p = tmp_path / "logs.csv"
    p.write_text(
        'ID,Question,Type,Clicks\n1,"How long is parental leave, in weeks?",simple,12\n'
        '2,"Who approves ""urgent"" expenses?",,3,\n\n',
        encoding="utf-8-sig",
    )
    qs = load_questions(p)
    assert [(q.question_id, q.text) for q in qs] == [
        ("1", "How long is parental leave, in weeks?"),
        ("2", 'Who approves "urgent" expenses?'),
    ]
    assert qs[0].type == "simple" and qs[1].type is None
    assert qs[0].extra == {"clicks": "12"}


def test_an_open_quote_is_refused_not_swallowing_the_rest_of_the_file(tmp_path):
    p = tmp_path / "q.csv"
    p.write_text('id,query\n1,fine\n2,"unbalanced query\n3,third\n4,fourth\n')
    with pytest.raises(ConfigError, match=r"q.csv:3: a quote opened on line 3 is never closed"):
        load_questions(p)
    p.write_text('id,query\n1,fine\n2,"unbalanced query\n3,"third"\n4,fourth\n')
    with pytest.raises(ConfigError, match=r"q.csv:3: .*a quote opened on line 3 and closed early"):
        load_questions(p)
    # a stray quote that closes the open one where a cell may end: the rows between
    p.write_text('id,query\n1,"vpn setup\n2,badge lost\n3,printer jam"\n4,fourth\n')
    with pytest.raises(ConfigError, match=r"q.csv:2: a quoted cell runs on to line 4 .*line 2"):
        load_questions(p)
    # a quote left open over more text than a cell may hold
    p.write_text('id,query\n1,"open\n' + "x" * 200 + "\n" * 1000 + "y\n" * 200_000)
    with pytest.raises(ConfigError, match=r"q.csv:2: a quote opened on line 2 is never closed"):
        load_questions(p)
    tsv = tmp_path / "q.tsv"  # a TSV does not quote: the quote is the query's
    tsv.write_text('id\tquery\n2\t"exact phrase" search\n3\tthird\n')
    assert _texts(tsv) == [("2", '"exact phrase" search'), ("3", "third")]


def test_a_spreadsheet_cell_with_line_breaks_is_one_cell(tmp_path):
    """A spreadsheet writes a cell with line breaks quoted over several lines (an answer
    or a note column, often): the row is one question, and the next line numbers on."""
    p = tmp_path / "q.csv"
    p.write_text(
        'id,question,answer\n1,"What is the\nleave policy?","27 days.\n\nMore after 5 years."\n'
        "2,Who signs expenses?,\n"
    )
    qs = load_questions(p)
    assert [(q.question_id, q.text, q.answer) for q in qs] == [
        ("1", "What is the\nleave policy?", "27 days.\n\nMore after 5 years."),
        ("2", "Who signs expenses?", None),
    ]
    quoted = tmp_path / "quoted.csv"  # a quote inside the cell's text, doubled as CSV does
    quoted.write_text('id,question,answer\n1,Who?,"He said:\n""hi, there\n"\n')
    assert load_questions(quoted)[0].answer == 'He said:\n"hi, there'
    p.write_text(p.read_text() + "3,\n")  # a bad row after it is named by its own line
    with pytest.raises(ConfigError, match=r"q.csv:7: text: expected a non-empty"):
        load_questions(p)


def test_other_suffixes_read_by_their_content(tmp_path):
    log = tmp_path / "real.log"
    log.write_text("vpn setup\nbadge lost\n")
    assert _texts(log) == [("q1", "vpn setup"), ("q2", "badge lost")]
    txt = tmp_path / "q.txt"
    txt.write_text("[urgent] vpn down\n")
    assert _texts(txt) == [("q1", "[urgent] vpn down")]
    huge = tmp_path / "q.jsonl"
    huge.write_text('{"id": ' + "9" * 5000 + ', "text": "x"}\n')
    with pytest.raises(ConfigError, match=r"q.jsonl:1: expected a JSON object"):
        load_questions(huge)


def test_tsv_without_ids_numbers_the_questions(tmp_path):
    p = tmp_path / "q.tsv"
    p.write_text("query\tcount\nvpn setup\t4\nbadge lost\t1\n")
    assert _texts(p) == [("q1", "vpn setup"), ("q2", "badge lost")]


def test_jsonl_names_the_text_question_or_query_and_ids_are_optional(tmp_path):
    p = tmp_path / "q.jsonl"
    p.write_text('{"question": "First?"}\n{"query": "second"}\n{"id": 7, "text": "Third?"}\n')
    assert _texts(p) == [("q1", "First?"), ("q2", "second"), ("7", "Third?")]


def test_a_json_array_of_strings_or_objects(tmp_path):
    p = tmp_path / "q.json"
    p.write_text('[\n  "First?",\n  {"id": "b", "question": "Second?"}\n]\n')
    assert _texts(p) == [("q1", "First?"), ("b", "Second?")]
    lines = tmp_path / "lines.json"  # JSONL named .json reads as JSONL
    lines.write_text('{"id": "a", "text": "A?"}\n')
    assert _texts(lines) == [("a", "A?")]


@pytest.mark.parametrize(
    ("name", "content", "match"),
    [
        ("q.csv", "id,words\n1,hello\n", r"q.csv:1: text: expected a header row .*found id, words"),
        ("q.csv", "text\nfine\n1,2\n", r"q.csv:3: 2 cells where the header names 1 columns"),
        ("q.csv", "id,text\n1,\n", r"q.csv:2: text: expected a non-empty question text"),
        ("q.csv", "id,text\na,x\na,y\n", "question id 'a' appears twice"),
        ("q.csv", "text\n\n", "holds no questions"),
        ("q.json", '["ok", 3]', r"q.json: item 2: expected an object or a string"),
        ("q.json", '[{"text": "a"},\n {"text": }]', r"q.json:2: not valid JSON"),
        ("q.jsonl", '{"id": "a"}\n', r"q.jsonl:1: text: expected a non-empty question text"),
        ("q.jsonl", '{"id": true, "text": "x"}\n', r"q.jsonl:1: id: expected a non-empty"),
    ],
)
def test_bad_files_name_the_file_line_and_field(tmp_path, name, content, match):
    p = tmp_path / name
    p.write_text(content)
    with pytest.raises(ConfigError, match=match):
        load_questions(p)


def test_a_byte_order_mark_does_not_break_the_first_line(tmp_path):
    p = tmp_path / "q.jsonl"
    p.write_text('{"id": "a", "text": "A?"}\n', encoding="utf-8-sig")
    assert _texts(p) == [("a", "A?")]
    t = tmp_path / "q.txt"
    t.write_text("First?\n", encoding="utf-8-sig")
    assert _texts(t) == [("q1", "First?")]


def test_excel_unicode_text_is_utf16_with_its_byte_order_mark(tmp_path):
    p = tmp_path / "q.tsv"
    p.write_bytes("query\tclicks\r\ncafé opening hours\t4\r\n".encode("utf-16"))
    assert _texts(p) == [("q1", "café opening hours")]


def test_a_ragas_test_set_and_a_deepeval_dataset_read_as_they_are_exported(tmp_path):
    ragas = tmp_path / "testset.csv"
    ragas.write_text(
        "user_input,reference_contexts,reference,synthesizer_name\n"
        '"How many days of leave?","[""Full-time employees receive 27 days""]",27 days,'
        "single_hop_specifc_query_synthesizer\n",
        encoding="utf-8",
    )
    (q,) = load_questions(ragas)
    assert (q.question_id, q.text) == ("q1", "How many days of leave?")
    assert q.extra["reference"] == "27 days"
    deepeval = tmp_path / "goldens.json"
    deepeval.write_text('[{"input": "Who approves expenses?", "expected_output": "Finance"}]')
    (g,) = load_questions(deepeval)
    assert g.text == "Who approves expenses?" and g.extra == {"expected_output": "Finance"}


def test_an_excel_workbook_reads_as_its_csv_export(tmp_path):
    """The first visible sheet whose header names the questions' column (a "Read me"
    sheet before it, a hidden one, are passed over); shared, rich and inline strings, a
    formula's result, whole numbers as written, an empty cell keeping its column."""
    shared = [
        "ID",
        "Question",
        "Clicks",
        "<r><t>How long is </t></r><r><rPr><b/></rPr><t>parental leave</t></r>"
        "<rPh><t>ふりがな</t></rPh><r><t>?</t></r>",
        "Collected from the helpdesk",
        "question",
    ]
    rows = (
        '<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c>'
        '<c r="C1" t="s"><v>2</v></c></row>'
        '<row r="2"><c r="A2"><v>7</v></c><c r="B2" t="s"><v>3</v></c><c r="C2"><v>12.5</v></c></row>'
        '<row r="3"><c r="A3" t="str"><f>"q"&amp;8</f><v>q8</v></c>'
        '<c r="B3" t="inlineStr"><is><t>Who approves expenses?</t></is></c></row>'
        '<row r="5"><c r="B5" t="inlineStr"><is><t>What is the wifi password?</t></is></c>'
        '<c r="C5" t="b"><v>1</v></c></row>'
        '<row r="6"><c r="B6" t="inlineStr"><is><t>Who signs?_x000D_\nAnd _x005F_x0041_?</t>'
        "</is></c></row>"
    )
    path = xlsx(
        tmp_path / "helpdesk.xlsx",
        {
            "Read me": '<row r="1"><c r="A1" t="s"><v>4</v></c></row>',
            "Old": '<row r="1"><c r="A1" t="s"><v>5</v></c></row>',
            "Questions": rows,
        },
        shared,
        hidden=("Old",),
    )
    qs = load_questions(path)
    assert [(q.question_id, q.text, q.extra) for q in qs] == [
        ("7", "How long is parental leave?", {"clicks": "12.5"}),
        ("q8", "Who approves expenses?", {}),
        ("q3", "What is the wifi password?", {"clicks": "TRUE"}),
        ("q4", "Who signs?\r\nAnd _x0041_?", {}),  # Excel's escapes undone
    ]


def test_a_workbook_that_names_no_question_column_or_is_no_workbook_says_so(tmp_path):
    path = xlsx(
        tmp_path / "q.xlsx",
        {
            "Sheet1": '<row r="1"><c r="A1" t="inlineStr"><is><t>Prompt</t></is></c></row>',
            "Sheet2": "",
        },
    )
    with pytest.raises(ConfigError) as e:
        load_questions(path)
    assert str(path) in str(e.value)
    assert "sheet 'Sheet1' starts with Prompt (and 1 more sheets, none naming one)" in str(e.value)
    bad_row = xlsx(
        tmp_path / "r.xlsx",
        {
            "Q": '<row r="1"><c r="A1" t="inlineStr"><is><t>question</t></is></c></row>'
            '<row r="4"><c r="A4" t="inlineStr"><is><t>Hi?</t></is></c>'
            '<c r="C4" t="inlineStr"><is><t>stray</t></is></c></row>'
        },
    )
    with pytest.raises(ConfigError, match=r"r\.xlsx: sheet 'Q', row 4: 3 cells where the header"):
        load_questions(bad_row)
    empty = tmp_path / "new.xlsx"
    empty.write_bytes(b"")
    with pytest.raises(ConfigError, match="holds no questions"):
        load_questions(empty)
    legacy = tmp_path / "old.xlsx"
    legacy.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 64)
    with pytest.raises(ConfigError, match=r"not a \.xlsx \(a legacy \.xls, or password-protected"):
        load_questions(legacy)
