"""Generated questions' source spans as labels, and the judge exam.

- `source_qrels`: a run's questions with a source as chunk-level qrels, for `harness
  validate RUN --sources`: a retrieved chunk overlapping the question's only source span
  is relevant and complete (2); overlapping one of a multi-passage question's spans,
  relevant (1: it holds half the answer); any other retrieved chunk 0.
- `breakdown`: a run's mean metrics per question type or topic.
- `judge_exam`: the exam of a generated set judged by the run's judge, with true-positive
  and true-negative rates per criterion, written as a run folder that `harness
  calibrate` reads with the exam's labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.analysis.validate import Qrels
from harness.config import CriteriaConfig
from harness.errors import HarnessError
from harness.log import RunLog
from harness.metrics.source import overlaps
from harness.types import QuestionResult

BREAKDOWN_METRICS = ("hit_rate", "mrr", "source_hit", "source_mrr")
"""The metrics a breakdown by type or topic shows (at the run's k)."""


def source_qrels(run: RunLog) -> Qrels:
    """Chunk-level labels from the run's source spans (see the module's docstring).
    Questions without a source are not labelled; HarnessError when none has one."""
    out: Qrels = {}
    for q in run.questions:
        spans = q.question.source
        if not spans:
            continue
        grade = 2 if len(spans) == 1 else 1
        out[q.question.question_id] = {
            h.chunk.chunk_id: grade if any(overlaps(h.chunk, s) for s in spans) else 0
            for h in q.hits
        }
    if not out:
        raise HarnessError(
            f"{run.run_dir}: no question of the run has a source span (generate questions "
            "with harness generate)"
        )
    return out


def group_of(q: QuestionResult, by: str) -> str:
    """The question's type or topic ("-" when it has none)."""
    if by not in ("type", "topic"):
        raise HarnessError(f"--by: expected type or topic, got {by!r}")
    value = q.question.type if by == "type" else q.question.topic
    return value or "-"


def breakdown(
    questions: Sequence[QuestionResult], k: int, by: str, metrics: Sequence[str] = BREAKDOWN_METRICS
) -> list[dict[str, Any]]:
    """Per group (type or topic), the number of questions and the mean of each metric at
    k over the group's questions that have it (None when none has it); groups sorted by
    name, with "-" (no label) last."""
    groups: dict[str, list[QuestionResult]] = {}
    for q in questions:
        groups.setdefault(group_of(q, by), []).append(q)
    rows = []
    for name in sorted(groups, key=lambda g: (g == "-", g)):
        qs = groups[name]
        row: dict[str, Any] = {by: name, "questions": len(qs)}
        for m in metrics:
            values = [q.metrics[f"{m}@{k}"] for q in qs if f"{m}@{k}" in q.metrics]
            row[m] = sum(values) / len(values) if values else None
        rows.append(row)
    return rows


def exam_path_for(run: RunLog) -> Path:
    """The exam beside the run's questions file (`<questions>.exam.jsonl`)."""
    qfile = run.header.data.get("questions_file")
    if not qfile:
        raise HarnessError(f"{run.run_dir}: the run does not name its questions file; give --exam")
    p = Path(str(qfile))
    return p.with_name(p.name[: -len(".jsonl")] + ".exam.jsonl") if p.suffix == ".jsonl" else p


def judge_exam(
    exam_file: Path,
    judge: Any,
    criteria: CriteriaConfig,
    *,
    cache: Any = None,
    concurrency: int = 1,
    out_dir: Path | None = None,
) -> dict[str, Any]:
    """Judge every exam item (through the verdict cache, if given) and return the rates
    (`harness.generate.exam.exam_rates`) with the file and the cost. With `out_dir`, the
    judged exam is written there as a run folder: one question per exam question, one
    hit per item, chunk ids as in the exam's qrels, so `harness calibrate out_dir --qrels
    <exam>.qrels.tsv` can fit a calibration on it."""
    from harness.generate.exam import exam_rates, read_exam
    from harness.judge import JudgeStats, judge_pairs

    items = read_exam(exam_file)
    stats = JudgeStats()
    verdicts = judge_pairs(
        [(i.question, i.passage) for i in items],
        judge,
        criteria=criteria,
        cache=cache,
        stats=stats,
        concurrency=concurrency,
    )
    res = {"exam": str(exam_file), **exam_rates(items, verdicts), "stats": stats.to_dict()}
    if out_dir is not None:
        _write_exam_run(out_dir, items, verdicts, judge)
        res["exam_run"] = str(out_dir)
    return res


def _write_exam_run(out_dir: Path, items: Any, verdicts: Any, judge: Any) -> None:
    """The judged exam as a run folder (header and questions.jsonl)."""
    from harness.log import STATUS_DONE, RunHeader, RunWriter, new_run_id, now_iso
    from harness.types import Chunk, Hit, JudgedHit, Question

    by_q: dict[str, list[tuple[Any, Any]]] = {}
    texts: dict[str, str] = {}
    for item, v in zip(items, verdicts, strict=True):
        by_q.setdefault(item.question_id, []).append((item, v))
        texts[item.question_id] = item.question
    writer = RunWriter(out_dir)
    k = max(len(v) for v in by_q.values())
    try:
        writer.write_header(
            RunHeader(
                run_id=out_dir.name or new_run_id("exam"),
                name="judge-exam",
                status=STATUS_DONE,
                started_at=now_iso(),
                finished_at=now_iso(),
                config={},
                components={"judge": judge.spec},
                data={"n_questions": len(by_q)},
                ks=tuple(range(1, k + 1)),
            )
        )
        results: list[QuestionResult] = []
        for qid, pairs in by_q.items():
            hits = tuple(
                JudgedHit(
                    hit=Hit(chunk_id=item.passage_id, rank=r, score=0.0),
                    chunk=Chunk(
                        chunk_id=item.passage_id,
                        doc_id=item.span.doc_id,
                        text=item.passage,
                        start_char=item.span.start,
                    ),
                    verdict=v,
                )
                for r, (item, v) in enumerate(pairs, 1)
            )
            results.append(
                QuestionResult(
                    question=Question(question_id=qid, text=texts[qid]), hits=hits, metrics={}
                )
            )
        writer.append_many(results)  # judged already: one write and one sync for them all
    finally:
        writer.close()
