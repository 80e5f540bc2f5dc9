"""Questions from a file, and their source spans checked against the corpus.

`load_questions` reads, by the file's content and suffix:

- JSONL (one JSON object a line; the BEIR queries layout): the question in `text` (or
  `question`, `query`, `user_input`, `input`: TEXT_FIELDS), its id in `id` (or `_id`); generated sets' `type`, `topic`,
  `answer` and `source` spans; every other field is kept in the question's `extra`.
- a JSON array (a file whose text starts with `[`): of such objects, or of strings.
- .csv / .tsv, as a spreadsheet or a log export writes them: a header row naming the
  question's column (one of TEXT_FIELDS) and optionally `id`, `type`, `topic`,
  `answer`; other columns go to `extra`, an empty cell is an absent field; a quoted CSV
  cell may hold line breaks; a CSV separated by semicolons, as Excel writes one where
  the decimal mark is a comma, is read as such (`harness.corpus.table.delimiter`).
- .xlsx (an Excel workbook; `harness.corpus.spreadsheet`), .ods (a LibreOffice Calc
  one; `harness.corpus.odf`): its first visible sheet whose first row names the
  questions' column, read as that sheet's CSV export.
- .txt, or any other file whose text does not start with `{` or `[`: one question a
  line; lines starting with `#` are comments.

A question without an id gets `q<n>`, its position among the file's questions. A
byte-order mark (a file saved by some Windows editors) is skipped. Bad input is one
ConfigError naming the file, the line (or item) and the field.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.corpus.load import read_text_file
from harness.corpus.table import WORKBOOK_SUFFIXES, read_book, read_rows
from harness.errors import ConfigError
from harness.types import Document, Question, SourceSpan, span_digest

TEXT_FIELDS = ("text", "question", "query", "user_input", "input")
"""Names of the question's field (or column), in the order they are looked for:
`user_input` is a RAGAS test set's, `input` a DeepEval dataset's."""
ID_FIELDS = ("id", "_id")

QUESTION_FIELDS = ("id", "_id", "text", "type", "topic", "source", "answer")
"""Fields of a questions line that `Question` holds as its own; the others go to `extra`."""


_HEX16 = re.compile(r"[0-9a-fA-F]{16}")


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
        digest = item.get("digest")
        if digest is not None and not (isinstance(digest, str) and _HEX16.fullmatch(digest)):
            raise ConfigError(where, "source.digest", "expected 16 hex digits (or none)")
        spans.append(
            SourceSpan(
                doc_id=item["doc_id"],
                start=item["start"],
                end=item["end"],
                digest=None if digest is None else digest.lower(),
            )
        )
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


def _record(obj: dict[str, Any], n: int, where: str) -> Question:
    """One object (a JSONL line, an array item, a table row) as the file's `n`-th
    Question: its text from the first of TEXT_FIELDS it has, its id or `q<n>`."""
    text_key = next((k for k in TEXT_FIELDS if k in obj), None)
    text = obj.get(text_key) if text_key else None
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(where, "text", "expected a non-empty question text")
    qid = next((obj[k] for k in ID_FIELDS if obj.get(k) is not None), f"q{n}")
    if not isinstance(qid, (str, int)) or isinstance(qid, bool) or not str(qid).strip():
        raise ConfigError(where, "id", "expected a non-empty string id")
    rest = {k: v for k, v in obj.items() if k != text_key}
    return _question(rest, str(qid).strip(), text.strip(), where)


def _from_lines(raw: str) -> list[Question]:
    texts = [line.strip() for line in raw.splitlines() if line.strip()]
    texts = [t for t in texts if not t.startswith("#")]
    return [Question(question_id=f"q{i}", text=t) for i, t in enumerate(texts, 1)]


def _from_jsonl(raw: str, p: Path) -> list[Question]:
    out: list[Question] = []
    for n, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):  # bad JSON, a 5,000-digit int, too deep
            raise ConfigError(f"{p}:{n}", "", "expected a JSON object per line") from None
        if not isinstance(obj, dict):
            raise ConfigError(f"{p}:{n}", "", "expected a JSON object per line")
        out.append(_record(obj, len(out) + 1, f"{p}:{n}"))
    return out


def _from_array(raw: str, p: Path) -> list[Question]:
    try:
        items = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{p}:{exc.lineno}", "", f"not valid JSON ({exc.msg})") from None
    except (ValueError, RecursionError) as exc:  # an int of 5,000 digits, nesting too deep
        raise ConfigError(str(p), "", f"not valid JSON ({exc})") from None
    if not isinstance(items, list):
        raise ConfigError(str(p), "", "expected a JSON array of questions")
    out: list[Question] = []
    for i, item in enumerate(items, 1):
        obj = {"text": item} if isinstance(item, str) else item
        if not isinstance(obj, dict):
            raise ConfigError(f"{p}: item {i}", "", "expected an object or a string")
        out.append(_record(obj, i, f"{p}: item {i}"))
    return out


class _Table:
    """Rows of a table read into questions: the first non-empty row is the header, which
    names the questions' column (one of TEXT_FIELDS); each later row is a question."""

    def __init__(self) -> None:
        self.header: list[str] = []
        self.questions: list[Question] = []

    def add(self, where: str, row: Sequence[str]) -> None:
        """Read one row (`where` names its file and line for the messages)."""
        if not any(cell.strip() for cell in row):
            return
        if not self.header:
            self.header = [cell.strip().lower() for cell in row]
            if not set(TEXT_FIELDS) & set(self.header):
                raise ConfigError(
                    where,
                    "text",
                    "expected a header row naming the questions' column "
                    f"({', '.join(TEXT_FIELDS)}); found {', '.join(row)}",
                )
            return
        if any(cell.strip() for cell in row[len(self.header) :]):
            raise ConfigError(
                where, "", f"{len(row)} cells where the header names {len(self.header)} columns"
            )
        obj = {h: cell.strip() for h, cell in zip(self.header, row, strict=False) if cell.strip()}
        self.questions.append(_record(obj, len(self.questions) + 1, where))


def _from_table(raw: str, p: Path) -> list[Question]:
    """A CSV or TSV with a header row, its rows read by `harness.corpus.table.read_rows`
    (quotes read strictly; a semicolon-separated CSV, as Excel writes it in some
    languages, is read as such)."""
    table = _Table()
    for line, row in read_rows(raw, p):
        table.add(f"{p}:{line}", row)
    return table.questions


def _from_workbook(p: Path, field: str) -> list[Question]:
    """A workbook's (.xlsx, .ods) first visible sheet whose first row names the
    questions' column, read as its CSV export would be (`harness.corpus.table.read_book`);
    a message names the sheet and the row number the spreadsheet shows."""
    sheets = read_book(p, field).sheets
    if not sheets:
        return []  # an empty file
    for sheet in sheets:
        header = [cell.strip().lower() for cell in sheet.rows[0][1]] if sheet.rows else []
        if set(TEXT_FIELDS) & set(header):
            table = _Table()
            for number, row in sheet.rows:
                table.add(f"{p}: sheet {sheet.name!r}, row {number}", row)
            return table.questions
    first = sheets[0]
    found = ", ".join(first.rows[0][1]) if first.rows else "an empty sheet"
    raise ConfigError(
        str(p),
        "text",
        "expected a sheet whose first row names the questions' column "
        f"({', '.join(TEXT_FIELDS)}); sheet {first.name!r} starts with {found}"
        + (f" (and {len(sheets) - 1} more sheets, none naming one)" if len(sheets) > 1 else ""),
    )


def load_questions(path: str | os.PathLike[str], field: str = "questions.file") -> list[Question]:
    """The questions in `path` (formats in the module docstring); `field` is the setting
    that named the file, for the messages.

    Raises ConfigError naming the file and line for a missing file, bad lines, duplicate
    ids or no questions at all.
    """
    p = Path(path)
    if not p.is_file():
        raise ConfigError(str(p), field, "questions file not found")
    suffix = p.suffix.lower()
    workbook = suffix in WORKBOOK_SUFFIXES
    questions = _from_workbook(p, field) if workbook else _from_text(p, field)
    if not questions:
        raise ConfigError(str(p), field, "the file holds no questions")
    ids = [q.question_id for q in questions]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ConfigError(str(p), "id", f"question id {dup!r} appears twice")
    return questions


def _from_text(p: Path, field: str) -> list[Question]:
    """The questions of a text file, by its suffix and content (the module docstring)."""
    raw = read_text_file(p, field)
    suffix = p.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return _from_table(raw, p)
    if suffix == ".txt":
        return _from_lines(raw)
    if raw.lstrip().startswith("["):
        return _from_array(raw, p)
    if suffix in (".jsonl", ".json", ".ndjson") or raw.lstrip().startswith("{"):
        return _from_jsonl(raw, p)
    return _from_lines(raw)


def fit_sources(
    questions: Sequence[Question], docs: Sequence[Document], where: str = "questions"
) -> tuple[list[Question], str | None]:
    """The questions with their source spans kept only where the corpus holds them, and a
    warning (None when every span fits).

    A span names a document and characters of its text: with questions written for
    another corpus (other file names, a PDF of the same pages, an edited document) the
    document is missing, shorter, or (for a span with a `digest`) holds other text
    there, and the source metrics would read 0, as if retrieval never found the source,
    or credit whatever chunk now lies there. Such a question's spans are dropped, so its
    source metrics and failure reasons are left out instead."""
    texts = {d.doc_id: d.text for d in docs}

    def misfit(s: SourceSpan) -> str | None:
        """Why the span does not fit (None when it does)."""
        text = texts.get(s.doc_id)
        if text is None:
            return f"no document {s.doc_id!r}"
        if not 0 <= s.start <= s.end <= len(text):
            return f"{s.doc_id!r} is shorter"
        if s.digest is not None and span_digest(text[s.start : s.end]) != s.digest:
            return f"{s.doc_id!r} reads differently at {s.start}-{s.end}"
        return None

    out: list[Question] = []
    why: list[str] = []
    for q in questions:
        reason = next((r for r in map(misfit, q.source) if r is not None), None)
        if reason is not None:
            why.append(reason)
            q = replace(q, source=())
        out.append(q)
    if not why:
        return out, None
    return out, (
        f"{where}: {len(why)} of {sum(1 for q in questions if q.source)} questions' source "
        f"spans are not in this corpus ({why[0]}): their source metrics and failure reasons "
        "are left out (were the questions written from other documents, or before the "
        "documents were edited?)"
    )
