"""A judge calibration without labels, from the corpus itself (`harness calibrate --exam`).

A team without labels has its documents and the judge exam `harness generate` writes:
each generated question with the passage it was written from (a true answer) and a
passage of another document (a non-answer, `generate/exam.py`). The corpus adds harder
non-answers for free, the **near misses**: for each question, the best BM25 chunk of the
source's own document and the best BM25 chunks of the whole corpus that do not overlap
the source span. Those are what retrieval really puts beside an answer, so they are the
false positives a run meets; unrelated passages alone would make any judge look right.

A near miss is not surely a non-answer: a corpus may say the same thing twice, and a
generic question may be answered elsewhere. So:

- a near miss holding most of the source passage's text (`DUPLICATE_SHARE` of its word
  5-grams) is an answer by construction: excluded (never judged, counted);
- for "relevant", near misses are left out altogether (a chunk of the same document on
  the same subject is often relevant: it would be a wrong "no");
- for "complete", the rest are non-answers **down-weighted** by `NEAR_WEIGHT` (0.5): each
  counts half an unrelated passage in the fit and in the false-positive rate. How often
  the judge calls them answers is measured and reported (`near_yes`), beside the FPR on
  unrelated passages alone, so a reader sees both ends.

Per criterion the fit is Platt scaling (`analysis.calibrate.fit_platt`) with the two
classes weighed equally, so the cut it implies (calibrated P = 0.5) does not depend on
the exam's mix of answers and non-answers: it is the raw P(yes) where an answer and a
non-answer are equally likely to get it. A judge without logprobs gets rates and no map.
The file is the one `judge.calibration` reads.

What a run does with it is the file's `applies`. By default ("rates") a run keeps the
judge's verdicts as it gave them, and the file holds the TPR and FPR of those verdicts on
the exam (`Calibration.rates`, basis "exam"): the run's trust statement corrects its
judged rates with them. With `--apply verdicts` runs re-cut every verdict at the map's
threshold and the file holds the re-cut verdicts' rates. "rates" is the default because
the cut, measured on real queries with labels, moved verdicts away from the labels: on
the TREC DL 2019 development half the complete-rate went from 0.86 to 0.33 (labels
0.64) and kappa from 0.54 / 0.32 to 0.39 / 0.18; an exam's answers are easier than real
ones, so its cut lands too high (docs/pages/judging.md).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.analysis.calibrate import check_fit, error_rates, fit_platt, fit_point, judged_yes
from harness.errors import HarnessError
from harness.generate.exam import ExamItem, read_exam
from harness.judge.calibration import Calibration, PlattMap, judge_key
from harness.metrics.source import overlaps
from harness.types import Chunk, Verdict
from harness.words import words

NEAR_PER_QUESTION = 2
"""Near misses per exam question: the best of the source's own document, then the best
of the corpus (BM25, none overlapping the source span)."""
NEAR_WEIGHT = 0.5
"""A near miss's weight as a non-answer for "complete" (an unrelated passage weighs 1)."""
DUPLICATE_SHARE = 0.5
"""A near miss holding this share of the source passage's word 5-grams repeats it: an
answer, excluded."""


@dataclass(frozen=True)
class ExamPair:
    """One (question, passage) pair judged for the calibration, with its truth."""

    question_id: str
    question: str
    passage: str
    kind: str
    """"source" (an answer), "unrelated" (another document's passage) or "near"."""
    passage_id: str

    @property
    def truth(self) -> bool:
        """True for the source passage, False for every other kind."""
        return self.kind == "source"


def _shingles(text: str, n: int = 5) -> set[tuple[str, ...]]:
    seq = words(text)
    if len(seq) < n:
        return {tuple(seq)} if seq else set()
    return {tuple(seq[i : i + n]) for i in range(len(seq) - n + 1)}


def duplicate_share(source: str, candidate: str) -> float:
    """Share of the source passage's word 5-grams (lower-cased) found in the candidate:
    1.0 when the candidate repeats the whole source, 0.0 when it shares no run of five
    words. An empty source gives 0.0."""
    src = _shingles(source)
    return len(src & _shingles(candidate)) / len(src) if src else 0.0


def near_misses(
    items: Sequence[ExamItem], chunks: Sequence[Chunk], per_question: int = NEAR_PER_QUESTION
) -> tuple[list[ExamPair], int]:
    """(near-miss pairs, duplicates excluded) for the exam's source items: per question,
    the best BM25 chunk of the source's document, then the best of the corpus, none
    overlapping the source span, none repeating the source (`duplicate_share`)."""
    import numpy as np
    from rank_bm25 import BM25Okapi

    from harness.retrieval.rerankers.base import tokenize

    sources = [i for i in items if i.kind == "source"]
    if not sources or not chunks or per_question < 1:
        return [], 0
    bm25 = BM25Okapi([tokenize(c.text) or [""] for c in chunks])
    out: list[ExamPair] = []
    duplicates = 0
    for item in sources:
        order = np.argsort(-bm25.get_scores(tokenize(item.question)), kind="stable")
        free = [chunks[i] for i in order if not overlaps(chunks[i], item.span)]
        same_doc = [c for c in free if c.doc_id == item.span.doc_id][:1]
        picked: list[Chunk] = []
        for c in [*same_doc, *free]:
            if len(picked) == per_question:
                break
            if c in picked:
                continue
            if duplicate_share(item.passage, c.text) >= DUPLICATE_SHARE:
                duplicates += 1
                continue
            picked.append(c)
        out += [
            ExamPair(item.question_id, item.question, c.text, "near", c.chunk_id) for c in picked
        ]
    return out, duplicates


def exam_pairs(items: Sequence[ExamItem], near: Sequence[ExamPair] = ()) -> list[ExamPair]:
    """The exam's items as pairs, followed by the near misses."""
    return [
        *(ExamPair(i.question_id, i.question, i.passage, i.kind, i.passage_id) for i in items),
        *near,
    ]


def _weight(pair: ExamPair, criterion: str, near_weight: float) -> float:
    """A pair's weight for a criterion: 0 leaves it out (near misses for "relevant")."""
    if pair.kind != "near":
        return 1.0
    return 0.0 if criterion == "relevant" else near_weight


def fit_exam(
    pairs: Sequence[ExamPair],
    verdicts: Sequence[Verdict],
    *,
    near_weight: float = NEAR_WEIGHT,
    judge: str = "",
    source: dict[str, Any] | None = None,
    applies: str = "rates",
) -> Calibration:
    """Maps and error rates per criterion from judged exam pairs (see the module's
    docstring). The rates are those of the verdicts runs will report: as judged
    (`applies` "rates") or re-cut by the maps ("verdicts"). A criterion whose pairs have
    no probability gets no map (the judge gave no logprobs) and keeps its rates as
    judged; a degenerate fit raises HarnessError. Raises HarnessError when the exam has
    no answer or no non-answer judged."""
    if len(pairs) != len(verdicts):
        raise ValueError("one verdict per exam pair")
    maps: dict[str, PlattMap] = {}
    for crit in ("relevant", "complete"):
        rows = []
        for pair, v in zip(pairs, verdicts, strict=True):
            w = _weight(pair, crit, near_weight)
            p = fit_point(v.relevant if crit == "relevant" else v.complete)
            if w > 0 and p is not None:
                rows.append((p, pair.truth, w))
        pos = sum(w for _, y, w in rows if y)
        neg = sum(w for _, y, w in rows if not y)
        if pos == 0 or neg == 0:
            continue
        # both classes weigh the same in the fit: the cut is not the exam's mix
        ws = [w * (0.5 / pos if y else 0.5 / neg) * len(rows) for _, y, w in rows]
        ps = [p for p, _, _ in rows]
        maps[crit] = check_fit(crit, fit_platt(ps, [y for _, y, _ in rows], weights=ws), ps)
    cal = Calibration(
        criteria=maps,
        judge=judge,
        created_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        source=source or {},
        basis="exam",
    )
    calibrated = [cal.apply_verdict(v) for v in verdicts]  # the maps' cut, for the file
    reported = verdicts if applies == "rates" else calibrated
    rows4 = []
    for crit in ("relevant", "complete"):
        for pair, v in zip(pairs, reported, strict=True):
            yes, w = judged_yes(v, crit), _weight(pair, crit, near_weight)
            if yes is not None and w > 0:
                rows4.append((crit, yes, pair.truth, w))
    rates = error_rates(rows4, "exam")
    if not rates:
        raise HarnessError(
            "calibrate --exam: the exam has no judged answer and non-answer (every verdict "
            "failed, or the exam holds one kind only)"
        )
    for crit, r in rates.items():
        extra = _side_rates(pairs, verdicts, calibrated, crit)
        rates[crit] = replace(r, extra={**extra, "near_weight": near_weight})
    return replace(cal, rates=rates, applies=applies)


def _side_rates(
    pairs: Sequence[ExamPair],
    raw: Sequence[Verdict],
    calibrated: Sequence[Verdict],
    crit: str,
) -> dict[str, Any]:
    """The yes-rates a reader weighs the FPR with: on unrelated passages, and on near
    misses (raw and calibrated), each over the pairs judged."""
    out: dict[str, Any] = {}
    for kind in ("unrelated", "near"):
        for label, vs in (("", calibrated), ("_raw", raw)):
            answers = [
                judged_yes(v, crit) for p, v in zip(pairs, vs, strict=True) if p.kind == kind
            ]
            said = [y for y in answers if y is not None]
            if said:
                out[f"{kind}_yes{label}"] = round(sum(said) / len(said), 4)
                out[f"{kind}_pairs"] = len(said)
    return out


def calibrate_from_exam(
    exam_file: str | Path,
    chunks: Sequence[Chunk],
    judge: Any,
    criteria: Any,
    *,
    cache: Any = None,
    concurrency: int | None = None,
    near: int = NEAR_PER_QUESTION,
    near_weight: float = NEAR_WEIGHT,
    applies: str = "rates",
) -> tuple[Calibration, dict[str, Any]]:
    """Judge the exam of `exam_file` plus its near misses among `chunks` (the corpus
    chunked as the experiment chunks it) through the verdict cache, and fit the
    calibration (`fit_exam`, `applies`). Returns it with what was judged and what it
    cost."""
    from harness.judge import JudgeStats, judge_pairs

    if not 0 <= near_weight <= 1:
        raise HarnessError(f"--near-weight: expected 0..1, got {near_weight}")
    items = read_exam(exam_file)
    near_pairs, duplicates = near_misses(items, chunks, near)
    pairs = exam_pairs(items, near_pairs)
    stats = JudgeStats()
    verdicts = judge_pairs(
        [(p.question, p.passage) for p in pairs],
        judge,
        criteria=criteria,
        cache=cache,
        stats=stats,
        concurrency=concurrency,
    )
    counts = {k: sum(1 for p in pairs if p.kind == k) for k in ("source", "unrelated", "near")}
    info = {
        "exam": str(exam_file),
        "pairs": counts,
        "near_duplicates_excluded": duplicates,
        "near_weight": near_weight,
        "errors": sum(1 for v in verdicts if v.grade is None),
    }
    cal = fit_exam(
        pairs,
        verdicts,
        near_weight=near_weight,
        judge=judge_key(judge.spec),
        source={k: v for k, v in info.items() if k != "errors"},
        applies=applies,
    )
    return cal, {**info, "stats": stats.to_dict()}


def format_exam_calibration(
    cal: Calibration, path: Path, info: dict[str, Any], experiment: Path | None = None
) -> str:
    """`calibrate --exam`: what was judged, then per criterion the map's cut (applied or
    not) and the TPR / FPR of the verdicts runs will report, with the near misses'
    yes-rate. The closing line names the file as `judge.calibration` takes it: relative
    to `experiment`'s folder."""
    c = info["pairs"]
    lines = [
        f"calibration written to {path} (from the judge exam {info['exam']}, no labels): "
        f"{c['source']} answers, {c['unrelated']} unrelated passages, {c['near']} near misses "
        f"(weight {info['near_weight']:g} for complete, left out for relevant; "
        f"{info['near_duplicates_excluded']} repeating the source excluded)",
    ]
    for crit in ("relevant", "complete"):
        m, r = cal.criteria.get(crit), cal.rates.get(crit)
        if r is None:
            lines.append(f"{crit}: not measured (no judged answer and non-answer)")
            continue
        cut = (
            "no map (no probabilities: verdicts as judged)"
            if m is None
            else "no ranking signal (constant map)"
            if m.threshold is None
            else f"yes when raw P(yes) > {m.threshold:.3f}"
            if cal.applies == "verdicts"
            else f"verdicts as judged (the map's cut, raw P(yes) > {m.threshold:.3f}, not applied)"
        )
        near = r.extra.get("near_yes_raw" if cal.applies == "rates" else "near_yes")
        near_part = f"; near misses called yes {near:.0%}" if near is not None else ""
        lines.append(
            f"{crit}: {cut}; TPR {r.tpr:.2f} on {r.positives}, FPR {r.fpr:.2f} on "
            f"{r.negatives}{near_part}"
        )
    setting = (
        Path(os.path.relpath(path.resolve(), experiment.resolve().parent)).as_posix()
        if experiment is not None
        else str(path)
    )
    lines.append(
        f'apply it with judge.calibration = "{setting}" (relative to the experiment file): '
        "runs then report these error rates and a corrected complete-rate"
        + ("" if cal.applies == "rates" else ", on verdicts re-cut by the maps")
    )
    return "\n".join(lines)
