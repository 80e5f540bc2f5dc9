"""The judge exam file (`<out>.exam.jsonl`, written by `harness generate`): its items and
their reader. The judge reads it for few-shot examples (`judge.few_shot`); the exam
itself, its rates and its calibration are `harness.generate.exam` and
`harness.analysis.exam_calibration`."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.corpus import read_text_file
from harness.errors import ConfigError
from harness.types import SourceSpan


@dataclass(frozen=True)
class ExamItem:
    """One (question, passage) pair of the exam with what a judge should say of it."""

    item_id: str
    question_id: str
    question: str
    passage: str
    span: SourceSpan
    kind: str
    """"source" (expected relevant and complete) or "unrelated" (expected neither)."""

    @property
    def expected(self) -> bool:
        """What a right judge says on both criteria: yes for the source, no otherwise."""
        return self.kind == "source"

    @property
    def passage_id(self) -> str:
        """The passage's id as a chunk id would read (`doc_id#start`), plus its end."""
        return f"{self.span.doc_id}#{self.span.start}-{self.span.end}"

    def to_dict(self) -> dict[str, Any]:
        """The exam file's line."""
        return {
            "id": self.item_id,
            "question_id": self.question_id,
            "question": self.question,
            "kind": self.kind,
            "expected": {"relevant": self.expected, "complete": self.expected},
            "source": self.span.to_dict(),
            "passage": self.passage,
        }


def read_exam(path: str | os.PathLike[str]) -> list[ExamItem]:
    """The exam items of a `<out>.exam.jsonl` file; ConfigError naming the file and line
    for a bad line or an empty file."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(str(p), "exam", "exam file not found (written by harness generate)")
    items = []
    for n, line in enumerate(read_text_file(p, "exam").splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            items.append(
                ExamItem(
                    item_id=str(d["id"]),
                    question_id=str(d["question_id"]),
                    question=str(d["question"]),
                    passage=str(d["passage"]),
                    span=SourceSpan.from_dict(d["source"]),
                    kind=d["kind"] if d["kind"] in ("source", "unrelated") else "?",
                )
            )
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, RecursionError):
            raise ConfigError(
                f"{p}:{n}",
                "",
                "expected an exam item {id, question_id, question, kind, source, passage}",
            ) from None
        if items[-1].kind == "?":
            raise ConfigError(f"{p}:{n}", "kind", "expected source or unrelated")
    if not items:
        raise ConfigError(str(p), "exam", "the exam file holds no items")
    return items
