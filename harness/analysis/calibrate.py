"""Fitting a judge calibration from labels (`harness calibrate`): Platt scaling per
criterion on the judged pairs that the qrels label. See harness/judge/calibration.py for
what the map is and why Platt."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from harness.analysis.validate import Qrels, human_grade
from harness.judge.calibration import Calibration, PlattMap, judge_key, logit
from harness.log import RunLog
from harness.types import ComponentSpec, JudgedHit


def fit_platt(p: Sequence[float], labels: Sequence[bool], *, iterations: int = 100) -> PlattMap:
    """Platt scaling by Newton's method on the logistic log-likelihood of logit(p), with
    Platt's smoothed targets and a tiny ridge so a separable sample stays finite.

    Edge cases: no pairs raises ValueError; one class only gives a = 0 and b at the
    smoothed base rate (a constant map)."""
    if not p or len(p) != len(labels):
        raise ValueError("calibration needs the same, non-zero number of scores and labels")
    x = np.array([logit(v) for v in p])
    y = np.array(labels, dtype=bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    t = np.where(y, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    if n_pos == 0 or n_neg == 0:
        base = (n_pos + 1) / (len(y) + 2)
        return PlattMap(0.0, logit(base), len(y), n_pos)
    w = np.array([1.0, 0.0])
    design = np.column_stack([x, np.ones_like(x)])
    ridge = 1e-3 * np.eye(2)
    for _ in range(iterations):
        z = np.clip(design @ w, -500, 500)
        q = 1 / (1 + np.exp(-z))
        grad = design.T @ (q - t) + ridge @ w
        hess = design.T @ (design * (q * (1 - q))[:, None]) + ridge
        step = np.linalg.solve(hess, grad)
        w = w - step
        if np.abs(step).max() < 1e-9:
            break
    return PlattMap(float(w[0]), float(w[1]), len(y), n_pos)


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
            p = crit.p_raw if crit.p_raw is not None else crit.p_yes
            if p is not None and crit.error is None and crit.asked:
                out[crit.criterion].append((p, g >= cut))
    return out


def calibrate(
    runs: Sequence[RunLog],
    qrels: Qrels,
    *,
    relevant_grade: int = 1,
    complete_grade: int = 2,
    source: dict[str, Any] | None = None,
) -> Calibration:
    """Fit one Platt map per criterion on the runs' labelled pairs. Criteria with no
    probabilities (a judge without logprobs) get no map and are left as judged."""
    pairs = labelled_pairs(
        runs, qrels, relevant_grade=relevant_grade, complete_grade=complete_grade
    )
    maps = {
        crit: fit_platt([p for p, _ in rows], [y for _, y in rows])
        for crit, rows in pairs.items()
        if rows
    }
    judges = {judge_key(r.header.components.get("judge", ComponentSpec("?"))) for r in runs}
    return Calibration(
        criteria=maps,
        judge=judges.pop() if len(judges) == 1 else "",
        relevant_grade=relevant_grade,
        complete_grade=complete_grade,
        created_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        source=source or {},
    )
