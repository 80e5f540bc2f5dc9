"""Lazy judging, the metrics' side: when a question's objective is settled, and what
every metric is worth when judging stopped there.

A question's hits are judged in rank order. For `mrr@k` and `hit_rate@k` the first
relevant-and-complete hit at rank r settles the question: nothing below r can change its
reciprocal rank or its hit, and `relevancy_mrr@k` is settled by then too (its first
relevant hit is at r or above). For `relevancy_mrr@k` alone the first relevant hit
settles it; for `context_chars@k` (and metrics from source spans) no verdict is needed.
The metrics that do need the unjudged hits (precision, nDCG, AP, the soft metrics past
the stop) are given as bounds: the least and the most they could be, whatever the judge
would have said. A bound whose ends meet is an exact value.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence

from harness.metrics.ids import parse_metric_id
from harness.metrics.ir import (
    GRADE_COMPLETE,
    GRADE_RELEVANT,
    METRICS,
    Metric,
    aggregate,
    question_metrics,
)

TARGETS = ("free", "relevant", "complete")
"""What lazy judging must find per question, weakest first: nothing (the objective needs
no verdict), the first relevant hit, or the first relevant-and-complete hit."""

NOT_MONOTONE = ("ndcg", "ap", "relevancy_mrr_found")
"""Grade metrics that a better grade below the stop can lower as well as raise (a new
relevant hit raises nDCG's ideal; a late relevant hit lowers AP): their bounds come
from every completion of the unjudged grades, not from the two extremes."""

MAX_ENUMERATED = 6
"""Unjudged hits up to which those metrics' bounds are exact (3**6 completions); past
it they are bounded by their range, [0, 1]."""

Bounds = dict[str, tuple[float, float]]
"""`name@k` -> (least, most) of a metric that depends on unjudged hits."""


def metric_settles(metric: Metric) -> str | None:
    """What one metric needs per question under lazy judging (one of TARGETS), or None
    when it needs every hit judged."""
    if metric.settles is not None:
        return metric.settles
    return "free" if metric.on in ("lengths", "source") else None


def lazy_target(objective: Iterable[str]) -> str | None:
    """What an objective (metric ids such as "mrr@k") needs per question: the strongest
    target of its metrics, or None when one of them needs every hit judged (precision,
    nDCG, soft metrics...), so that lazy judging cannot serve it."""
    need = 0
    for metric_id in objective:
        name, _ = parse_metric_id(metric_id)
        if name == "failures":  # counted from hit_rate
            name = "hit_rate"
        target = metric_settles(METRICS[name]) if name in METRICS else None
        if target is None:
            return None
        need = max(need, TARGETS.index(target))
    return TARGETS[need]


def lazy_cutoff(objective: Iterable[str], k_run: int) -> int:
    """The deepest rank an objective looks at in a run retrieving `k_run` chunks: hits
    below it never need a verdict ("mrr@3" in a run at k = 5 looks at 3). Metrics that
    need no verdict do not count; 0 when none needs one."""
    cuts = [0]
    for metric_id in objective:
        name, fixed = parse_metric_id(metric_id)
        name = "hit_rate" if name == "failures" else name
        if name in METRICS and metric_settles(METRICS[name]) == "free":
            continue
        cuts.append(min(k_run, fixed if fixed is not None else k_run))
    return max(cuts)


def is_settled(grades: Sequence[int | None], target: str, k: int) -> bool:
    """True once judging a question's hits in rank order may stop after these grades
    (best rank first; None for a failed verdict): `target` is met by one of them, or
    the objective's cut-off `k` is reached. A failed verdict settles nothing: the hits
    below it are judged, as a complete run would."""
    if target == "free" or len(grades) >= k:
        return True
    need = GRADE_COMPLETE if target == "complete" else GRADE_RELEVANT
    return any(g is not None and g >= need for g in grades)


def question_metrics_partial(
    grades: Sequence[int | None],
    lengths: Sequence[int],
    ks: Sequence[int],
    probs: Sequence[tuple[float, float] | None] | None = None,
    evidence: Sequence[int | None] | None = None,
    judged: int | None = None,
) -> tuple[dict[str, float], Bounds]:
    """(exact metrics, bounds) of a question whose first `judged` hits were judged
    (None: all of them; then it is `question_metrics` with no bounds).

    The unjudged hits may have any grade 0-2, any probability and any evidence. A
    monotone metric's bounds are its value with every unjudged grade 0, P = 0 and no
    evidence, and with every one 2, P = 1 and the whole chunk as evidence; nDCG, AP and
    relevancy_mrr_found take the least and the most over every completion of the grades.
    Where both ends agree the value is exact (the mrr of a question settled at rank r).
    A metric a failed verdict leaves out stays out, as in `question_metrics`."""
    n = len(grades)
    if judged is None or judged >= n:
        return question_metrics(grades, lengths, ks, probs, evidence), {}
    known = list(grades[:judged])
    unknown = n - judged

    def filled(grade: int, p: float, full: bool) -> dict[str, float]:
        gs = known + [grade] * unknown
        ps = None if probs is None else [*probs[:judged], *[(p, p)] * unknown]
        ev = (
            None
            if evidence is None
            else [*evidence[:judged], *(lengths[i] if full else 0 for i in range(judged, n))]
        )
        return question_metrics(gs, lengths, ks, ps, ev)

    low, high = filled(0, 0.0, False), filled(2, 1.0, True)
    exact: dict[str, float] = {}
    bounds: Bounds = {}
    for key in sorted(set(low) | set(high)):
        name, _, at = key.partition("@")
        if name in NOT_MONOTONE:
            values, whole = _completions(name, known, unknown, int(at))
        else:
            values = [v for v in (low.get(key), high.get(key)) if v is not None]
            whole = len(values) == 2
        if not values:
            continue
        lo, hi = min(values), max(values)
        if whole and hi - lo <= 1e-12:
            exact[key] = lo
        else:
            bounds[key] = (lo, hi)
    return exact, bounds


def _completions(
    name: str, known: list[int | None], unknown: int, k: int
) -> tuple[list[float], bool]:
    """The values of a grade metric over every completion of the unjudged grades, and
    whether every completion has one. A failed verdict where the metric looks leaves it
    out (nDCG looks at the whole list, the others at the top k)."""
    looked = known if name == "ndcg" else known[:k]
    if any(g is None for g in looked):
        return [], False
    if unknown > MAX_ENUMERATED:
        return [0.0, 1.0], False
    fn = METRICS[name].fn
    values: list[float] = []
    whole = True
    for tail in itertools.product((0, 1, 2), repeat=unknown):
        value = fn([*known, *tail], k)
        if value is None:
            whole = False
        else:
            values.append(float(value))
    return values, whole


def aggregate_partial(
    per_question: Sequence[Mapping[str, float]],
    per_question_bounds: Sequence[Mapping[str, tuple[float, float]]],
    ks: Sequence[int],
) -> tuple[dict[str, float], Bounds]:
    """(means, bounds) over questions, some judged lazily.

    A metric exact in every question is a mean, as `aggregate` gives it. A metric
    bounded in some question is not a mean at all: it moves to the bounds as (mean of
    the least, mean of the most), an exact question counting its value at both ends.
    failures@k then becomes bounds too when hit_rate@k is (the questions whose hit
    is unknown may or may not fail), and errors@k counts only failed verdicts."""
    means = aggregate(per_question, ks)
    bounded = sorted({key for b in per_question_bounds for key in b})
    if not bounded:
        return means, {}
    out: Bounds = {}
    for key in bounded:
        ends = [
            (q[key], q[key]) if key in q else b[key]
            for q, b in zip(per_question, per_question_bounds, strict=True)
            if key in q or key in b
        ]
        out[key] = (
            sum(lo for lo, _ in ends) / len(ends),
            sum(hi for _, hi in ends) / len(ends),
        )
        means.pop(key, None)
    for k in ks:
        key = f"hit_rate@{k}"
        if key not in out:
            continue
        exact = [q[key] for q in per_question if key in q]
        open_ = [
            b[key]
            for q, b in zip(per_question, per_question_bounds, strict=True)
            if key not in q and key in b
        ]
        failed = sum(1 for v in exact if v == 0.0)
        out[f"failures@{k}"] = (
            float(failed),
            float(failed + sum(1 for lo, _ in open_ if lo == 0.0)),
        )
        means.pop(f"failures@{k}", None)
        means[f"errors@{k}"] = float(len(per_question) - len(exact) - len(open_))
    return means, out
