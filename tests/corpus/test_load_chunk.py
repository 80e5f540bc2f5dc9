"""Loading files, folders and URLs; chunking with stable ids and offsets."""

from __future__ import annotations

import functools
import http.server
import threading

import pytest

from harness.corpus import chunk_documents, corpus_hash, load_documents, load_questions
from harness.errors import ConfigError
from tests.conftest import DATA

CORPUS = DATA / "corpus"


def test_folder_loads_md_txt_html_with_classes():
    docs = load_documents([str(CORPUS)], html_classes=["post-title", "post-content"])
    by_id = {d.doc_id: d for d in docs}
    assert set(by_id) == {"bees.md", "compost.md", "tools.txt", "tomatoes.md", "newsletter.html"}
    news = by_id["newsletter.html"].text
    assert "plant swap is on 14 May" in news and "Spring newsletter" in news
    assert "cookies" not in news and "trackVisitor" not in news and "Copyright" not in news
    assert by_id["bees.md"].title == "Beekeeping at the Elm Street garden"


def test_html_without_classes_keeps_the_body_minus_scripts():
    docs = load_documents([str(CORPUS / "newsletter.html")])
    assert "cookies" in docs[0].text and "trackVisitor" not in docs[0].text


def test_missing_and_empty_corpus_are_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_documents([str(tmp_path / "nope")], where="e.toml")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="holds no"):
        load_documents([str(tmp_path / "empty")], where="e.toml")
    (tmp_path / "blank.md").write_text("   \n")
    with pytest.raises(ConfigError, match="corpus is empty"):
        load_documents([str(tmp_path / "blank.md")], where="e.toml")


def test_corpus_hash_changes_with_content(tmp_path):
    docs = load_documents([str(CORPUS)])
    assert corpus_hash(docs) == corpus_hash(list(reversed(docs)))
    (tmp_path / "a.md").write_text("one")
    h1 = corpus_hash(load_documents([str(tmp_path)]))
    (tmp_path / "a.md").write_text("two")
    assert corpus_hash(load_documents([str(tmp_path)])) != h1


@pytest.fixture
def served_page(tmp_path):
    (tmp_path / "post.html").write_text((CORPUS / "newsletter.html").read_text())
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_url_through_webbaseloader_on_loopback(served_page):
    (doc,) = load_documents([f"{served_page}/post.html"], html_classes=["post-content"])
    assert doc.doc_id == f"{served_page}/post.html"
    assert "plant swap is on 14 May" in doc.text
    assert "cookies" not in doc.text


def test_url_without_classes_reads_the_page_content_in_lines(served_page):
    (doc,) = load_documents([f"{served_page}/post.html"])
    assert doc.title == "Garden newsletter, spring"
    assert doc.text.splitlines()[:3] == [
        "We use cookies. Accept all cookies to continue.",
        "# Spring newsletter",
        "The annual plant swap is on 14 May at the front gate, from 10 am to noon.",
    ]
    assert "Home | About" not in doc.text and "Copyright" not in doc.text
    assert "trackVisitor" not in doc.text


def test_unreachable_url_is_a_clear_error(served_page):
    with pytest.raises(ConfigError, match="could not fetch"):
        load_documents([f"{served_page}/missing.html"])


def test_questions_jsonl_and_txt(tmp_path):
    qs = load_questions(DATA / "questions.jsonl")
    assert qs[0].question_id == "hive" and len(qs) == 6
    txt = tmp_path / "q.txt"
    txt.write_text("# comment\nFirst?\n\nSecond?\n")
    assert [(q.question_id, q.text) for q in load_questions(txt)] == [
        ("q1", "First?"),
        ("q2", "Second?"),
    ]


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("", "no questions"),
        ('{"id": "a"}\n', "text"),
        ('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', "appears twice"),
        ("not json\n", r"q.jsonl:1"),
    ],
)
def test_bad_questions_files(tmp_path, content, match):
    p = tmp_path / "q.jsonl"
    p.write_text(content)
    with pytest.raises(ConfigError, match=match):
        load_questions(p)


def test_chunks_have_stable_ids_and_true_offsets():
    docs = load_documents([str(CORPUS)], html_classes=["post-content"])
    a = chunk_documents(docs, chunk_size=120, chunk_overlap=20)
    b = chunk_documents(docs, chunk_size=120, chunk_overlap=20)
    assert a == b
    assert len({c.chunk_id for c in a}) == len(a)
    texts = {d.doc_id: d.text for d in docs}
    for c in a:
        assert len(c.text) <= 120
        assert texts[c.doc_id][c.start_char : c.start_char + len(c.text)] == c.text
        assert c.chunk_id == f"{c.doc_id}#{c.start_char}"


def tiny_pdf(pages: list[str], title: str | None = None) -> bytes:
    """A PDF of text pages in Helvetica (one line per text line), written by hand so the
    tests need no PDF writer; `title` goes in the document information."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objs.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, text in enumerate(pages):
        lines = [
            ln.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            for ln in text.split("\n")
        ]
        ops = [
            "BT",
            "/F1 12 Tf",
            "14 TL",
            "72 720 Td",
            *(f"({ln}) Tj T*" for ln in lines if ln),
            "ET",
        ]
        stream = "\n".join(ops).encode("latin-1")
        objs.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << "
            f"/F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>".encode()
        )
        objs.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    if title:
        objs.append(f"<< /Title ({title}) >>".encode())
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for n, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += f"{n} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{off:010d} 00000 n \n".encode() for off in offsets)
    info = f" /Info {len(objs)} 0 R" if title else ""
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R{info} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def test_a_folder_of_pdfs_is_read_page_by_page(tmp_path):
    folder = tmp_path / "docs"
    (folder / "manuals").mkdir(parents=True)
    (folder / "notes.md").write_text("# Notes\n\nThe shed key is under the pot.\n")
    (folder / "manuals" / "hive.pdf").write_bytes(
        tiny_pdf(
            ["Hive manual\nThe hive is inspected every Saturday.", "Page two: wear a veil."],
            title="Hive manual",
        )
    )
    docs = {d.doc_id: d for d in load_documents([str(folder)])}
    assert set(docs) == {"notes.md", "manuals/hive.pdf"}
    pdf = docs["manuals/hive.pdf"]
    assert "inspected every Saturday" in pdf.text and "wear a veil" in pdf.text
    assert pdf.text.index("Saturday") < pdf.text.index("Page two")  # pages in order
    assert "\n\n" in pdf.text and pdf.title == "Hive manual"
    # chunks of a PDF's text carry true offsets, as any document's do
    for c in chunk_documents([pdf], chunk_size=40, chunk_overlap=5):
        assert pdf.text[c.start_char : c.start_char + len(c.text)] == c.text


def test_a_pdf_without_text_or_a_damaged_one_names_the_file(tmp_path):
    scanned = tmp_path / "scan.pdf"
    scanned.write_bytes(tiny_pdf(["", ""]))
    with pytest.raises(ConfigError, match="holds no text in its 2 pages") as exc:
        load_documents([str(scanned)])
    assert exc.value.field == "corpus.sources" and str(scanned) in str(exc.value)
    damaged = tmp_path / "broken.pdf"
    damaged.write_bytes(b"%PDF-1.4\nthis is not a PDF body\n")
    with pytest.raises(ConfigError, match="cannot read this PDF") as exc:
        load_documents([str(damaged)])
    assert str(damaged) in str(exc.value)


def test_files_a_folder_cannot_be_read_as_are_counted_in_a_warning(tmp_path, warnings):
    folder = tmp_path / "docs"
    (folder / ".git").mkdir(parents=True)
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "guide.md").write_text("# Guide\n\nRead me.\n")
    for name in ("a.doc", "b.doc", "deck.key", "assets/app.js", "assets/logo.png"):
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_bytes(b"PK\x03\x04")
    docs = load_documents([str(folder)])
    assert [d.doc_id for d in docs] == ["guide.md"]
    assert len(warnings) == 1, warnings
    assert "skipped 3 files harness does not read (2 .doc, 1 .key)" in warnings[0]
    assert ".git" not in warnings[0] and ".docx" in warnings[0] and ".js" not in warnings[0]


def test_source_spans_the_corpus_does_not_hold_are_dropped_with_a_warning(tmp_path):
    """Questions written for other documents (other names, a PDF of the same pages, an
    edited file): their source metrics read 0 as if retrieval never found the source.
    Their spans are dropped, the run says so, and the source metrics are left out."""
    import json

    from harness.config import load_experiment
    from harness.corpus import fit_sources
    from harness.pipeline import run_experiment
    from harness.types import span_digest
    from tests.conftest import ScriptedJudge

    docs = load_documents([str(CORPUS)])
    bees = next(d for d in docs if d.doc_id == "bees.md")
    rows = [
        {"id": "hive", "text": "When is the hive inspection?", "source": [
            {"doc_id": "bees.md", "start": 0, "end": 40}]},
        {"id": "renamed", "text": "When is the hive inspection?", "source": [
            {"doc_id": "bees.pdf", "start": 0, "end": 40}]},
        {"id": "edited", "text": "When is the hive inspection?", "source": [
            {"doc_id": "bees.md", "start": 10, "end": len(bees.text) + 5}]},
        {"id": "plain", "text": "Who keeps the tool shed key?"},
        {"id": "fingerprinted", "text": "When is the hive inspection?", "source": [
            {"doc_id": "bees.md", "start": 0, "end": 40, "digest": span_digest(bees.text[:40])}]},
        {"id": "rewritten", "text": "When is the hive inspection?", "source": [
            {"doc_id": "bees.md", "start": 0, "end": 40, "digest": span_digest("other text")}]},
    ]  # fmt: skip
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    questions = load_questions(path)
    kept, warning = fit_sources(questions, docs, str(path))
    assert [bool(q.source) for q in kept] == [True, False, False, False, True, False]
    assert kept[4].source[0].digest == span_digest(bees.text[:40])
    assert warning == (
        f"{path}: 3 of 5 questions' source spans are not in this corpus (no document "
        "'bees.pdf'): their source metrics and failure reasons are left out (were the "
        "questions written from other documents, or before the documents were edited?)"
    )
    assert fit_sources(questions[:1], docs) == ([questions[0]], None)
    # a span whose text changed under it names where (its length still fits)
    assert "'bees.md' reads differently at 0-40" in fit_sources(questions[5:], docs)[1]
    run = run_experiment(
        load_experiment(DATA / "experiment.toml", [f'questions.file="{path}"']),
        results_dir=tmp_path / "r",
        cache_dir=tmp_path / "c",
        judge=ScriptedJudge(),
    )
    assert warning in run.header.warnings
    by_id = {q.question.question_id: q for q in run.questions}
    assert "source_hit@1" in by_id["hive"].metrics
    assert "source_hit@1" not in by_id["renamed"].metrics  # unknown, never a 0


def test_restructuredtext_and_asciidoc_files_are_read_with_their_titles(tmp_path):
    (tmp_path / "install.rst").write_text(
        ".. _install:\n\nInstalling\n==========\n\nRun ``pip install tool``.\n\nUpgrades\n--------\n"
    )
    (tmp_path / "guide.adoc").write_text("= User guide\n\nThe guide.\n")
    (tmp_path / "setext.md").write_text("Leave policy\n============\n\n27 days.\n")
    (tmp_path / "plain.txt").write_text("no title here\n---\n")
    docs = {d.doc_id: d for d in load_documents([str(tmp_path)])}
    assert docs["install.rst"].title == "Installing" and "pip install" in docs["install.rst"].text
    assert docs["guide.adoc"].title == "User guide"
    assert docs["setext.md"].title == "Leave policy"
    assert docs["plain.txt"].title == "plain"  # an underline shorter than its line is a rule


def test_headings_of_markdown_restructuredtext_and_asciidoc_outside_code():
    from harness.corpus import headings

    text = (
        ".. _install:\n\nInstalling\n==========\n\nRun it.\n\nUpgrades\n--------\n\n"
        "# Payroll #\n\n```toml\n# the NAME of the variable\nkey = 1\n```\n\n## C#\n\n"
        "= AsciiDoc title\n\nshort\n---\n\n| a | b |\n|---|---|\n"
    )
    assert [h.text for h in headings(text)] == [
        "Installing",
        "Upgrades",
        "Payroll",
        "C#",
        "AsciiDoc title",
    ]
    assert next(headings(text)).start == text.index("Installing")
