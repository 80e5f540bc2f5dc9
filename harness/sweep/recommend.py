"""The decision at the end of a sweep: which trial to pick, and how sure that is.

The best trial by the objective is rarely better than its neighbours by more than the
questions can tell. So every complete trial is tested against the best with a paired
sign-flip test over the questions both answered, the p-values are adjusted for the
number of trials compared (Holm), and of the best and the trials the test cannot
separate from it the cheapest is recommended: the fewest characters handed to a
generator (context_chars at the trial's k), then the smallest k, then no reranker.

Beside the pick, the ranking's stability: the questions split at random into halves,
how closely the halves rank the distinct settings (Kendall tau) and how often they put
the same one first; on few or alike questions, another question set would pick
otherwise.

The tests and the pick use the sweep's objective, by default soft_mrr@k: the statistic
that ranked configurations best against labels (#22). When it is a soft metric, its
yes/no counterpart (mrr@k) is quoted beside it in the reason, so the saturated hard
count stays visible without deciding anything.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from statistics import NormalDist, fmean, variance
from typing import Any

import numpy as np

from harness.log import RankingStability, Recommendation, TrialRecord, TrialTest
from harness.metrics import (
    direction,
    hard_twin,
    holm,
    metric_key,
    parse_metric_id,
    split_half,
)

ALPHA = 0.05
"""Holm-adjusted p-values below this separate a trial from the best."""
POWER = 0.8
"""The power the sample-size estimate plans for."""
TEST = (
    "paired two-sided sign-flip permutation test over shared questions (exact up to 13 "
    "questions, else 10000 draws, seed 0), Holm-adjusted"
)
"""The test in words, as the recommendation records it."""

STABILITY_DRAWS = 200
"""Random half-splits of the questions behind a recommendation's ranking stability."""

PValue = Callable[[int, int], tuple[float, int] | None]
"""`p_value(best, other)`: (two-sided p-value, questions tested), None if untestable."""


def context_key(k: int) -> str:
    """The header key of the characters a trial with this k hands a generator."""
    return f"context_chars@{k}"


def cost_key(params: Mapping[str, Any], metrics: Mapping[str, float]) -> tuple[float, int, int]:
    """How much a trial costs to use, to be minimised: (mean context_chars at its k, k,
    1 if it reranks else 0). A trial whose context size is unknown sorts last on it."""
    k = int(params["k"])
    chars = metrics.get(context_key(k))
    return (
        float(chars) if chars is not None else math.inf,
        k,
        0 if params.get("reranker", "none") == "none" else 1,
    )


def cheapest(
    candidates: Sequence[TrialRecord],
    metrics: Mapping[int, Mapping[str, float]],
    prefer: int | None = None,
) -> TrialRecord:
    """The candidate with the smallest `cost_key`; among equals, `prefer` (the best
    trial), then the lowest trial number. Raises ValueError when there is none."""
    if not candidates:
        raise ValueError("no candidate trials")
    return min(
        candidates,
        key=lambda t: (cost_key(t.params, metrics.get(t.number, {})), t.number != prefer, t.number),
    )


def more_questions(
    diffs: Sequence[float], *, alpha: float = ALPHA, power: float = POWER
) -> int | None:
    """Questions beyond the len(diffs) already used that a two-sided paired test at
    `alpha` would need to detect the observed mean difference with `power`.

    Paired normal approximation: n = (z_{1-alpha/2} + z_{power})^2 var(d) / mean(d)^2 (var
    with n - 1 in the denominator), and the estimate is ceil(n) - len(diffs), at least 0.
    None when mean(d) = 0 (no difference to detect) or there is no diff.
    """
    if not diffs:
        return None
    mean = fmean(diffs)
    if mean == 0:
        return None
    var = variance(diffs) if len(diffs) > 1 else 0.0
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    needed = z * z * var / (mean * mean)
    return max(0, math.ceil(needed - 1e-9) - len(diffs))


def ranking_stability(
    ranked: Sequence[TrialRecord],
    per_question: Mapping[int, Mapping[str, float]],
    *,
    minimize: bool = False,
    draws: int = STABILITY_DRAWS,
) -> RankingStability | None:
    """`split_half` (split-half taus and same winner) of the trials `ranked` over the
    questions every one of them has a finite value for: would another question set rank
    these trials alike, and put the same one first (the lowest with `minimize`)? A
    setting tried twice counts once (its first trial). None with fewer than 3 distinct
    settings or 4 such questions."""
    seen: set[str] = set()
    trials = []
    for t in ranked:
        key = repr(sorted(t.params.items()))
        if per_question.get(t.number) and key not in seen:
            seen.add(key)
            trials.append(t)
    if len(trials) < 3:
        return None
    shared = set.intersection(*(set(per_question[t.number]) for t in trials))
    questions = sorted(
        q for q in shared if all(math.isfinite(per_question[t.number][q]) for t in trials)
    )
    if len(questions) < 4:
        return None
    sign = -1.0 if minimize else 1.0  # first = highest score; tau does not care
    scores = [[sign * per_question[t.number][q] for q in questions] for t in trials]
    taus, same_winner = split_half(scores, draws=draws)
    low, mid, high = np.quantile(taus, [0.1, 0.5, 0.9])
    return RankingStability(
        trials=len(trials),
        questions=len(questions),
        draws=draws,
        tau=float(mid),
        tau_low=float(low),
        tau_high=float(high),
        same_winner=same_winner,
    )


def _num(value: float) -> str:
    return f"{value:.3f}" if abs(value) < 100 else f"{value:.0f}"


def _hard_beside(
    objective: str,
    trials: Sequence[TrialRecord],
    metrics: Mapping[int, Mapping[str, float]],
) -> str:
    """The objective's yes/no counterpart for these trials (first the one the sentence
    is about) as `mrr@k 0.900 vs 0.875`, or "" when it has none or it is unknown."""
    hard = hard_twin(objective)
    if hard is None:
        return ""
    values = []
    for t in trials:
        v = metrics.get(t.number, {}).get(metric_key(hard, int(t.params["k"])))
        if v is None:
            return ""
        values.append(_num(v))
    return f"{hard} {' vs '.join(values)}"


def _reason(
    objective: str,
    rec: TrialRecord,
    best: TrialRecord,
    tests: Mapping[int, TrialTest],
    ties: Sequence[int],
    metrics: Mapping[int, Mapping[str, float]],
    alpha: float,
) -> str:
    vb = _num((best.values or [0.0])[0])
    if rec.number == best.number:
        beside = _hard_beside(objective, [best], metrics)
        beside = f"; {beside}" if beside else ""
        head = f"trial {best.number} is recommended: it is the best ({objective} {vb}{beside})"
        if ties:
            listed = ("trials " if len(ties) > 1 else "trial ") + ", ".join(str(n) for n in ties)
            return (
                f"{head} and none of the trials a paired test cannot separate from it "
                f"({listed}) is cheaper to use"
            )
        if tests:
            return (
                f"{head} and a paired test separates it from every other complete trial "
                f"(Holm-adjusted p < {alpha:g})"
            )
        return f"{head} and no other complete trial could be compared with it"
    t = tests[rec.number]
    beside = _hard_beside(objective, [rec, best], metrics)
    head = (
        f"trial {rec.number} is recommended: it cannot be told apart from the best (trial "
        f"{best.number}, {objective} {_num(t.value)} vs {vb}, Holm-adjusted p = {t.p_holm:.2f})"
        + (f" ({beside})" if beside else "")
    )
    rc, rk, _ = cost_key(rec.params, metrics.get(rec.number, {}))
    bc, bk, _ = cost_key(best.params, metrics.get(best.number, {}))
    if rc < bc:
        saving = (
            f"hands the generator {100 * (bc - rc) / bc:.0f}% fewer characters "
            f"({rc:.0f} vs {bc:.0f} per question)"
            if math.isfinite(bc) and bc > 0
            else f"hands the generator fewer characters ({rc:.0f} per question)"
        )
    elif rk < bk:
        saving = f"retrieves fewer chunks (k = {rk} vs {bk}) for as many characters"
    else:
        saving = f"needs no reranker (the best uses {best.params.get('reranker')})"
    return f"{head} and {saving}"


def recommend(
    objective: str,
    ranked: Sequence[TrialRecord],
    per_question: Mapping[int, Mapping[str, float]],
    metrics: Mapping[int, Mapping[str, float]],
    p_value: PValue,
    *,
    alpha: float = ALPHA,
) -> Recommendation | None:
    """The recommendation over the complete trials `ranked` best first (by `objective`,
    a single metric id), from their per-question objective values, their header metrics
    and `p_value(best, other)` (cached by the caller: it changes only with the best).

    Trials that share fewer than two questions with the best cannot be tested and are
    left out of the comparison. None when no trial is complete.
    """
    if not ranked:
        return None
    best = ranked[0]
    tested: list[tuple[TrialRecord, float, int]] = []
    for t in ranked[1:]:
        res = p_value(best.number, t.number)
        if res is not None:
            tested.append((t, res[0], res[1]))
    adjusted = holm([p for _, p, _ in tested])
    tests = {
        t.number: TrialTest(t.number, float((t.values or [math.nan])[0]), n, p, adj)
        for (t, p, n), adj in zip(tested, adjusted, strict=True)
    }
    ties = sorted(n for n, tt in tests.items() if tt.p_holm >= alpha)
    by_number = {t.number: t for t in ranked}
    rec = cheapest([best, *(by_number[n] for n in ties)], metrics, prefer=best.number)
    runner_up = ranked[1] if len(ranked) > 1 else None
    more = None
    if runner_up is not None:
        a, b = per_question.get(best.number, {}), per_question.get(runner_up.number, {})
        more = more_questions([a[q] - b[q] for q in a if q in b], alpha=alpha)
    chars = cost_key(rec.params, metrics.get(rec.number, {}))[0]
    return Recommendation(
        trial=rec.number,
        params=dict(rec.params),
        reason=_reason(objective, rec, best, tests, ties, metrics, alpha),
        best=best.number,
        objective=objective,
        alpha=alpha,
        test=TEST,
        indistinguishable=ties,
        comparisons=sorted(tests.values(), key=lambda tt: tt.trial),
        context_chars=chars if math.isfinite(chars) else None,
        runner_up=runner_up.number if runner_up is not None else None,
        more_questions=more,
        stability=ranking_stability(
            ranked, per_question, minimize=direction(parse_metric_id(objective)[0]) == "minimize"
        ),
    )
