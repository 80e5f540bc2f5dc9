"""The judge exam that comes with every generated set, and how the judge does on it.

For each kept question with one source passage, two items:

- `source`: the question with its own source passage; a judge must call it relevant and
  complete (the passage was written to answer it);
- `unrelated`: the question with a passage from another document (the least similar of
  the sampled passages of other documents); a judge must call it neither.

`exam_rates` gives, per criterion, the true-positive rate (source items judged yes) and
the true-negative rate (unrelated items judged no). The exam is also written as labels
(`<out>.exam.qrels.tsv`: question id, passage id, grade 2 or 0) in the format `harness
calibrate` reads, and `exam_run` writes a judged exam as an ordinary run folder, so
`harness calibrate EXAM_RUN --qrels <out>.exam.qrels.tsv` fits a calibration on it.
Multi-passage questions (neither passage alone is complete) and unanswerable ones (no
source) have no exam items.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.corpus import read_text_file
from harness.errors import ConfigError
from harness.types import SourceSpan, Verdict


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


def exam_qrels_lines(items: Sequence[ExamItem]) -> list[str]:
    """The exam as qrels rows (`question_id<TAB>passage_id<TAB>grade`): 2 for a source
    passage (relevant and complete), 0 for an unrelated one."""
    return [f"{i.question_id}\t{i.passage_id}\t{2 if i.expected else 0}" for i in items]


def _rate(hits: int, n: int) -> float | None:
    return hits / n if n else None


def exam_rates(items: Sequence[ExamItem], verdicts: Sequence[Verdict]) -> dict[str, Any]:
    """Per criterion, TPR = source items judged yes / source items judged, and TNR =
    unrelated items judged no / unrelated items judged. "complete" counts a yes only
    with relevance (grade 2), as the metrics do. Failed verdicts are left out and
    counted in `errors`; a rate over no items is None."""
    if len(items) != len(verdicts):
        raise ValueError("one verdict per exam item")
    out: dict[str, Any] = {"items": len(items), "errors": 0}
    ok = []
    for item, v in zip(items, verdicts, strict=True):
        if v.grade is None:
            out["errors"] += 1
        else:
            ok.append((item, v))
    pos = [v for i, v in ok if i.expected]
    neg = [v for i, v in ok if not i.expected]
    out["source_items"] = len(pos)
    out["unrelated_items"] = len(neg)
    for crit in ("relevant", "complete"):

        def yes(v: Verdict, crit: str = crit) -> bool:
            return bool(v.relevant.value) if crit == "relevant" else v.grade == 2

        out[crit] = {
            "tpr": _rate(sum(yes(v) for v in pos), len(pos)),
            "tnr": _rate(sum(not yes(v) for v in neg), len(neg)),
        }
    return out
