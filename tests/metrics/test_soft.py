"""Soft metrics from the judge's probabilities, by hand."""

from __future__ import annotations

import pytest

from harness import metrics as m
from harness.types import CriterionVerdict, Verdict


def test_soft_metrics_by_hand():
    a = [0.5, 0.2, 0.9]
    # 1 - (0.5 * 0.8 * 0.1)
    assert m.soft_hit_rate(a, 3) == pytest.approx(0.96)
    assert m.soft_hit_rate(a, 1) == pytest.approx(0.5)
    # 0.5/1 + 0.5*0.2/2 + 0.5*0.8*0.9/3
    assert m.soft_mrr(a, 3) == pytest.approx(0.5 + 0.05 + 0.12)
    assert m.soft_relevancy_mrr([0.0, 1.0], 2) == pytest.approx(0.5)
    assert m.soft_hit_rate([], 3) == 0.0 and m.soft_mrr([], 3) == 0.0


def test_hard_probabilities_give_the_hard_metrics():
    grades = [0, 1, 2, 2]
    answer = [1.0 if g == 2 else 0.0 for g in grades]
    for k in (1, 2, 3, 4):
        assert m.soft_hit_rate(answer, k) == m.hit_rate(grades, k)
        assert m.soft_mrr(answer, k) == pytest.approx(m.mrr(grades, k))


def test_soft_metrics_break_ties_that_hard_ones_cannot():
    # two settings whose hard verdicts agree, but the judge is surer of one
    sure = m.question_metrics([2, 0], [10, 10], [2], [(0.95, 0.9), (0.1, 0.05)])
    unsure = m.question_metrics([2, 0], [10, 10], [2], [(0.6, 0.55), (0.4, 0.3)])
    assert sure["mrr@2"] == unsure["mrr@2"] == 1.0
    assert sure["soft_mrr@2"] > unsure["soft_mrr@2"]
    assert "soft_mrr@2" not in m.question_metrics([2, 0], [10, 10], [2])  # no probabilities
    assert "soft_mrr@2" not in m.question_metrics([2, 0], [10, 10], [2], [(0.9, 0.9), None])
    assert "soft_mrr@1" in m.question_metrics([2, 0], [10, 10], [1, 2], [(0.9, 0.9), None])


def test_verdict_probabilities():
    def cv(name, value, p=None, **kw):
        return CriterionVerdict(name, value, p_yes=p, **kw)

    pointwise = Verdict(cv("relevant", True, 0.8), cv("complete", True, 0.5))
    assert pointwise.probabilities() == pytest.approx((0.8, 0.4))
    not_asked = Verdict(
        cv("relevant", False, 0.3), cv("complete", False, reason="not asked: judged not relevant")
    )
    assert not_asked.probabilities() == (0.3, 0.0)
    dist = (0.1, 0.2, 0.6, 0.1)
    graded = Verdict(
        cv("relevant", True, 0.9, distribution=dist), cv("complete", True, 0.7, distribution=dist)
    )
    assert graded.probabilities() == pytest.approx((0.9, 0.7))  # joint already
    hard = Verdict(cv("relevant", True), cv("complete", False))
    assert hard.probabilities() == (1.0, 0.0)
    failed = Verdict(cv("relevant", None, error="boom"), cv("complete", None, error="not asked"))
    assert failed.probabilities() is None


def test_soft_metrics_are_objectives():
    assert {"soft_hit_rate", "soft_mrr", "soft_relevancy_mrr"} <= set(m.OBJECTIVE_NAMES)
    assert m.direction("soft_mrr") == "maximize"


def test_auc():
    assert m.auc([0.9, 0.8, 0.3, 0.1], [True, True, False, False]) == 1.0
    assert m.auc([0.1, 0.9], [True, False]) == 0.0
    assert m.auc([0.5, 0.5], [True, False]) == 0.5
    assert m.auc([0.5, 0.6], [True, True]) is None
