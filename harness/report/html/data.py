"""The report's data: pure functions from log records to one JSON-ready mapping per page.

Nothing here draws or escapes; the renderer (`render.py`) and the figures (`figures.py`)
read only what these functions return, so what a page shows is unit-tested here. The
numbers are the log's own (header metrics and intervals, sweep.json's best trial,
recommendation and cost) or come from the same functions `show` and `compare` use
(`harness.analysis.compare_runs`, the sweep's `SweepBook` and `paired_bootstrap`);
nothing is recomputed another way.

Chunk texts are stored once per page in `texts` and referenced by index from every hit
(a sweep's trials retrieve the same chunks again and again). Every string goes through
`harness.secrets.redact_obj` before it leaves `page_data`'s callers (see `render.py`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.analysis.compare import Comparison
from harness.log import RunHeader, RunLog, RunStats, SweepLog, TrialRecord, effective_status
from harness.metrics import COUNTS, METRIC_NAMES, metric_key, paired_bootstrap
from harness.types import FAILURE_LABELS, JudgedHit, QuestionResult

OUTCOMES = ("complete", "relevant", "miss", "error", "not run")
"""A question's outcome at a k, as the heatmap colours it: a relevant-and-complete chunk in
the top k; relevant chunks only; nothing relevant; judging failed; never judged (a pruned
trial stopped before it)."""

CURVE_METRICS = ("hit_rate", "mrr")
"""The metrics drawn against k on a run's page."""

HEADLINE = ("hit_rate", "mrr", "relevancy_mrr")
"""The per-question metrics a question row shows."""

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP_WORDS = frozenset(
    _WORD.findall(
        "a an and are at be by can do does did for from has have how in is it its of on or "
        "the their there this to was were what when where which who whom why will with you "
        "your i we our they them be been being should could would may might must shall"
    )
)


def finite(value: Any) -> Any:
    """`value` with NaN and infinities replaced by None, recursively (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def question_words(text: str) -> list[str]:
    """The words of a question worth marking in a chunk: lower-cased, at least 3
    characters, no stop words, each once, in order of appearance."""
    seen: dict[str, None] = {}
    for w in _WORD.findall(text.lower()):
        if len(w) >= 3 and w not in _STOP_WORDS:
            seen.setdefault(w, None)
    return list(seen)


def word_marks(text: str, words: Sequence[str]) -> list[list[int]]:
    """[start, end) character spans of `text` where one of `words` (lower-case) occurs as a
    whole word, case-insensitively; sorted, never overlapping. No words give no spans."""
    if not words:
        return []
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    pattern = re.compile(rf"(?<![^\W_])(?:{alternatives})(?![^\W_])", re.IGNORECASE)
    return [[m.start(), m.end()] for m in pattern.finditer(text)]


class TextTable:
    """Chunk texts stored once per page: `ref(text)` is the index into `texts`."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._index: dict[str, int] = {}

    def ref(self, text: str) -> int:
        """The index of `text`, added on first sight."""
        if text not in self._index:
            self._index[text] = len(self.texts)
            self.texts.append(text)
        return self._index[text]


def _criterion(cv: Any) -> dict[str, Any]:
    return {
        "value": cv.value,
        "p": cv.p_yes,
        "reason": cv.reason,
        "error": cv.error,
        "evidence": cv.evidence,
    }


def hit_data(jh: JudgedHit, words: Sequence[str], texts: TextTable) -> dict[str, Any]:
    """One graded chunk: rank, similarity and rerank score, both verdicts with their
    probability, reason and error, the grade (0/1/2, None on error), the chunk's text
    (an index into `texts`) and the spans of the question's words in it."""
    v = jh.verdict
    return {
        "rank": jh.hit.rank,
        "chunk_id": jh.chunk.chunk_id,
        "doc_id": jh.chunk.doc_id,
        "score": jh.hit.score,
        "rerank_score": jh.hit.rerank_score,
        "grade": v.grade,
        "relevant": _criterion(v.relevant),
        "complete": _criterion(v.complete),
        "text": texts.ref(jh.chunk.text),
        "marks": word_marks(jh.chunk.text, words),
        "flags": list(jh.flags),
    }


def outcome(q: QuestionResult | None, k: int) -> str:
    """The question's outcome at k (one of OUTCOMES): "error" when its hit rate at k is
    missing (a failed verdict in the top k), "not run" when there is no result."""
    if q is None:
        return "not run"
    hit = q.metrics.get(f"hit_rate@{k}")
    if hit is None:
        return "error"
    if hit >= 1:
        return "complete"
    if any(jh.hit.rank <= k and jh.verdict.relevant.value for jh in q.hits):
        return "relevant"
    return "miss"


def _topics(q: QuestionResult) -> list[str]:
    """The question's topics, where the question records carry them (generated questions)."""
    topic = getattr(q.question, "topic", None)
    if topic is None or topic == "":
        return []
    if isinstance(topic, str):
        return [topic]
    return [str(t) for t in topic]


def question_data(q: QuestionResult, k: int, texts: TextTable) -> dict[str, Any]:
    """A question row: id, text, type and topics (when recorded), its headline metrics at
    k, outcome, error, failure explanation and graded chunks."""
    words = question_words(q.question.text)
    qtype = getattr(q.question, "type", None)
    return {
        "id": q.question.question_id,
        "text": q.question.text,
        "type": None if qtype in (None, "") else str(qtype),
        "topics": _topics(q),
        "metrics": {name: q.metrics.get(f"{name}@{k}") for name in HEADLINE},
        "outcome": outcome(q, k),
        "error": q.error,
        "failure": q.failure.to_dict() if q.failure is not None else None,
        "hits": [hit_data(jh, words, texts) for jh in q.hits],
    }


def metric_rows(header: RunHeader) -> list[dict[str, Any]]:
    """The metrics table of `show`/`run` (same rows, same order): one row per metric with
    its value and 95% interval (None where the header has none) at every k."""
    rows = []
    for name in (*METRIC_NAMES, *COUNTS):
        rows.append(
            {
                "name": name,
                "values": [header.metrics.get(f"{name}@{k}") for k in header.ks],
                "ci": [
                    list(header.metrics_ci[f"{name}@{k}"])
                    if f"{name}@{k}" in header.metrics_ci
                    else None
                    for k in header.ks
                ],
            }
        )
    return rows


def judge_stats(stats: RunStats) -> list[list[Any]]:
    """The run's stats as (name, value) rows: the judge's calls, cache hits, errors,
    tokens, cost and times first, then every other recorded number."""
    recorded = stats.to_dict()
    first = (
        "judge_calls",
        "judge_cache_hits",
        "judge_errors",
        "judge_retries",
        "judge_failed_attempts",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "judge_s",
        "index_s",
        "total_s",
    )
    rows = [[key, recorded[key]] for key in first if key in recorded]
    rows += [
        [key, value]
        for key, value in recorded.items()
        if key not in first and isinstance(value, (int, float, str, bool))
    ]
    return rows


def _run_identity(run: RunLog) -> dict[str, Any]:
    h = run.header
    return {
        "run_id": h.run_id,
        "name": h.name,
        "status": effective_status(h),
        "started_at": h.started_at,
        "finished_at": h.finished_at,
        "error": h.error,
        "warnings": list(h.warnings),
        "run_dir": str(run.run_dir),
        "k": h.k,
        "n_questions": h.data.get("n_questions", len(run.questions)),
        "n_chunks": h.data.get("n_chunks"),
    }


def run_page(
    run: RunLog,
    *,
    validation: Mapping[str, Any] | None = None,
    validation_note: str | None = None,
) -> dict[str, Any]:
    """The page of one run: identity, metrics at every k with intervals, the curves of
    hit rate and MRR against k, the judge's stats, every question with its graded chunks
    (filters: outcome, error, type, topic), the configuration and component specs, and
    the `validate_run` result when labels were given (else `validation_note` says why
    not)."""
    h = run.header
    k = h.k or 1
    texts = TextTable()
    questions = [question_data(q, k, texts) for q in run.questions]
    failure_counts = {
        label: h.metrics.get(f"failures_{label.replace('-', '_')}@{k}") for label in FAILURE_LABELS
    }
    return finite(
        {
            "kind": "run",
            "title": f"run {h.run_id}",
            "run": _run_identity(run),
            "ks": list(h.ks),
            "metrics": metric_rows(h),
            "curves": {
                name: {
                    "k": list(h.ks),
                    "mean": [h.metrics.get(f"{name}@{kk}") for kk in h.ks],
                    "ci": [list(h.metrics_ci.get(f"{name}@{kk}", (None, None))) for kk in h.ks],
                }
                for name in CURVE_METRICS
            },
            "failure_counts": failure_counts,
            "judge": judge_stats(h.stats),
            "questions": questions,
            "filters": _filters(questions),
            "texts": texts.texts,
            "config": h.config,
            "components": {name: spec.to_dict() for name, spec in h.components.items()},
            "data": h.data,
            "validation": dict(validation) if validation is not None else None,
            "validation_note": validation_note,
        }
    )


def _filters(questions: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """The values the question table can be filtered by (types and topics only where the
    questions carry them)."""
    return {
        "outcome": [o for o in OUTCOMES if any(q["outcome"] == o for q in questions)],
        "type": sorted({q["type"] for q in questions if q["type"]}),
        "topic": sorted({t for q in questions for t in q["topics"]}),
    }


# ---------------------------------------------------------------- sweeps


def _objective_key(objective: str, params: Mapping[str, Any]) -> str | None:
    k = params.get("k")
    return metric_key(objective, int(k)) if k is not None else None


def _rank_key(direction: str) -> Any:
    sign = 1.0 if direction == "maximize" else -1.0

    def key(t: TrialRecord) -> tuple[float, int]:
        return (-sign * (t.values or [0.0])[0], t.number)

    return key


def forest(
    best: int | None,
    per_question: Mapping[int, Mapping[str, float]],
    numbers: Iterable[int],
    *,
    confidence: float = 0.95,
) -> list[dict[str, Any]]:
    """Each trial's paired difference to the best (trial - best, on the objective, over the
    questions both answered) with its percentile bootstrap interval: the same
    `paired_bootstrap` and defaults as the sweep's "cannot be told apart" marks. Trials
    sharing fewer than two questions with the best are left out."""
    if best is None or best not in per_question:
        return []
    base = per_question[best]
    out = []
    for n in numbers:
        if n == best or n not in per_question:
            continue
        other = per_question[n]
        shared = [q for q in base if q in other]
        if len(shared) < 2:
            continue
        mean, low, high = paired_bootstrap(
            [base[q] for q in shared], [other[q] for q in shared], confidence=confidence
        )
        out.append({"trial": n, "mean": mean, "low": low, "high": high, "n": len(shared)})
    return out


def sweep_page(
    sweep: SweepLog,
    runs: Mapping[int, RunLog],
    *,
    validation: Mapping[str, Any] | None = None,
    validation_note: str | None = None,
) -> dict[str, Any]:
    """The page of a sweep, from sweep.json, trials.jsonl and each trial's run (`runs`,
    by trial number; a trial without a run folder is simply absent).

    The leaderboard ranks complete trials by the first objective (then pruned, failed),
    each with its objective's 95% interval from its own run header, and marks the best,
    the recommended trial and the trials the recommendation's paired test (or, without
    one, the best trial's bootstrap) cannot separate from the best; `forest` holds each
    trial's paired difference to the best. The heatmap has one row per trial with a run
    and one column per question: its outcome at the trial's k and the chunks retrieved.
    """
    from harness.sweep import SweepBook

    s = sweep.summary
    trials = list(sweep.trials)
    objective = s.objective[0] if s.objective else ""
    direction = s.directions[0] if s.directions else "maximize"
    best = s.best[0].number if s.best and len(s.objective) == 1 else None
    rec = s.recommendation
    if rec is not None:
        ties = set(rec.indistinguishable)
        p_holm = {t.trial: t.p_holm for t in rec.comparisons}
    else:
        ties = set(s.best[0].indistinguishable or []) if s.best and best is not None else set()
        p_holm = {}
    front = {b.number for b in s.best} if len(s.objective) > 1 else set()

    book = SweepBook(tuple(s.objective[:1]))
    for t in trials:
        book.add(t, runs.get(t.number))
    complete = sorted(
        (t for t in trials if t.state == "complete" and t.values), key=_rank_key(direction)
    )
    others = [t for t in trials if t not in complete]
    diffs = {
        d["trial"]: d
        for d in forest(best, book.per_question, [t.number for t in complete], confidence=0.95)
    }

    board = []
    for rank, t in enumerate([*complete, *others], 1):
        run = runs.get(t.number)
        key = _objective_key(objective, t.params) if objective else None
        ci = run.header.metrics_ci.get(key) if run is not None and key else None
        k = t.params.get("k")
        board.append(
            {
                "rank": rank if t in complete else None,
                "number": t.number,
                "state": t.state,
                "params": t.params,
                "values": t.values,
                "ci": list(ci) if ci is not None else None,
                "context_chars": (
                    run.header.metrics.get(f"context_chars@{k}") if run is not None else None
                ),
                "best": t.number == best,
                "recommended": rec is not None and t.number == rec.trial,
                "tie": t.number in ties,
                "pareto": t.number in front,
                "p_holm": p_holm.get(t.number),
                "diff": diffs.get(t.number),
                "questions_done": t.questions_done,
                "duration_s": t.duration_s,
                "error": t.error,
                "run_dir": t.run_dir,
            }
        )

    texts = TextTable()
    qids: dict[str, str] = {}
    with_runs = [t for t in trials if t.number in runs]
    for t in with_runs:
        for q in runs[t.number].questions:
            qids.setdefault(q.question.question_id, q.question.text)
    rows, cells = [], {}
    for t in with_runs:
        run = runs[t.number]
        k = run.header.k or int(t.params.get("k", 1))
        by_id = {q.question.question_id: q for q in run.questions}
        rows.append([OUTCOMES.index(outcome(by_id.get(qid), k)) for qid in qids])
        cells[str(t.number)] = {
            qid: {
                "k": k,
                "outcome": outcome(q, k),
                "error": q.error,
                "metrics": {name: q.metrics.get(f"{name}@{k}") for name in HEADLINE},
                "hits": [hit_data(jh, question_words(q.question.text), texts) for jh in q.hits],
            }
            for qid, q in by_id.items()
        }

    varied = sorted(
        {
            name
            for t in trials
            for name in t.params
            if len({repr(u.params.get(name)) for u in trials if name in u.params}) > 1
        }
    )
    return finite(
        {
            "kind": "sweep",
            "title": f"sweep {s.sweep_id}",
            "sweep": {
                "sweep_id": s.sweep_id,
                "status": effective_status(s),
                "updated_at": s.updated_at,
                "error": s.error,
                "objective": s.objective,
                "directions": s.directions,
                "sampler": {"name": s.sampler.name, "seed": s.sampler.seed},
                "pruner": s.pruner,
                "trials_requested": s.n_trials_requested,
                "counts": {
                    "complete": s.counts.complete,
                    "pruned": s.counts.pruned,
                    "failed": s.counts.failed,
                },
                "storage": s.storage,
                "sweep_dir": str(sweep.sweep_dir),
            },
            "best": best,
            "front": sorted(front),
            "recommendation": rec.to_dict() if rec is not None else None,
            "importances": dict(s.importances),
            "importances_note": s.importances_note,
            "leaderboard": board,
            "forest": [diffs[t.number] for t in complete if t.number in diffs],
            "params": varied,
            "trials": [
                {"number": t.number, "state": t.state, "params": t.params, "values": t.values}
                for t in trials
            ],
            "heatmap": {
                "questions": list(qids),
                "question_text": list(qids.values()),
                "trials": [t.number for t in with_runs],
                "outcome": rows,
            },
            "cells": cells,
            "texts": texts.texts,
            "cost": {
                "judge_calls": s.stats.judge_calls,
                "judge_cache_hits": s.stats.judge_cache_hits,
                "judge_errors": s.stats.judge_errors,
                "distinct_verdicts": s.stats.distinct_verdicts,
                "naive_calls": s.stats.naive_calls,
                "prompt_tokens": s.stats.prompt_tokens,
                "completion_tokens": s.stats.completion_tokens,
                "cost_usd": s.stats.cost_usd,
            },
            "config": s.config,
            "space": s.space,
            "validation": dict(validation) if validation is not None else None,
            "validation_note": validation_note,
        }
    )


# ---------------------------------------------------------------- comparisons


def short_name(run_dir: str | Path) -> str:
    """A run's name as compare prints it: `<sweep>/<n>` for a trial, else the folder."""
    p = Path(run_dir)
    if p.parent.name == "trials":
        return f"{p.parent.parent.name}/{p.name}"
    return p.name if p.name not in ("", ".") else str(run_dir)


def _flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in d.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flat(value, name + "."))
        else:
            out[name] = value
    return out


def compare_page(
    runs: Sequence[RunLog], comp: Comparison, change_metric: str = "mrr"
) -> dict[str, Any]:
    """The page of a comparison (`harness compare`'s `Comparison` of `runs`): the runs, the
    settings that differ, metrics side by side at the shared k, each run's paired
    differences to the first with their intervals, and the questions whose change
    metric (`change_metric`, as given to `compare_runs`) moved, with every graded chunk of
    the first run (before) and the other (after).
    """
    k = comp.k
    index = {str(r.run_dir): i for i, r in enumerate(runs)}
    by_q = [{q.question.question_id: q for q in r.questions} for r in runs]
    texts = TextTable()
    flats = [_flat(r.header.config) for r in runs]
    keys = sorted({key for f in flats for key in f})
    differing = [
        {"setting": key, "values": [f.get(key) for f in flats]}
        for key in keys
        if len({repr(f.get(key)) for f in flats}) > 1 and key != "path"
    ]
    changes = []
    for c in comp.changes:
        i = index[c.run]
        before, after = by_q[0][c.question_id], by_q[i][c.question_id]
        words = question_words(c.text)
        changes.append(
            {
                "question_id": c.question_id,
                "text": c.text,
                "run": i,
                "before": c.before,
                "after": c.after,
                "better": c.after > c.before,
                "hits_before": [hit_data(jh, words, texts) for jh in before.hits],
                "hits_after": [hit_data(jh, words, texts) for jh in after.hits],
                "outcome_before": outcome(before, k),
                "outcome_after": outcome(after, k),
            }
        )
    return finite(
        {
            "kind": "compare",
            "title": "compare " + " vs ".join(short_name(r.run_dir) for r in runs),
            "k": k,
            "change_metric": change_metric,
            "shared_questions": comp.shared_questions,
            "runs": [
                {
                    "label": f"[{i}]",
                    "name": short_name(r.run_dir),
                    "run_dir": str(r.run_dir),
                    "status": effective_status(r.header),
                    "n_questions": len(r.questions),
                    "judge_calls": r.header.stats.judge_calls,
                }
                for i, r in enumerate(runs)
            ],
            "settings": differing,
            "metrics": [
                {
                    "metric": f"{m}@{k}",
                    "values": [comp.metrics[str(r.run_dir)].get(f"{m}@{k}") for r in runs],
                }
                for m in (*METRIC_NAMES, *COUNTS)
            ],
            "differences": [
                {
                    "metric": d.metric,
                    "run": index[d.run],
                    "mean": d.mean_diff,
                    "low": d.low,
                    "high": d.high,
                    "n": d.n_questions,
                    "significant": not d.low <= 0 <= d.high,
                }
                for d in comp.differences
            ],
            "changes": changes,
            "texts": texts.texts,
        }
    )
