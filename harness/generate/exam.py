"""The judge exam that comes with every generated set, and how the judge does on it.

For each kept question with one source passage, two items:

- `source`: the question with its own source passage; a judge must call it relevant and
  complete (the passage was written to answer it);
- `unrelated`: the question with a passage from another document (the least similar of
  the sampled passages of other documents; in a corpus of one document, of its passages
  at least a passage's length away from the source); a judge must call it neither.

`exam_rates` gives, per criterion, the true-positive rate (source items judged yes) and
the true-negative rate (unrelated items judged no). The exam is also written as labels
(`<out>.exam.qrels.tsv`: question id, passage id, grade 2 or 0) in the format `harness
calibrate` reads, and `exam_run` writes a judged exam as an ordinary run folder, so
`harness calibrate EXAM_RUN --qrels <out>.exam.qrels.tsv` fits a calibration on it.
Multi-passage questions (neither passage alone is complete) and unanswerable ones (no
source) have no exam items.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# the exam file's records and reader live with the judge, which reads an exam for its
# few-shot examples (judge.few_shot); re-exported here, where the exam is written
from harness.judge.exam import ExamItem as ExamItem
from harness.judge.exam import read_exam as read_exam
from harness.types import Verdict


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
