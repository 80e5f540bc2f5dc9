"""Statistics over questions: one bootstrap, agreement (confusion, kappa, tau) and PPI.

Every interval here comes from `bootstrap_indices`: resample the n questions with
replacement, n_resamples times, from one seeded generator, and read the percentile
interval of the statistic. Questions are the unit of resampling everywhere because the
verdicts of one question are not independent.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np

from harness.metrics.ir import METRICS


def bootstrap_indices(n: int, *, n_resamples: int = 2000, seed: int = 0) -> np.ndarray:
    """An (n_resamples, n) array of indices drawn with replacement from range(n)."""
    if n < 1:
        raise ValueError("no values to resample")
    return np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))


def percentile_interval(samples: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """The (1-c)/2 and (1+c)/2 quantiles of a statistic's bootstrap samples."""
    alpha = (1 - confidence) / 2
    low, high = np.quantile(np.asarray(samples, dtype=float), [alpha, 1 - alpha])
    return float(low), float(high)


def bootstrap_mean_ci(
    values: Sequence[float], *, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of a mean, resampling the values (questions) with
    replacement. One value gives a zero-width interval; none raises ValueError."""
    if not len(values):
        raise ValueError("no values")
    v = np.asarray(values, dtype=float)
    idx = bootstrap_indices(len(v), n_resamples=n_resamples, seed=seed)
    return percentile_interval(v[idx].mean(axis=1), confidence)


def bootstrap_ci(
    n: int,
    statistic: Callable[[np.ndarray], float | None],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile interval of any statistic of n items (questions): `statistic(indices)`
    is computed on each resample; resamples where it is None are dropped (None if all)."""
    samples = [
        s
        for row in bootstrap_indices(n, n_resamples=n_resamples, seed=seed)
        if (s := statistic(row)) is not None
    ]
    return percentile_interval(samples, confidence) if samples else None


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
    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    if not a:
        raise ValueError("no paired values")
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    low, high = bootstrap_mean_ci(d, n_resamples=n_resamples, confidence=confidence, seed=seed)
    return float(d.mean()), low, high


def paired_permutation_p(
    a: Sequence[float],
    b: Sequence[float],
    *,
    n_resamples: int = 10000,
    seed: int = 0,
) -> float:
    """Two-sided p-value of a paired sign-flip (permutation) test of mean(b - a) = 0.

    With diffs d_i = b_i - a_i and T = |mean(d)|: under the null that a and b are
    exchangeable within each question, every sign vector s in {-1, 1}^n is equally likely,
    so p = #{s : |mean(s * d)| >= T} / 2^n. With 2^n <= n_resamples every sign vector is
    enumerated (exact); otherwise s is drawn n_resamples times from one seeded generator
    and p = (1 + #{draws at or beyond T}) / (1 + n_resamples), which is never 0.

    Why this test: per-question retrieval metrics are few, bounded and discrete (MRR takes
    1, 1/2, 1/3, ... or 0), where a t-test's normal approximation is poor; the sign-flip
    test assumes only symmetry under the null, is exact for small n, and gives the
    p-value that Holm's adjustment needs (a bootstrap percentile interval gives none).

    Edge cases: lengths must match and be >= 1 (ValueError); all diffs 0 give p = 1.
    """
    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    if not a:
        raise ValueError("no paired values")
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    n = len(d)
    observed = abs(float(d.mean()))
    if observed == 0.0:
        return 1.0
    # A hair of slack, so a resample equal to the observed mean up to float error counts.
    threshold = observed - 1e-12 * max(1.0, observed)
    if 2**n <= n_resamples:
        bits = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
        signs = 1.0 - 2.0 * bits
        return float(np.mean(np.abs(signs @ d) / n >= threshold))
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(n_resamples, n))
    beyond = int(np.sum(np.abs(signs @ d) / n >= threshold))
    return (1 + beyond) / (1 + n_resamples)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of m p-values, in the order given.

    Sort ascending, p_(1) <= ... <= p_(m); then
    adjusted_(i) = max over j <= i of min(1, (m - j + 1) p_(j)),
    and each adjusted value goes back to its p-value's place. Rejecting where adjusted < alpha
    keeps the family-wise error rate at alpha for any dependence between the tests.

    Edge cases: no p-values give []; ties keep their input order (a stable sort).
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for j, i in enumerate(order, start=1):
        running = max(running, min(1.0, (m - j + 1) * float(p_values[i])))
        adjusted[i] = running
    return adjusted


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


def auc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """Area under the ROC curve: the probability that a random positive scores above a
    random negative, ties counting one half (the Mann-Whitney U / (n+ n-)).

    Edge cases: None when there are no positives or no negatives (nothing to rank);
    lengths must match (ValueError)."""
    if len(scores) != len(labels):
        raise ValueError("scores and labels must pair up")
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not pos or not neg:
        return None
    order = np.argsort(np.asarray(list(scores), dtype=float), kind="mergesort")
    ranked = np.asarray(list(scores), dtype=float)[order]
    ranks = np.empty(len(ranked))
    i = 0
    while i < len(ranked):  # average ranks over ties
        j = i
        while j + 1 < len(ranked) and ranked[j + 1] == ranked[i]:
            j += 1
        ranks[i : j + 1] = (i + j) / 2 + 1
        i = j + 1
    rank_of = np.empty(len(ranked))
    rank_of[order] = ranks
    pos_rank_sum = float(sum(r for r, y in zip(rank_of, labels, strict=True) if y))
    u = pos_rank_sum - len(pos) * (len(pos) + 1) / 2
    return u / (len(pos) * len(neg))


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


def _tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """`kendall_tau` of two score vectors, vectorised (the same formula, ties and edge
    case): the ranking-stability functions take thousands of them."""
    i, j = np.triu_indices(len(x), 1)
    dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    n0 = len(i)
    denom = math.sqrt((n0 - int((dx == 0).sum())) * (n0 - int((dy == 0).sum())))
    return float((dx * dy).sum()) / denom if denom else 0.0


def _score_matrix(scores: Sequence[Sequence[float]]) -> np.ndarray:
    """`scores` as a settings x questions array, checked for the ranking-stability
    functions below."""
    m = np.asarray(scores, dtype=float)
    if m.ndim != 2 or m.shape[0] < 2 or m.shape[1] < 2:
        raise ValueError(
            "ranking stability needs two or more settings scored on the same two or more questions"
        )
    if np.isnan(m).any():
        raise ValueError("ranking stability: a NaN score; leave unscored questions out")
    return m


def _half_means(m: np.ndarray, draws: int, seed: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Per draw, the settings' mean scores over a random half of the questions (floor(n/2)
    of them) and over the rest: the splits both split-half statistics read, the same for
    the same `draws` and `seed`."""
    rng = np.random.default_rng(seed)
    n, half = m.shape[1], m.shape[1] // 2
    for _ in range(draws):
        order = rng.permutation(n)
        yield m[:, order[:half]].mean(axis=1), m[:, order[half:]].mean(axis=1)


def split_half_taus(
    scores: Sequence[Sequence[float]], *, draws: int = 500, seed: int = 0
) -> list[float]:
    """How reproducible a ranking of settings is over the questions that score it:
    `scores[s][q]` is setting s's score on question q (every setting on the same questions).
    Each draw shuffles the n questions, splits them into halves of floor(n/2) and
    ceil(n/2), means each setting over each half, and takes `kendall_tau` between the two
    halves' scorings; the draws' taus are returned (read the median and a spread).

    Read: near 1, any half of the questions ranks the settings as the other half does;
    near 0, the settings differ by less than the questions' own spread, so a different
    question set of that size (real or generated) ranks them differently. Below 0: the
    settings tie on the whole set far more closely than on either half, and since the
    two halves' differences add up to the whole set's, what one half favours the other
    disfavours (settings with exactly equal totals give -1 on every even split).
    Edge cases: fewer than two settings or two questions, or a NaN score, raise
    ValueError; a half in which every setting scores the same gives tau 0."""
    return split_half(scores, draws=draws, seed=seed)[0]


def split_half_same_winner(
    scores: Sequence[Sequence[float]], *, draws: int = 500, seed: int = 0
) -> float:
    """The share of `split_half_taus`'s splits (the same `draws` and `seed`, so the same
    halves) in which the two halves put the same setting first: their sets of top-scoring
    settings (ties included) share one. `scores[s][q]` as in `split_half_taus`.

    Read: what the whole ranking's tau cannot say, whether the pick holds: many poor
    settings that separate well give a high tau while the best few swap places. With s
    settings that do not differ, 1/s or less (the halves of one set lean opposite ways).
    Edge cases: as `split_half_taus`."""
    return split_half(scores, draws=draws, seed=seed)[1]


def split_half(
    scores: Sequence[Sequence[float]], *, draws: int = 500, seed: int = 0
) -> tuple[list[float], float]:
    """(`split_half_taus`, `split_half_same_winner`) from one pass over the same random
    halves: what a caller wanting both reads, without drawing the splits twice.
    Edge cases: as `split_half_taus`."""
    taus: list[float] = []
    same = 0
    for a, b in _half_means(_score_matrix(scores), draws, seed):
        taus.append(_tau_b(a, b))
        same += bool(np.any((a == a.max()) & (b == b.max())))
    return taus, same / draws


def bootstrap_taus(
    scores: Sequence[Sequence[float]], *, draws: int = 500, seed: int = 0
) -> list[float]:
    """`kendall_tau` between the settings' mean scores on a bootstrap resample of the
    questions (n drawn with replacement, `bootstrap_indices`) and on all of them, per
    draw; `scores[s][q]` as in `split_half_taus`. Kinder than the split: each resample
    shares about 63% of its questions with the whole set, so it bounds from above how
    far another question set of the same size would agree.
    Edge cases: as `split_half_taus`."""
    m = _score_matrix(scores)
    full = m.mean(axis=1)
    idx = bootstrap_indices(m.shape[1], n_resamples=draws, seed=seed)
    return [_tau_b(m[:, row].mean(axis=1), full) for row in idx]


def ppi_mean(
    judge_all: Sequence[float],
    judge_labelled: Sequence[float],
    human_labelled: Sequence[float],
    *,
    confidence: float = 0.95,
    bounds: tuple[float, float] | None = None,
) -> tuple[float, float, float]:
    """Prediction-powered estimate of a mean (Angelopoulos et al. 2023; as in ARES):
    theta = mean(judge over all N) + mean(human - judge over the n labelled), with the
    normal interval theta +- z * sqrt(var(judge_all) / N + var(human - judge) / n).

    The judge's systematic bias is measured on the labelled sample and removed; the
    interval widens with the judge's disagreement. With `bounds` (lo, hi), the range the
    mean cannot leave (a rate: (0, 1)), the estimate and both ends are clipped to it: the
    normal interval knows nothing of the range and can pass it with few labels. n < 2
    raises ValueError.
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
    lo, hi = bounds if bounds is not None else (-math.inf, math.inf)

    def clip(x: float) -> float:
        return min(max(x, lo), hi)

    return clip(theta), clip(theta - z * se), clip(theta + z * se)


CI_METRICS = tuple(name for name, m in METRICS.items() if m.interval)
"""Metrics whose means get a bootstrap interval in every run header."""


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
