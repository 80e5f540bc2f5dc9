"""Retrieval metrics from judge verdicts: small pure functions, then aggregation.

Every per-question function takes the grades of the ranked hits, best rank first, as
0 (irrelevant), 1 (relevant) or 2 (relevant and complete), and a cut-off k >= 1. Ranks
past the end of the list count as irrelevant, so k larger than the list is allowed.
Because the grades of the top k_max hold those of every smaller k, one retrieval at
k_max yields every `@k` without another judge call.

Our `mrr@k` equals trec_eval's `recip_rank` with qrels graded 0/1/2 at a relevance
threshold of 2; `relevancy_mrr@k` is the same at threshold 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from harness.metrics.source import source_hit, source_mrr
from harness.types import FAILURE_LABELS

GRADE_RELEVANT = 1
GRADE_COMPLETE = 2


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")


def hit_rate(grades: Sequence[int], k: int) -> float:
    """1.0 if some hit in the top k is relevant and complete (grade 2), else 0.0.

    Edge cases: no hits -> 0.0; k past the end of the list looks at every hit.
    """
    _check_k(k)
    return 1.0 if any(g >= GRADE_COMPLETE for g in grades[:k]) else 0.0


def _reciprocal_rank(grades: Sequence[int], k: int, threshold: int) -> float:
    _check_k(k)
    for rank, g in enumerate(grades[:k], start=1):
        if g >= threshold:
            return 1.0 / rank
    return 0.0


def mrr(grades: Sequence[int], k: int) -> float:
    """1 / rank of the first hit in the top k with grade 2 (relevant and complete).

    Formula: max over r <= k with grade_r = 2 of 1/r; 0.0 if there is none, including
    when nothing was retrieved. Averaged over all questions it is the mean reciprocal rank.
    """
    return _reciprocal_rank(grades, k, GRADE_COMPLETE)


def relevancy_mrr(grades: Sequence[int], k: int) -> float:
    """1 / rank of the first hit in the top k that is relevant (grade >= 1); 0.0 if none.

    Averaged over ALL questions, those with no relevant hit contributing 0. (Averaging only
    over questions that had a relevant hit inflates it toward 1; that is not this metric.)
    """
    return _reciprocal_rank(grades, k, GRADE_RELEVANT)


def precision(grades: Sequence[int], k: int) -> float:
    """Share of the top k judged relevant (grade >= 1): relevant_in_top_k / k.

    The denominator is k even when fewer than k hits exist (as trec_eval's P_k): missing
    ranks count as irrelevant. No hits -> 0.0.
    """
    _check_k(k)
    return sum(1 for g in grades[:k] if g >= GRADE_RELEVANT) / k


def ndcg(grades: Sequence[int], k: int) -> float:
    """Normalised discounted cumulative gain at k with linear gain (the grade itself).

    DCG@k = sum_{r=1..k} grade_r / log2(r + 1). The ideal DCG@k uses the same formula on
    all judged grades of the question (the whole retrieved list, which may be longer than
    k) sorted best first: without labels, the best we know is the best order of what was
    retrieved. No hit with grade > 0 -> 0.0.
    """
    _check_k(k)
    dcg = sum(g / math.log2(r + 1) for r, g in enumerate(grades[:k], start=1))
    ideal = sorted(grades, reverse=True)[:k]
    idcg = sum(g / math.log2(r + 1) for r, g in enumerate(ideal, start=1))
    return dcg / idcg if idcg > 0 else 0.0


def context_chars(lengths: Sequence[int], k: int) -> float:
    """Characters in the top k chunks: what a generator would be handed. No hits -> 0."""
    _check_k(k)
    return float(sum(lengths[:k]))


def soft_hit_rate(p_answer: Sequence[float], k: int) -> float:
    """Expected hit rate from the judge's probabilities: 1 - prod_{i<=k} (1 - a_i), with
    a_i = P(chunk i is relevant and complete), chunks taken as independent.

    It moves with the judge's confidence where hit_rate only moves when a verdict flips,
    so it breaks the ties of a saturated judge. Edge cases: no hits -> 0.0; a_i in {0, 1}
    gives hit_rate exactly.
    """
    _check_k(k)
    miss = 1.0
    for a in p_answer[:k]:
        miss *= 1.0 - a
    return 1.0 - miss


def _soft_reciprocal_rank(p: Sequence[float], k: int) -> float:
    _check_k(k)
    total, none_before = 0.0, 1.0
    for rank, a in enumerate(p[:k], start=1):
        total += none_before * a / rank
        none_before *= 1.0 - a
    return total


def soft_mrr(p_answer: Sequence[float], k: int) -> float:
    """Expected reciprocal rank of the first relevant-and-complete chunk:
    sum_{r<=k} (1/r) a_r prod_{j<r} (1 - a_j), a_i as in soft_hit_rate.

    Edge cases: no hits -> 0.0; probabilities of 0 and 1 give mrr exactly.
    """
    return _soft_reciprocal_rank(p_answer, k)


def soft_relevancy_mrr(p_relevant: Sequence[float], k: int) -> float:
    """Expected reciprocal rank of the first relevant chunk: soft_mrr with
    P(relevant) in place of P(relevant and complete); averaged over all questions."""
    return _soft_reciprocal_rank(p_relevant, k)


def average_precision(grades: Sequence[int], k: int) -> float:
    """RAGAS's context precision over the judge's relevance (grade >= 1), `ap@k`.

    Formula: (sum over ranks i <= k holding a relevant chunk of precision@i) / (number of
    relevant chunks in the top k), with precision@i = relevant chunks in the top i / i.
    Example: [not relevant, relevant] -> (0 + 1/2) / 1 = 0.5. Edge cases: no relevant
    chunk in the top k (or no hits) -> 0.0; ranks past the end of the list are irrelevant.
    """
    _check_k(k)
    found, total = 0, 0.0
    for i, g in enumerate(grades[:k], start=1):
        if g >= GRADE_RELEVANT:
            found += 1
            total += found / i
    return total / found if found else 0.0


def relevancy_mrr_found(grades: Sequence[int], k: int) -> float | None:
    """relevancy_mrr, averaged only over questions with a relevant chunk in the top k.

    Per question: 1 / rank of the first relevant hit (grade >= 1) in the top k, and None
    (left out of the question's metrics) when there is none, so `aggregate` averages it
    over the questions that had a relevant hit only: the definition of the reference-free
    guide's own script. It is an aggregation difference, not a per-question one: where
    both exist the value equals relevancy_mrr@k, and the mean is >= relevancy_mrr@k's
    (which counts a question without a relevant hit as 0). No hits -> None.
    """
    _check_k(k)
    if not any(g >= GRADE_RELEVANT for g in grades[:k]):
        return None
    return _reciprocal_rank(grades, k, GRADE_RELEVANT)


def relevant_share(evidence: Sequence[tuple[int | None, int]], k: int) -> float | None:
    """Share of the top-k context's characters that the judge marked as the answer, after
    Braintrust's context relevancy: a big chunk holding one answering sentence scores low.

    `evidence` holds (characters of the judge's evidence or None, characters of the chunk)
    per hit, best rank first; evidence is the sentence the judge copied as the answer
    (extractive judging; 0 for a chunk it copied nothing from), None where the judge mode
    extracts nothing. Formula: sum of evidence characters over the top k / sum of chunk
    characters over the top k. Edge cases: None (left out, not 0) when no chunk of the top
    k has evidence information (a mode that does not extract, or no hits) or the top k
    holds no characters.
    """
    _check_k(k)
    top = evidence[:k]
    if all(e is None for e, _ in top):
        return None
    chars = sum(n for _, n in top)
    return sum(e or 0 for e, _ in top) / chars if chars else None


Direction = Literal["minimize", "maximize"]
"""How Optuna is told to optimise a metric."""


@dataclass(frozen=True)
class Metric:
    """One entry of the metric registry: a per-question function and how to read it."""

    name: str
    fn: Callable[[Sequence[Any], int], float | None]
    """`fn(values, k)`: grades (0/1/2) for quality metrics, chunk lengths for sizes. A
    value of None leaves the metric out of the question's metrics (and so of the mean)."""
    on: str = "grades"
    """What `fn` takes: "grades", "lengths", "source" (per chunk, whether it overlaps
    the question's source span; see metrics/source.py), the judge's probabilities per chunk,
    "p_answer" (relevant and complete) or "p_relevant", or "evidence": (characters of
    the judge's evidence or None, characters of the chunk) per chunk."""
    direction: Direction = "maximize"
    """How a sweep optimises it: "maximize" or "minimize"."""
    interval: bool = True
    """Whether runs report a bootstrap interval for its mean."""
    settles: str | None = None
    """Lazy judging (metrics/lazy.py): "complete" when the question's first
    relevant-and-complete hit in rank order settles the value, "relevant" when its first
    relevant hit does; None when every hit must be judged (sizes and source metrics need
    no verdict at all)."""
    hard: str | None = None
    """A soft metric's counterpart on the yes/no verdicts (soft_mrr -> mrr), shown beside
    it wherever a decision rests on the soft one."""


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("hit_rate", hit_rate, settles="complete"),
        Metric("mrr", mrr, settles="complete"),
        Metric("relevancy_mrr", relevancy_mrr, settles="relevant"),
        Metric("precision", precision),
        Metric("ndcg", ndcg),
        Metric("context_chars", context_chars, on="lengths", direction="minimize", interval=False),
        Metric("soft_hit_rate", soft_hit_rate, on="p_answer", hard="hit_rate"),
        Metric("soft_mrr", soft_mrr, on="p_answer", hard="mrr"),
        Metric("soft_relevancy_mrr", soft_relevancy_mrr, on="p_relevant", hard="relevancy_mrr"),
        Metric("ap", average_precision),
        Metric("relevancy_mrr_found", relevancy_mrr_found, settles="relevant"),
        Metric("relevant_share", relevant_share, on="evidence"),
        Metric("source_hit", source_hit, on="source"),
        Metric("source_mrr", source_mrr, on="source"),
    )
}
"""The metric registry: every per-question metric, reported as `name@k`, in display order.
Adding a metric is one pure function above and one line here."""

METRIC_NAMES = tuple(METRICS)
"""Per-question metrics, each reported as `name@k`. `failures@k` is derived from hit_rate."""

HEADLINE_METRICS = ("soft_mrr", "mrr", "hit_rate")
"""A run's headline at its k, in `run`, `show` and `list`: soft_mrr (the statistic that
ranks configurations best, the default sweep objective) first, its hard twin mrr and
hit_rate beside it."""


def headline(metrics: Mapping[str, float], k: int) -> dict[str, float]:
    """The HEADLINE_METRICS at `k` that `metrics` (a run header's `name@k` means) has, in
    order: a run logged before soft metrics, or judged without probabilities, has no
    soft_mrr."""
    keys = (f"{name}@{k}" for name in HEADLINE_METRICS)
    return {key: metrics[key] for key in keys if key in metrics}


COUNTS = ("failures", "errors")
"""Counts over questions that `aggregate` adds at each k (not per-question means)."""


def question_metrics(
    grades: Sequence[int | None],
    lengths: Sequence[int],
    ks: Sequence[int],
    probs: Sequence[tuple[float, float] | None] | None = None,
    evidence: Sequence[int | None] | None = None,
) -> dict[str, float]:
    """Every metric at every k in `ks` for one question, keyed `name@k`.

    A grade of None is a failed verdict. A metric at k is left out when a failed verdict
    sits in the top k (its value is unknown, never a silent 0); ndcg is left out when any
    grade of the list failed, because its ideal ordering needs them all. `probs` holds
    (P(relevant), P(relevant and complete)) per hit for the soft metrics, which are left
    out without it (or where one of the top k is None). `evidence` holds, per hit, the
    characters the judge copied as the answer (0: none) for the metrics on "evidence",
    or None per hit (or for the whole list) where the judge mode extracts nothing. A
    metric whose function returns None is left out.
    """
    if (
        len(grades) != len(lengths)
        or (probs is not None and len(probs) != len(grades))
        or (evidence is not None and len(evidence) != len(grades))
    ):
        raise ValueError("grades, lengths, probs and evidence must have the same length")
    ev = list(zip(evidence, lengths, strict=True)) if evidence is not None else None
    out: dict[str, float] = {}
    any_failed = any(g is None for g in grades)
    for k in ks:
        top = grades[:k]
        known = None if any(g is None for g in top) else [int(g) for g in top if g is not None]
        top_p = None if probs is None or any(p is None for p in probs[:k]) else probs[:k]
        for m in METRICS.values():
            value: float | None = None
            if m.on == "source":
                continue  # from source spans, not verdicts: metrics.source.source_metrics
            if m.on == "lengths":
                value = m.fn(lengths, k)
            elif m.on in ("p_answer", "p_relevant"):
                if top_p is not None:
                    value = m.fn(
                        [p[1] if m.on == "p_answer" else p[0] for p in top_p if p is not None], k
                    )
            elif m.on == "evidence":
                if ev is not None and known is not None:
                    value = m.fn(ev, k)
            elif m.name == "ndcg":
                # its ideal ordering needs every grade of the list, not just the top k
                if not any_failed:
                    value = m.fn([int(g) for g in grades if g is not None], k)
            elif known is not None:
                value = m.fn(known, k)
            if value is not None:
                out[f"{m.name}@{k}"] = value
    return out


def aggregate(per_question: Sequence[Mapping[str, float]], ks: Sequence[int]) -> dict[str, float]:
    """Mean of each `name@k` over the questions that have it, plus two counts per k.

    - `failures@k`: questions with no relevant-and-complete hit in the top k (a count).
    - `errors@k`: questions whose top k holds a failed verdict (a count, kept apart from
      the means so a judge outage never reads as "not relevant").
    With no question having a metric, that metric is absent rather than 0.
    Where questions carry why they failed (`failures_missed@k`, `failures_split@k`,
    `failures_judge_missed@k`, `failures_multi_part@k` or `failures_not_in_corpus@k` = 1
    on a failed question whose failure was explained, see `failure_count_name`), those
    five are counted at that k too, 0 included; without any, they are absent (failures
    not explained).
    """
    out: dict[str, float] = {}
    for k in ks:
        for name in METRIC_NAMES:
            key = f"{name}@{k}"
            values = [q[key] for q in per_question if key in q]
            if values:
                out[key] = sum(values) / len(values)
        hits = [q[f"hit_rate@{k}"] for q in per_question if f"hit_rate@{k}" in q]
        out[f"failures@{k}"] = float(sum(1 for v in hits if v == 0.0))
        out[f"errors@{k}"] = float(len(per_question) - len(hits))
        keys = [f"{failure_count_name(label)}@{k}" for label in FAILURE_LABELS]
        if any(key in q for q in per_question for key in keys):
            for key in keys:
                out[key] = float(sum(q.get(key, 0.0) for q in per_question))
    return out


def failure_count_name(label: str) -> str:
    """The count a failure label is reported as ("not-in-corpus" -> "failures_not_in_corpus");
    a question explained with that label carries it at the run's k with value 1."""
    return "failures_" + label.replace("-", "_")
