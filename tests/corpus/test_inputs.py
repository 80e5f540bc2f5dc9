"""Bad inputs a run reads (corpus files and URLs, questions, qrels): each is refused with
one ConfigError naming the file and the field, never a traceback or a silent garbage run."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.analysis import read_qrels
from harness.corpus import load_documents, load_questions, read_text_file
from harness.errors import ConfigError


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A URL on 127.0.0.1 whose server accepts connections and never answers."""
    with never_answering_server() as url:
        yield url


@contextlib.contextmanager
def never_answering_server() -> Iterator[str]:
    """A URL on 127.0.0.1 whose server (a thread, stopped on exit) accepts connections and
    never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.1)
    stop = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)  # read nothing, answer nothing

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/page.html"
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        listener.close()


def test_a_url_that_never_answers_times_out_naming_the_url(silent_server):
    t0 = time.monotonic()
    with pytest.raises(ConfigError) as err:
        load_documents([silent_server], timeout_s=0.5, where="e.toml")
    assert time.monotonic() - t0 < 10
    assert err.value.where == silent_server
    assert err.value.field == "corpus.timeout_s"
    assert "no answer within 0.5 s" in str(err.value)


def test_a_text_file_of_nul_bytes_is_refused_as_binary(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_bytes(b"\x00\x01\x02\x03" * 200 + b"some words")
    with pytest.raises(ConfigError) as err:
        load_documents([str(bad)])
    assert err.value.where == str(bad) and err.value.field == "corpus.sources"
    assert "NUL bytes" in str(err.value)


def test_a_text_file_of_control_characters_is_refused_as_binary(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Fine\nA page of text.\n")
    bad = folder / "noise.md"
    bad.write_bytes(bytes(range(1, 32)) * 50 + b"a few words")
    with pytest.raises(ConfigError) as err:
        load_documents([str(folder)])
    assert err.value.where == str(bad) and err.value.field == "corpus.sources"
    assert "control characters" in str(err.value)


def test_a_few_control_characters_in_real_text_are_fine(tmp_path):
    page = tmp_path / "page.txt"
    page.write_text("Chapter one\f\nText with a \x1b[1mbold\x1b[0m word and a tab\there.\r\n")
    (doc,) = load_documents([str(page)])
    assert "bold" in doc.text and "\r" not in doc.text


def test_non_utf8_corpus_files_name_the_file(tmp_path):
    latin = tmp_path / "latin.md"
    latin.write_bytes("menu\ncaf\u00e9 cr\u00e8me".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"UTF-8 text file \(line 2, byte 8 .*iconv") as err:
        load_documents([str(latin)])
    assert err.value.where == str(latin)
    beir = tmp_path / "corpus.jsonl"
    beir.write_bytes(b'{"_id": "d1", "text": "caf\xe9"}\n')
    with pytest.raises(ConfigError, match="UTF-8") as err:
        load_documents([str(beir)])
    assert err.value.where == str(beir)


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("q.jsonl", '{"id": "q1", "text": "caf\u00e9?"}\n'.encode("latin-1"), "UTF-8"),
        ("q.txt", "Where is the caf\u00e9?\n".encode("latin-1"), "UTF-8"),
        ("q.txt", b"What\x00is\x00this?\n", "NUL bytes"),
    ],
)
def test_non_utf8_or_binary_questions_name_the_file(tmp_path, name, content, expected):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ConfigError, match=expected) as err:
        load_questions(path)
    assert err.value.where == str(path) and err.value.field == "questions.file"


def test_read_text_file_reads_newlines_as_read_text_does(tmp_path):
    path = tmp_path / "t.md"
    path.write_bytes(b"a\r\nb\rc\n\xc3\xa9")
    assert read_text_file(path, "x") == path.read_text(encoding="utf-8") == "a\nb\nc\n\u00e9"


# ---------------------------------------------------------------- qrels


def _qrels(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "qrels.tsv"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def test_a_first_row_with_grade_1_0_is_a_label_not_a_header(tmp_path):
    qrels = read_qrels(_qrels(tmp_path, "q1\td1\t1.0\nq1\td2\t2\nq2\td3\t0.0\n"))
    assert qrels == {"q1": {"d1": 1, "d2": 2}, "q2": {"d3": 0}}


def test_a_header_row_is_still_skipped(tmp_path):
    path = _qrels(tmp_path, "# labels\nquery-id\tcorpus-id\tscore\nq1\td1\t1\n")
    assert read_qrels(path) == {"q1": {"d1": 1}}


@pytest.mark.parametrize("grade", ["0.5", "nan", "inf", "yes"])
def test_a_grade_that_is_not_an_integer_names_the_line(tmp_path, grade):
    path = _qrels(tmp_path, f"query_id doc_id relevance\nq1 d1 1\nq1 d2 {grade}\n")
    with pytest.raises(ConfigError, match=f"expected an integer grade, got '{grade}'") as err:
        read_qrels(path)
    assert err.value.where == f"{path}:3" and err.value.field == "relevance"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (bytes(range(256)) * 4, "NUL bytes"),
        ("q1\td1\t1\nq\u00e9\td2\t1\n".encode("latin-1"), "UTF-8"),
        (b"\x01\x02\x03\x04\x05 \x06\x07\x08 1\n" * 20, "control characters"),
    ],
)
def test_binary_or_non_utf8_qrels_name_the_file(tmp_path, content, expected):
    path = _qrels(tmp_path, content)
    with pytest.raises(ConfigError, match=expected) as err:
        read_qrels(path)
    assert err.value.where == str(path) and err.value.field == "qrels"
