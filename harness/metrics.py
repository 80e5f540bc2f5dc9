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
from collections.abc import Mapping, Sequence

METRIC_NAMES = (
    "hit_rate",
    "mrr",
    "relevancy_mrr",
    "precision",
    "ndcg",
    "context_chars",
)
"""Per-question metrics, each reported as `name@k`. `failures@k` is derived from hit_rate."""

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


def question_metrics(
    grades: Sequence[int | None], lengths: Sequence[int], ks: Sequence[int]
) -> dict[str, float]:
    """Every metric at every k in `ks` for one question, keyed `name@k`.

    A grade of None is a failed verdict. A metric at k is left out when a failed verdict
    sits in the top k (its value is unknown, never a silent 0); ndcg is left out when any
    grade of the list failed, because its ideal ordering needs them all.
    """
    if len(grades) != len(lengths):
        raise ValueError("grades and lengths must have the same length")
    out: dict[str, float] = {}
    any_failed = any(g is None for g in grades)
    for k in ks:
        top = grades[:k]
        out[f"context_chars@{k}"] = context_chars(lengths, k)
        if any(g is None for g in top):
            continue
        known = [int(g) for g in top]  # type: ignore[arg-type]
        out[f"hit_rate@{k}"] = hit_rate(known, k)
        out[f"mrr@{k}"] = mrr(known, k)
        out[f"relevancy_mrr@{k}"] = relevancy_mrr(known, k)
        out[f"precision@{k}"] = precision(known, k)
        if not any_failed:
            out[f"ndcg@{k}"] = ndcg([int(g) for g in grades], k)  # type: ignore[arg-type]
    return out


def aggregate(per_question: Sequence[Mapping[str, float]], ks: Sequence[int]) -> dict[str, float]:
    """Mean of each `name@k` over the questions that have it, plus two counts per k.

    - `failures@k`: questions with no relevant-and-complete hit in the top k (a count).
    - `errors@k`: questions whose top k holds a failed verdict (a count, kept apart from
      the means so a judge outage never reads as "not relevant").
    With no question having a metric, that metric is absent rather than 0.
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
    return out


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """(mean of b - a, low, high): a percentile bootstrap interval for the mean paired
    difference, resampling questions with replacement (the same questions in a and b).

    With diffs d_i = b_i - a_i, each resample draws n indices with replacement and takes
    the mean of d over them; the interval is the (1-c)/2 and (1+c)/2 quantiles of those
    means. Edge cases: n = 0 raises ValueError; identical diffs give a zero-width interval.
    """
    import numpy as np

    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    if not a:
        raise ValueError("no paired values")
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(d), size=(n_resamples, len(d)))
    means = d[idx].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(d.mean()), float(low), float(high)


# ---------------------------------------------------------------- agreement and intervals


def confusion(judge: Sequence[bool], human: Sequence[bool]) -> dict[str, int]:
    """Counts of (judge, human) pairs: tp = both yes, fp = judge yes / human no,
    fn = judge no / human yes, tn = both no."""
    if len(judge) != len(human):
        raise ValueError("judge and human labels must pair up")
    out = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    for j, h in zip(judge, human, strict=True):
        out[("t" if j == h else "f") + ("p" if j else "n")] += 1
    return out


def cohen_kappa(judge: Sequence[bool], human: Sequence[bool]) -> float:
    """Cohen's kappa for two binary raters: (p_o - p_e) / (1 - p_e), where p_o is the
    observed agreement and p_e = p_j(yes) p_h(yes) + p_j(no) p_h(no) the agreement expected
    by chance from each rater's own rates.

    Edge cases: no pairs raises ValueError; when p_e = 1 (both raters gave one and the same
    label to everything) kappa is 1.0 if they agree everywhere, which they then do.
    """
    n = len(judge)
    if n == 0 or n != len(human):
        raise ValueError("kappa needs the same, non-zero number of labels from both raters")
    c = confusion(judge, human)
    p_o = (c["tp"] + c["tn"]) / n
    pj, ph = (c["tp"] + c["fp"]) / n, (c["tp"] + c["fn"]) / n
    p_e = pj * ph + (1 - pj) * (1 - ph)
    return 1.0 if p_e == 1 else (p_o - p_e) / (1 - p_e)


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b between two scorings of the same items (ties handled):
    (concordant - discordant) / sqrt((n0 - ties_x) (n0 - ties_y)), n0 = n (n - 1) / 2.

    Edge cases: fewer than two items raises ValueError; if either side is constant the
    denominator is 0 and tau is reported as 0.0 (no ordering to agree with).
    """
    n = len(x)
    if n < 2 or n != len(y):
        raise ValueError("tau needs two or more items scored on both sides")
    conc = disc = ties_x = ties_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                ties_x += 1
                ties_y += 1
            elif dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                conc += 1
            else:
                disc += 1
    n0 = n * (n - 1) / 2
    denom = math.sqrt((n0 - ties_x) * (n0 - ties_y))
    return (conc - disc) / denom if denom else 0.0


def bootstrap_mean_ci(
    values: Sequence[float], *, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of a mean, resampling the values (questions) with
    replacement. One value gives a zero-width interval; none raises ValueError."""
    import numpy as np

    if not values:
        raise ValueError("no values")
    v = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, len(v), size=(n_resamples, len(v)))].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(low), float(high)


def ppi_mean(
    judge_all: Sequence[float],
    judge_labelled: Sequence[float],
    human_labelled: Sequence[float],
    *,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """Prediction-powered estimate of a mean (Angelopoulos et al. 2023; as in ARES):
    theta = mean(judge over all N) + mean(human - judge over the n labelled), with the
    normal interval theta +- z * sqrt(var(judge_all) / N + var(human - judge) / n).

    The judge's systematic bias is measured on the labelled sample and removed; the
    interval widens with the judge's disagreement. n < 2 raises ValueError.
    """
    from statistics import NormalDist, fmean, variance

    n = len(human_labelled)
    if n < 2 or n != len(judge_labelled) or not judge_all:
        raise ValueError("PPI needs at least two labelled items and some unlabelled ones")
    rect = [h - j for h, j in zip(human_labelled, judge_labelled, strict=True)]
    theta = fmean(judge_all) + fmean(rect)
    var_all = variance(judge_all) if len(judge_all) > 1 else 0.0
    se = math.sqrt(var_all / len(judge_all) + variance(rect) / n)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    return theta, theta - z * se, theta + z * se


CI_METRICS = ("hit_rate", "mrr", "relevancy_mrr", "precision", "ndcg")


def aggregate_ci(
    per_question: Sequence[Mapping[str, float]],
    ks: Sequence[int],
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> dict[str, tuple[float, float]]:
    """A bootstrap interval (over questions) for each mean in CI_METRICS at each k, over
    the questions that have the metric (as `aggregate` averages them)."""
    out: dict[str, tuple[float, float]] = {}
    for k in ks:
        for name in CI_METRICS:
            key = f"{name}@{k}"
            values = [q[key] for q in per_question if key in q]
            if values:
                out[key] = bootstrap_mean_ci(
                    values, n_resamples=n_resamples, confidence=confidence, seed=seed
                )
    return out
