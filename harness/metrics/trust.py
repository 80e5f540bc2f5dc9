"""How far a judged rate can be trusted: the judge's measured error rates turned into a
corrected estimate of the true rate, with an interval.

A judge that says "complete" of a share `p_obs` of the retrieved chunks, with a
true-positive rate TPR and a false-positive rate FPR measured on pairs whose truth is
known (the judge exam of `harness generate`, or labels), says it of a share
p_obs = TPR * p + FPR * (1 - p) of chunks whose true share is p. Solving for p is the
Rogan-Gladen estimator (Rogan and Gladen, 1978), the standard correction of a prevalence
measured by an imperfect test.

The interval resamples both sources of error: the questions of the run (the chunks of a
question are not independent, so questions are the unit, as everywhere in
`metrics.stats`) and the exam's (or labels') counts behind TPR and FPR (binomial draws).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.metrics.stats import bootstrap_indices, percentile_interval


def rogan_gladen(p_obs: float, tpr: float, fpr: float) -> float | None:
    """The true rate behind an observed rate, given the judge's error rates.

    Formula (Rogan-Gladen, with sensitivity Se = TPR and specificity Sp = 1 - FPR):
    p = (p_obs + Sp - 1) / (Se + Sp - 1) = (p_obs - FPR) / (TPR - FPR), clipped to
    [0, 1] (sampling error can put p_obs below FPR or above TPR). Written with the
    false-positive rate itself in place of Sp, as it is sometimes quoted, the formula is
    wrong: the specificity belongs there.

    Edge cases: Se + Sp - 1 = TPR - FPR <= 0 (Youden's J): a judge that says yes no more
    often of true answers than of non-answers carries no information about the true
    rate, which is then undefined: None, never a number. TPR = 1 and FPR = 0 give p_obs
    back. Rates outside [0, 1] raise ValueError. By hand: p_obs 0.85, TPR 0.95,
    FPR 0.60 give (0.85 - 0.60) / (0.95 - 0.60) = 0.25 / 0.35 = 0.714.
    """
    for name, v in (("p_obs", p_obs), ("tpr", tpr), ("fpr", fpr)):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{name} must be within [0, 1], got {v}")
    j = tpr - fpr
    if j <= 1e-12:
        return None
    return min(1.0, max(0.0, (p_obs - fpr) / j))


@dataclass(frozen=True)
class CorrectedRate:
    """A judged rate beside its correction for the judge's errors."""

    raw: float
    """The share the judge said yes of."""
    corrected: float | None
    """Rogan-Gladen of `raw` (None: the judge's rates carry no information)."""
    low: float | None
    high: float | None
    """Percentile interval of the corrected rate (None when undefined)."""
    undefined_share: float
    """Share of the resamples where TPR - FPR <= 0 (left out of the interval); a large
    share says the error rates are too uncertain to correct with."""


def corrected_rate(
    yes_per_question: Sequence[tuple[int, int]],
    tpr: float,
    fpr: float,
    positives: int,
    negatives: int,
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> CorrectedRate:
    """The Rogan-Gladen estimate of a chunk-level rate with its bootstrap interval.

    `yes_per_question` holds (chunks judged yes, chunks judged) per question; TPR and FPR
    were measured on `positives` true answers and `negatives` non-answers. Each resample
    draws the questions with replacement (for p_obs) and TPR*, FPR* as binomial shares of
    those counts. Resamples where TPR* - FPR* <= 0 are undefined, counted and left out.
    A rate over no chunks raises ValueError; without counts (0 positives or negatives)
    the rates are taken as exact.
    """
    yes = np.array([y for y, _ in yes_per_question], dtype=float)
    n = np.array([m for _, m in yes_per_question], dtype=float)
    if n.sum() <= 0:
        raise ValueError("no judged chunk to correct")
    raw = float(yes.sum() / n.sum())
    point = rogan_gladen(raw, tpr, fpr)
    idx = bootstrap_indices(len(n), n_resamples=n_resamples, seed=seed)
    p_obs = yes[idx].sum(axis=1) / np.maximum(n[idx].sum(axis=1), 1)
    rng = np.random.default_rng(seed + 1)
    t = (
        rng.binomial(positives, tpr, n_resamples) / positives
        if positives
        else np.full(n_resamples, tpr)
    )
    f = (
        rng.binomial(negatives, fpr, n_resamples) / negatives
        if negatives
        else np.full(n_resamples, fpr)
    )
    j = t - f
    ok = j > 1e-12
    draws = np.clip((p_obs[ok] - f[ok]) / j[ok], 0.0, 1.0)
    undefined = float(1 - ok.mean())
    if point is None or len(draws) == 0:
        return CorrectedRate(raw, point, None, None, undefined)
    low, high = percentile_interval(draws, confidence)
    return CorrectedRate(raw, point, low, high, undefined)
