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
