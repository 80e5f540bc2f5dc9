"""How far a judged rate can be trusted (#22): Rogan-Gladen by hand, its interval, the
default objective, and the soft metrics' fallback for a judge without logprobs."""

from __future__ import annotations

import dataclasses

import pytest

from harness.config import SweepConfig, load_experiment
from harness.log import TrialRecord
from harness.metrics import hard_twin, question_metrics
from harness.metrics.lazy import lazy_target
from harness.metrics.trust import corrected_rate, rogan_gladen
from harness.sweep.recommend import recommend
from harness.types import CriterionVerdict, Verdict
from tests.conftest import DATA


@pytest.mark.parametrize(
    ("p_obs", "tpr", "fpr", "expected"),
    [
        (0.85, 0.95, 0.60, 0.25 / 0.35),  # the docstring's example: 0.714
        (0.50, 1.00, 0.00, 0.50),  # a perfect judge: the observed rate itself
        (0.30, 0.80, 0.10, 0.20 / 0.70),  # 0.2857
        (0.82, 0.90, 0.70, 0.60),  # 0.12 / 0.20
        (0.05, 0.90, 0.20, 0.0),  # below the false-positive rate: clipped to 0
        (0.97, 0.90, 0.10, 1.0),  # above the true-positive rate: clipped to 1
    ],
)
def test_rogan_gladen_by_hand(p_obs, tpr, fpr, expected):
    assert rogan_gladen(p_obs, tpr, fpr) == pytest.approx(expected)


@pytest.mark.parametrize(("tpr", "fpr"), [(0.5, 0.5), (0.3, 0.6), (0.0, 0.0), (1.0, 1.0)])
def test_rogan_gladen_is_undefined_without_information(tpr, fpr):
    # TPR + (1 - FPR) - 1 <= 0: the verdicts say nothing about the truth
    assert rogan_gladen(0.5, tpr, fpr) is None


def test_rogan_gladen_refuses_rates_outside_0_1():
    with pytest.raises(ValueError, match="tpr"):
        rogan_gladen(0.5, 1.2, 0.1)
    with pytest.raises(ValueError, match="p_obs"):
        rogan_gladen(-0.1, 0.9, 0.1)


def test_corrected_rate_interval_holds_the_estimate_and_widens_with_fewer_exam_pairs():
    # 20 questions x 5 chunks, 17 of 20 judged yes in each quarter: p_obs = 0.85
    per_q = [(4, 5)] * 5 + [(5, 5)] * 5 + [(4, 5)] * 5 + [(4, 5)] * 5
    raw = sum(y for y, _ in per_q) / sum(n for _, n in per_q)
    big = corrected_rate(per_q, 0.95, 0.60, positives=2000, negatives=2000)
    assert big.raw == pytest.approx(raw)
    assert big.corrected == pytest.approx(rogan_gladen(raw, 0.95, 0.60))
    assert big.low <= big.corrected <= big.high
    small = corrected_rate(per_q, 0.95, 0.60, positives=20, negatives=20)
    assert (small.high - small.low) > (big.high - big.low)
    # the same point estimate: only the interval knows how many exam pairs there were
    assert small.corrected == pytest.approx(big.corrected)
    none = corrected_rate(per_q, 0.5, 0.5, positives=50, negatives=50)
    assert none.corrected is None and none.low is None and none.undefined_share > 0.3
    with pytest.raises(ValueError):
        corrected_rate([(0, 0)], 0.9, 0.1, 10, 10)


def test_the_default_objective_is_the_documented_one():
    documented = "soft_mrr@k"
    assert SweepConfig().objective == (documented,)
    assert documented in (SweepConfig.__doc__ or "") + _field_doc()
    assert load_experiment(DATA / "experiment.toml").sweep.objective == (documented,)
    # its yes/no counterpart stays visible beside it; lazy judging cannot serve it
    assert hard_twin(documented) == "mrr@k" and hard_twin("mrr@3") is None
    assert hard_twin("soft_hit_rate@3") == "hit_rate@3"
    assert lazy_target([documented]) is None


def _field_doc() -> str:
    import inspect

    from harness.config import schema

    src = inspect.getsource(schema.SweepConfig)
    return src[src.index("objective:") :][:600]


def test_soft_metrics_fall_back_to_the_verdicts_without_logprobs():
    """A judge without logprobs gives 0/1 "probabilities" (its answers): the soft
    metrics then equal the hard ones exactly, so the default objective still ranks."""
    no, yes = CriterionVerdict("relevant", False), CriterionVerdict("relevant", True)
    verdicts = [
        Verdict(no, CriterionVerdict("complete", False, reason="not asked: judged not relevant")),
        Verdict(yes, CriterionVerdict("complete", False)),
        Verdict(yes, CriterionVerdict("complete", True)),
    ]
    grades = [v.grade for v in verdicts]
    probs = [v.probabilities() for v in verdicts]
    m = question_metrics(grades, [10, 10, 10], [1, 2, 3], probs)
    for k in (1, 2, 3):
        assert m[f"soft_mrr@{k}"] == m[f"mrr@{k}"]
        assert m[f"soft_hit_rate@{k}"] == m[f"hit_rate@{k}"]
    assert m["soft_mrr@3"] == pytest.approx(1 / 3)


def test_the_recommendation_quotes_the_hard_count_beside_the_soft_objective():
    t0 = TrialRecord(number=0, state="complete", params={"k": 3}, values=[0.80], run_dir="")
    t1 = TrialRecord(number=1, state="complete", params={"k": 2}, values=[0.78], run_dir="")
    metrics = {
        0: {"context_chars@3": 900.0, "mrr@3": 0.95},
        1: {"context_chars@2": 600.0, "mrr@2": 0.93},
    }
    per_q = {0: {"a": 0.8, "b": 0.8}, 1: {"a": 0.78, "b": 0.78}}
    rec = recommend("soft_mrr@k", [t0, t1], per_q, metrics, lambda b, o: (0.9, 2))
    assert rec is not None and rec.trial == 1 and rec.objective == "soft_mrr@k"
    assert "soft_mrr@k 0.780 vs 0.800" in rec.reason
    assert "(mrr@k 0.930 vs 0.950)" in rec.reason
    # a hard objective has nothing to quote beside it
    hard = recommend("mrr@k", [t0, t1], per_q, metrics, lambda b, o: (0.9, 2))
    assert hard is not None and "(mrr@k" not in hard.reason
    assert dataclasses.asdict(rec)["reason"] == rec.reason
