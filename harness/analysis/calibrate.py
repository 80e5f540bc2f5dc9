"""Fitting a judge calibration from labels (`harness calibrate`): Platt scaling per
criterion on the judged pairs that the qrels label, and the calibrated verdicts' error
rates on those pairs. See harness/judge/calibration.py for what the map is and why
Platt, and harness/analysis/exam_calibration.py for the same without labels."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from harness.analysis.validate import Qrels, human_grade
from harness.errors import HarnessError
from harness.judge.calibration import (
    PARAM_LIMIT,
    Calibration,
    ErrorRates,
    PlattMap,
    judge_key,
    logit,
)
from harness.log import RunLog
from harness.types import ComponentSpec, CriterionVerdict, JudgedHit, Verdict

MIN_SPREAD = 1e-3
"""Least spread (standard deviation) of logit(P(yes)) over a criterion's pairs that a map
is fitted on: below it the judge gave one probability to every pair, and any slope
"fitted" to that is noise blown up (a = 23,000 has been seen)."""


def fit_platt(
    p: Sequence[float],
    labels: Sequence[bool],
    *,
    iterations: int = 100,
    weights: Sequence[float] | None = None,
) -> PlattMap:
    """Platt scaling by Newton's method on the logistic log-likelihood of logit(p), with
    Platt's smoothed targets and a tiny ridge so a separable sample stays finite.
    `weights` (default 1 each) weigh each pair's term in the likelihood.

    Edge cases: no pairs raises ValueError; one class only gives a = 0 and b at the
    smoothed base rate (a constant map)."""
    if not p or len(p) != len(labels) or (weights is not None and len(weights) != len(p)):
        raise ValueError("calibration needs the same, non-zero number of scores and labels")
    x = np.array([logit(v) for v in p])
    y = np.array(labels, dtype=bool)
    wt = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=float)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    t = np.where(y, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    if n_pos == 0 or n_neg == 0:
        base = (n_pos + 1) / (len(y) + 2)
        return PlattMap(0.0, logit(base), len(y), n_pos)
    w = np.array([1.0, 0.0])
    design = np.column_stack([x, np.ones_like(x)])
    ridge = 1e-3 * np.eye(2)

    def loss(v: np.ndarray) -> float:
        z = design @ v
        return float(np.sum(wt * (np.logaddexp(0.0, z) - t * z)) + 0.5 * v @ ridge @ v)

    current = loss(w)
    for _ in range(iterations):
        z = design @ w
        q = 1 / (1 + np.exp(-np.clip(z, -500, 500)))
        grad = design.T @ (wt * (q - t)) + ridge @ w
        hess = design.T @ (design * (wt * q * (1 - q))[:, None]) + ridge
        step = np.linalg.solve(hess, grad)
        # Newton may overshoot where the logistic is flat (a separable sample): halve the
        # step until the loss goes down, or a = 15,000 comes out of three probabilities
        scale = 1.0
        while scale > 1e-6 and loss(w - scale * step) > current:
            scale /= 2
        if scale <= 1e-6:
            break
        w = w - scale * step
        current = loss(w)
        if np.abs(scale * step).max() < 1e-9:
            break
    return PlattMap(float(w[0]), float(w[1]), len(y), n_pos)


def check_fit(criterion: str, m: PlattMap, p: Sequence[float]) -> PlattMap:
    """The map, or HarnessError (one line) when it is degenerate: every pair had the same
    P(yes) (no spread to fit a slope on), or a parameter past PARAM_LIMIT (a step at one
    raw probability, which a calibration file is refused for anyway)."""
    spread = float(np.std([logit(v) for v in p])) if p else 0.0
    if m.a != 0.0 and spread < MIN_SPREAD:
        raise HarnessError(
            f"calibrate: {criterion}: the judge gave every pair the same P(yes) "
            f"({p[0]:.4g}), so no map can be fitted (it would have a = {m.a:.3g}); use a "
            "judge that returns logprobs, or more varied pairs"
        )
    if abs(m.a) > PARAM_LIMIT or abs(m.b) > PARAM_LIMIT:
        raise HarnessError(
            f"calibrate: {criterion}: degenerate fit (a = {m.a:.3g}, b = {m.b:.3g}, past "
            f"+-{PARAM_LIMIT:g}): the probabilities barely vary; refusing to write it"
        )
    return m


def fit_point(c: CriterionVerdict) -> float | None:
    """The raw P(yes) a calibration of this criterion is fitted on, or None where there
    is none: failed, never asked (pointwise "complete" of a chunk judged not relevant),
    or no probability (a judge without logprobs)."""
    p = c.p_raw if c.p_raw is not None else c.p_yes
    return p if p is not None and c.error is None and c.asked else None


def judged_yes(v: Verdict, criterion: str) -> bool | None:
    """The verdict the metrics count on a criterion: relevant, or relevant and complete
    (grade 2) for "complete"; None for a failed verdict."""
    if v.grade is None:
        return None
    return bool(v.relevant.value) if criterion == "relevant" else v.grade == 2


def error_rates(rows: Iterable[tuple[str, bool, bool, float]], basis: str) -> dict[str, ErrorRates]:
    """Per criterion, TPR and FPR of (criterion, judged yes, truly yes, weight) rows:
    weighted shares of the true answers and of the non-answers judged yes. Counts are
    effective (summed weights, rounded). A criterion without both kinds of pair is left
    out: its rates would be a guess."""
    acc: dict[str, list[float]] = {}
    for crit, yes, truth, w in rows:
        a = acc.setdefault(crit, [0.0, 0.0, 0.0, 0.0])  # tp, pos, fp, neg
        if truth:
            a[0] += w * yes
            a[1] += w
        else:
            a[2] += w * yes
            a[3] += w
    return {
        c: ErrorRates(
            tpr=tp / pos, fpr=fp / neg, positives=round(pos), negatives=round(neg), basis=basis
        )
        for c, (tp, pos, fp, neg) in acc.items()
        if pos > 0 and neg > 0
    }


def labelled_hits(
    runs: Iterable[RunLog], qrels: Qrels, *, unjudged: str = "skip"
) -> Iterator[tuple[JudgedHit, int]]:
    """Each judged chunk of the runs that the qrels grade, once per (question, chunk),
    with its label grade (`unjudged` as in `validate`: "skip" or "irrelevant")."""
    seen: set[tuple[str, str]] = set()
    for run in runs:
        for q in run.questions:
            labels = qrels.get(q.question.question_id)
            if labels is None:
                continue
            for h in q.hits:
                key = (q.question.question_id, h.chunk.chunk_id)
                g = human_grade(labels, h, unjudged)
                if key not in seen and g is not None:
                    seen.add(key)
                    yield h, g


def labelled_pairs(
    runs: Iterable[RunLog], qrels: Qrels, *, relevant_grade: int = 1, complete_grade: int = 2
) -> dict[str, list[tuple[float, bool]]]:
    """(raw P(yes), human yes) per criterion, over every judged chunk of the runs that
    the qrels label, each (question, chunk) once.

    "relevant": every labelled chunk with a P(relevant). "complete": for graded judging
    P(grade >= cut-off) of every labelled chunk; for the other modes, which ask
    "complete" only of chunks judged relevant, those chunks (P(complete | relevant)).
    """
    out: dict[str, list[tuple[float, bool]]] = {"relevant": [], "complete": []}
    for h, g in labelled_hits(runs, qrels):
        for crit, cut in (
            (h.verdict.relevant, relevant_grade),
            (h.verdict.complete, complete_grade),
        ):
            p = fit_point(crit)
            if p is not None:
                out[crit.criterion].append((p, g >= cut))
    return out


def _unusable(fitted: PlattMap) -> str:
    """Why re-cutting verdicts with this map would give every chunk one verdict ("" when
    it would not)."""
    if fitted.positives in (0, fitted.n):
        kind = "yes" if fitted.positives else "no"
        return (
            f"all {fitted.n} labelled pairs are {kind}: a map needs both kinds of label, "
            "or it calls every chunk the same (label more questions)"
        )
    if fitted.a <= 0:
        return (
            f"the judge's P(yes) does not rank the labelled pairs (a = {fitted.a:.3g}): a "
            "map would turn its verdicts around"
        )
    return ""


def calibrate(
    runs: Sequence[RunLog],
    qrels: Qrels,
    *,
    relevant_grade: int = 1,
    complete_grade: int = 2,
    source: dict[str, Any] | None = None,
    applies: str = "verdicts",
) -> Calibration:
    """Fit one Platt map per criterion on the runs' labelled pairs, and measure the error
    rates on the same pairs (`Calibration.rates`, basis "labels") of the verdicts runs
    will report: re-cut by the maps (`applies` "verdicts") or as judged ("rates": runs
    keep their verdicts and correct only their rates). Criteria with no probabilities (a
    judge without logprobs) get no map and are left as judged; their rates are still
    measured. A degenerate fit raises HarnessError (`check_fit`).

    A map that would re-cut a criterion's verdicts to one value is left out when the
    calibration applies to the verdicts, and the reason recorded in `source["left_out"]`:
    labels of one kind only (the map is the constant base rate: every chunk yes, or every
    one no) or a judge whose P(yes) ranks the labels backwards (a <= 0). That
    criterion's verdicts stay as judged."""
    pairs = labelled_pairs(
        runs, qrels, relevant_grade=relevant_grade, complete_grade=complete_grade
    )
    maps = {
        crit: check_fit(
            crit, fit_platt([p for p, _ in rows], [y for _, y in rows]), [p for p, _ in rows]
        )
        for crit, rows in pairs.items()
        if rows
    }
    left_out = {
        crit: reason
        for crit, fitted in maps.items()
        if applies == "verdicts" and (reason := _unusable(fitted))
    }
    maps = {crit: fitted for crit, fitted in maps.items() if crit not in left_out}
    source = {**(source or {}), **({"left_out": left_out} if left_out else {})}
    judges = {judge_key(r.header.components.get("judge", ComponentSpec("?"))) for r in runs}
    cal = Calibration(
        criteria=maps,
        judge=judges.pop() if len(judges) == 1 else "",
        relevant_grade=relevant_grade,
        complete_grade=complete_grade,
        created_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        source=source,
        applies=applies,
    )
    cuts = {"relevant": relevant_grade, "complete": complete_grade}
    rows = []
    for h, g in labelled_hits(runs, qrels):
        v = cal.apply_verdict(h.verdict)  # as judged when the calibration applies to rates
        for crit, cut in cuts.items():
            yes = judged_yes(v, crit)
            if yes is not None:
                rows.append((crit, yes, g >= cut, 1.0))
    return replace(cal, rates=error_rates(rows, "labels"))
