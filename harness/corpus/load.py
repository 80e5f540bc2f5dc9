"""Load documents from files, folders and URLs into `Document` records.

Local: .md, .txt, .html and .pdf files, or folders searched recursively for them (a
folder's other files are skipped, and the run says which kinds). A PDF's text is what
pypdf extracts, page after page; a PDF without text (scanned pages) is refused. An HTML
file gives its main content in lines, without the site's menus, header and footer (see
`harness.corpus.html`). URLs go through LangChain's WebBaseLoader, whose text is the
page's strings as written, as the reference-free guide read them. For HTML, both ways,
`html_classes` keeps only the elements with those CSS classes (a blog's post-title /
post-header / post-content, say).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from loguru import logger

from harness.errors import ConfigError
from harness.types import Document, Question, SourceSpan

SUFFIXES = (".md", ".markdown", ".txt", ".html", ".htm", ".pdf")
"""Files read from folders. A `.jsonl` source is a BEIR corpus (one document a line)."""
USER_AGENT = "harness-retrieval-tuning/0.1 (+https://github.com/; offline-first)"
CONTROL_SHARE = 0.25
"""A text with more than this share of control characters (other than tab, newline,
carriage return, form feed) is refused as binary."""
_CONTROLS = re.compile("[\x00-\x08\x0e-\x1f\x7f]")


def read_text_file(path: Path, field: str) -> str:
    """A UTF-8 text file's content, newlines made `\\n` (as `Path.read_text` reads them).

    Raises ConfigError naming the file and `field` for bytes that are not UTF-8, a NUL
    byte, or mostly control characters: a binary file given where text was expected.
    """
    raw = path.read_bytes()
    if b"\0" in raw:
        raise ConfigError(str(path), field, "expected a text file, found NUL bytes (binary?)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            str(path), field, f"expected a UTF-8 text file (byte {exc.start} is not UTF-8)"
        ) from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    controls = len(_CONTROLS.findall(text))
    if controls > CONTROL_SHARE * len(text):
        raise ConfigError(
            str(path), field, f"expected a text file, found {controls} control characters"
        )
    return text


def _html_text(html: str, html_classes: Sequence[str], where: str) -> tuple[str, str]:
    """`html_text` of a page, refused in one line naming `where` when `html_classes`
    match no element with text."""
    from harness.corpus.html import html_text  # bs4 only when a page is read

    text, title = html_text(html, html_classes)
    if html_classes and not text:
        raise ConfigError(
            where, "corpus.html_classes", f"no element with classes {list(html_classes)} found"
        )
    return text, title


def _pdf_text(path: Path) -> tuple[str, str]:
    """The text pypdf extracts from a PDF, its pages joined by a blank line, and its
    title (the document information's, else ""). Raises ConfigError naming the file for
    a PDF it cannot read (damaged, encrypted) or one without text (scanned pages)."""
    import pypdf
    from pypdf.errors import PdfReadError

    try:
        reader = pypdf.PdfReader(path)
        if reader.is_encrypted:
            raise ConfigError(str(path), "corpus.sources", "the PDF is encrypted; decrypt it first")
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        meta = reader.metadata
        title = str((meta.title if meta is not None else None) or "").strip()
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise ConfigError(
            str(path), "corpus.sources", f"cannot read this PDF ({type(exc).__name__}: {exc})"
        ) from None
    text = "\n\n".join(p for p in pages if p)
    if not text:
        raise ConfigError(
            str(path),
            "corpus.sources",
            f"the PDF holds no text in its {len(pages)} pages (scanned images?): run OCR on it "
            "first, or leave it out",
        )
    return text, title


def _load_file(path: Path, doc_id: str, html_classes: Sequence[str]) -> Document:
    if path.suffix.lower() == ".pdf":
        text, title = _pdf_text(path)
        return Document(doc_id=doc_id, text=text, source=str(path), title=title or path.stem)
    raw = read_text_file(path, "corpus.sources")
    if path.suffix.lower() in (".html", ".htm"):
        text, title = _html_text(raw, html_classes, str(path))
    else:
        text, title = raw, ""
        for line in raw.splitlines():
            if line.startswith("# "):
                title = line[2:].strip()
                break
    return Document(doc_id=doc_id, text=text, source=str(path), title=title or path.stem)


def _load_url(url: str, html_classes: Sequence[str], timeout_s: float) -> Document:
    import bs4
    import requests
    from langchain_community.document_loaders import WebBaseLoader

    bs_kwargs = {"parse_only": bs4.SoupStrainer(class_=tuple(html_classes))} if html_classes else {}
    loader = WebBaseLoader(
        web_paths=(url,),
        bs_kwargs=bs_kwargs,
        default_parser="html.parser",
        raise_for_status=True,
        header_template={"User-Agent": os.environ.get("USER_AGENT", USER_AGENT)},
        # Bounds the connect and each wait for more bytes: a server that accepts and never
        # answers would otherwise hold the run forever.
        requests_kwargs={"timeout": timeout_s},
    )
    try:
        docs = loader.load()
    except requests.Timeout:
        raise ConfigError(
            url, "corpus.timeout_s", f"no answer within {timeout_s:g} s (raise corpus.timeout_s?)"
        ) from None
    except Exception as exc:  # requests raises many types; the user needs the URL and cause
        raise ConfigError(url, "corpus.sources", f"could not fetch the page ({exc})") from None
    text = "\n".join(line.strip() for d in docs for line in d.page_content.splitlines())
    text = "\n".join(line for line in text.splitlines() if line)
    if not text:
        raise ConfigError(url, "corpus.sources", "the page has no text (check html_classes)")
    title = str(docs[0].metadata.get("title", "")) if docs else ""
    return Document(doc_id=url, text=text, source=url, title=title or url)


def load_documents(
    sources: Sequence[str],
    *,
    html_classes: Sequence[str] = (),
    where: str = "",
    timeout_s: float = 30.0,
) -> list[Document]:
    """Load every source; doc ids are paths relative to a given folder (or the file name),
    or the URL, so they stay stable across runs and machines.

    Raises ConfigError for a missing path, an empty folder, an empty corpus, a binary
    file, or a URL that gives no answer within `timeout_s` seconds.
    """
    docs: list[Document] = []
    for source in sources:
        if source.startswith(("http://", "https://")):
            docs.append(_load_url(source, html_classes, timeout_s))
            continue
        path = Path(source)
        if path.is_dir():
            found = sorted(path.rglob("*"))
            files = [p for p in found if p.suffix.lower() in SUFFIXES]
            _warn_skipped(path, found, files)
            if not files:
                raise ConfigError(
                    where or str(path),
                    "corpus.sources",
                    f"folder {path} holds no {', '.join(SUFFIXES)} files",
                )
            docs.extend(_load_file(f, f.relative_to(path).as_posix(), html_classes) for f in files)
        elif path.is_file() and path.suffix.lower() == ".jsonl":
            docs.extend(load_beir_corpus(path))
        elif path.is_file():
            docs.append(_load_file(path, path.name, html_classes))
        else:
            raise ConfigError(where or str(path), "corpus.sources", f"{path} does not exist")
    docs = [d for d in docs if d.text.strip()]
    if not docs:
        raise ConfigError(where, "corpus.sources", "the corpus is empty (no text in any source)")
    ids = [d.doc_id for d in docs]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ConfigError(where, "corpus.sources", f"two documents share the id {dup!r}")
    logger.info("loaded {} documents ({} chars)", len(docs), sum(len(d.text) for d in docs))
    return docs


def _warn_skipped(folder: Path, found: Sequence[Path], read: Sequence[Path]) -> None:
    """Warn, by kind, about the files `found` under `folder` that are not `read`: a
    corpus of Word files beside two notes would otherwise be indexed as the two notes.
    Hidden files and folders (.git, .DS_Store) are not counted."""
    taken = set(read)
    kinds: dict[str, int] = {}
    for p in found:
        rel = p.relative_to(folder).parts
        if p in taken or any(part.startswith(".") for part in rel) or not p.is_file():
            continue
        kind = p.suffix.lower() or "(no suffix)"
        kinds[kind] = kinds.get(kind, 0) + 1
    if kinds:
        listed = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
        logger.warning(
            "{}: skipped {} files harness does not read ({}); it reads {}: convert the others "
            "to one of them",
            folder,
            sum(kinds.values()),
            listed,
            " ".join(SUFFIXES),
        )


def load_beir_corpus(path: Path) -> list[Document]:
    """A BEIR corpus.jsonl: {"_id" or "id", "title", "text"} per line. The title, when
    there is one, opens the text (as BEIR's retrievers see it)."""
    docs = []
    for n, line in enumerate(read_text_file(path, "corpus.sources").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, RecursionError):  # RecursionError: nested too deep
            raise ConfigError(f"{path}:{n}", "", "expected a JSON object per line") from None
        did = obj.get("_id", obj.get("id")) if isinstance(obj, dict) else None
        text = obj.get("text") if isinstance(obj, dict) else None
        if did is None or str(did) == "":
            raise ConfigError(f"{path}:{n}", "_id", "expected a document id")
        if not isinstance(text, str):
            raise ConfigError(f"{path}:{n}", "text", "expected the document text")
        title = str(obj.get("title") or "")
        docs.append(
            Document(
                doc_id=str(did),
                text=f"{title}\n{text}" if title else text,
                source=f"{path}:{n}",
                title=title,
            )
        )
    return docs


def corpus_hash(docs: Sequence[Document]) -> str:
    """Content hash of a corpus: ids and texts, order-independent."""
    h = hashlib.sha256()
    for d in sorted(docs, key=lambda d: d.doc_id):
        h.update(d.doc_id.encode())
        h.update(b"\0")
        h.update(hashlib.sha256(d.text.encode()).digest())
    return h.hexdigest()


QUESTION_FIELDS = ("id", "_id", "text", "type", "topic", "source", "answer")
"""Fields of a questions line that `Question` holds as its own; the others go to `extra`."""


def _source_spans(value: Any, where: str) -> tuple[SourceSpan, ...]:
    """A line's `source`: one {doc_id, start, end} object or a list of them (None: none)."""
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    spans = []
    for item in items:
        ok = (
            isinstance(item, dict)
            and isinstance(item.get("doc_id"), str)
            and all(
                isinstance(item.get(k), int) and not isinstance(item.get(k), bool)
                for k in ("start", "end")
            )
        )
        if not ok or not 0 <= item["start"] < item["end"]:
            raise ConfigError(
                where, "source", "expected {doc_id, start, end} objects with 0 <= start < end"
            )
        spans.append(SourceSpan(doc_id=item["doc_id"], start=item["start"], end=item["end"]))
    return tuple(spans)


def _question(obj: dict[str, Any], qid: str, text: str, where: str) -> Question:
    """One JSONL line as a Question: generated sets' type, topic, source and answer as
    its own fields, every other field kept in `extra` (so the log keeps it). A `topic`
    that is not a string (a list of words, say) stays in `extra` as it was."""
    label = {}
    for name in ("type", "answer"):
        value = obj.get(name)
        if value is not None and not isinstance(value, str):
            raise ConfigError(where, name, f"expected a string, got {value!r}")
        label[name] = value
    topic = obj.get("topic")
    extra = {k: v for k, v in obj.items() if k not in QUESTION_FIELDS}
    if topic is not None and not isinstance(topic, str):
        extra["topic"] = topic
        topic = None
    return Question(
        question_id=qid,
        text=text,
        type=label["type"],
        topic=topic,
        source=_source_spans(obj.get("source"), where),
        answer=label["answer"],
        extra=extra,
    )


def load_questions(path: str | os.PathLike[str]) -> list[Question]:
    """Questions from JSONL (`{"id": ..., "text": ...}` per line, the BEIR queries layout)
    or from a .txt file with one question per line (ids q1, q2, ...).

    Raises ConfigError naming the file and line for bad lines, duplicate ids or no
    questions at all.
    """
    p = Path(path)
    if not p.is_file():
        raise ConfigError(str(p), "questions.file", "questions file not found")
    questions: list[Question] = []
    lines = read_text_file(p, "questions.file").splitlines()
    if p.suffix.lower() == ".txt":
        texts = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
        questions = [Question(question_id=f"q{i}", text=t) for i, t in enumerate(texts, 1)]
    else:
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except (json.JSONDecodeError, RecursionError):  # RecursionError: nested too deep
                raise ConfigError(f"{p}:{n}", "", "expected a JSON object per line") from None
            if not isinstance(obj, dict):
                raise ConfigError(f"{p}:{n}", "", "expected a JSON object per line")
            qid, text = obj.get("id", obj.get("_id")), obj.get("text")
            if not isinstance(qid, (str, int)) or not str(qid):
                raise ConfigError(f"{p}:{n}", "id", "expected a non-empty string id")
            if not isinstance(text, str) or not text.strip():
                raise ConfigError(f"{p}:{n}", "text", "expected a non-empty question text")
            questions.append(_question(obj, str(qid), text.strip(), f"{p}:{n}"))
    if not questions:
        raise ConfigError(str(p), "questions.file", "the file holds no questions")
    ids = [q.question_id for q in questions]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ConfigError(str(p), "id", f"question id {dup!r} appears twice")
    return questions


def fit_sources(
    questions: Sequence[Question], docs: Sequence[Document], where: str = "questions"
) -> tuple[list[Question], str | None]:
    """The questions with their source spans kept only where the corpus holds them, and a
    warning (None when every span fits).

    A span names a document and characters of its text: with questions written for
    another corpus (other file names, a PDF of the same pages, an edited document) the
    document is missing or shorter, and the source metrics would read 0, as if retrieval
    never found the source. Such a question's spans are dropped, so its source metrics
    and failure reasons are left out instead."""
    lengths = {d.doc_id: len(d.text) for d in docs}

    def fits(s: SourceSpan) -> bool:
        return 0 <= s.start <= s.end <= lengths.get(s.doc_id, -1)

    out: list[Question] = []
    stray: list[str] = []
    for q in questions:
        misfit = next((s.doc_id for s in q.source if not fits(s)), None)
        if misfit is not None:
            stray.append(misfit)
            q = replace(q, source=())
        out.append(q)
    if not stray:
        return out, None
    missing = sorted({d for d in stray if d not in lengths})
    example = f"no document {missing[0]!r}" if missing else f"{stray[0]!r} is shorter"
    return out, (
        f"{where}: {len(stray)} of {sum(1 for q in questions if q.source)} questions' source "
        f"spans are not in this corpus ({example}): their source metrics and failure reasons "
        "are left out (were the questions written from other documents?)"
    )
