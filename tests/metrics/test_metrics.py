"""Metrics against hand-computed values, edge cases included."""

from __future__ import annotations

import math

import pytest

from harness import metrics as m

# grades by rank: 0 irrelevant, 1 relevant, 2 relevant and complete
CASES = [
    # grades, k, hit_rate, mrr, relevancy_mrr, precision
    ([0, 1, 2, 0], 4, 1.0, 1 / 3, 1 / 2, 2 / 4),
    ([0, 1, 2, 0], 2, 0.0, 0.0, 1 / 2, 1 / 2),
    ([0, 1, 2, 0], 1, 0.0, 0.0, 0.0, 0.0),
    ([2, 2, 2], 3, 1.0, 1.0, 1.0, 1.0),
    ([0, 0, 0], 3, 0.0, 0.0, 0.0, 0.0),  # nothing relevant
    ([], 3, 0.0, 0.0, 0.0, 0.0),  # nothing retrieved
    ([1, 2], 5, 1.0, 0.5, 1.0, 2 / 5),  # k larger than the list: missing ranks count as 0
]


@pytest.mark.parametrize(("grades", "k", "hr", "rr", "rel_rr", "prec"), CASES)
def test_rank_metrics_match_hand_values(grades, k, hr, rr, rel_rr, prec):
    assert m.hit_rate(grades, k) == hr
    assert m.mrr(grades, k) == pytest.approx(rr)
    assert m.relevancy_mrr(grades, k) == pytest.approx(rel_rr)
    assert m.precision(grades, k) == pytest.approx(prec)


def test_ndcg_by_hand():
    # grades [0, 1, 2]: DCG@3 = 0/log2(2) + 1/log2(3) + 2/log2(4) = 0.63093 + 1.0
    # ideal [2, 1, 0]: 2/1 + 1/log2(3) = 2.63093
    dcg = 1 / math.log2(3) + 2 / 2
    idcg = 2 + 1 / math.log2(3)
    assert m.ndcg([0, 1, 2], 3) == pytest.approx(dcg / idcg)
    # @1: DCG 0, ideal from the whole judged list: 2 -> 0
    assert m.ndcg([0, 1, 2], 1) == 0.0
    assert m.ndcg([2, 1, 0], 3) == pytest.approx(1.0)
    assert m.ndcg([], 3) == 0.0
    assert m.ndcg([0, 0], 2) == 0.0


def test_context_chars():
    assert m.context_chars([100, 50, 25], 2) == 150
    assert m.context_chars([100], 4) == 100
    assert m.context_chars([], 1) == 0


def test_k_below_one_is_rejected():
    with pytest.raises(ValueError):
        m.hit_rate([2], 0)


def test_question_metrics_skips_k_with_failed_verdicts():
    out = m.question_metrics([2, None, 0], [10, 20, 30], [1, 2, 3])
    assert out["hit_rate@1"] == 1.0
    assert out["mrr@1"] == 1.0
    assert "hit_rate@2" not in out and "mrr@3" not in out
    assert "ndcg@1" not in out  # ideal ordering needs every grade
    assert out["context_chars@3"] == 60  # cost is known even when a verdict failed


def test_aggregate_means_counts_and_errors():
    per_q = [
        m.question_metrics([0, 2], [1, 1], [1, 2]),
        m.question_metrics([1, 0], [1, 1], [1, 2]),
        m.question_metrics([None, 2], [1, 1], [1, 2]),
    ]
    agg = m.aggregate(per_q, [1, 2])
    assert agg["hit_rate@2"] == pytest.approx(1 / 2)  # two questions have @2; one hit
    assert agg["mrr@2"] == pytest.approx((0.5 + 0) / 2)
    # relevancy_mrr is averaged over ALL questions with a value, zeros included
    assert agg["relevancy_mrr@2"] == pytest.approx((0.5 + 1.0) / 2)
    assert agg["failures@2"] == 1
    assert agg["errors@2"] == 1
    assert agg["errors@1"] == 1
    assert agg["failures@1"] == 2


def test_relevancy_mrr_is_not_the_inflated_variant():
    # One question with a relevant hit at rank 2, one with none: the mean is 0.25,
    # not 0.5 (the variant that drops questions without a relevant hit).
    per_q = [m.question_metrics([0, 1], [1, 1], [2]), m.question_metrics([0, 0], [1, 1], [2])]
    assert m.aggregate(per_q, [2])["relevancy_mrr@2"] == pytest.approx(0.25)


def test_paired_bootstrap_hand_checkable():
    # Every question improves by exactly 1: the interval has no width.
    assert m.paired_bootstrap([0, 0, 0, 0], [1, 1, 1, 1]) == (1.0, 1.0, 1.0)
    # Diffs [1, 0]: resampled means are 0, 0.5 or 1 with probabilities 1/4, 1/2, 1/4,
    # so the 95% interval is [0, 1] around a mean of 0.5.
    mean, low, high = m.paired_bootstrap([0, 1], [1, 1], n_resamples=4000)
    assert (mean, low, high) == (0.5, 0.0, 1.0)
    # Diffs of +1 for 9 questions and -1 for 1: mean 0.8; the interval excludes 0.
    mean, low, high = m.paired_bootstrap([0] * 9 + [1], [1] * 9 + [0])
    assert mean == pytest.approx(0.8) and 0 < low < 0.8 < high <= 1.0
    with pytest.raises(ValueError):
        m.paired_bootstrap([], [])
    # seeded: the same call gives the same interval
    assert m.paired_bootstrap([0, 1, 1], [1, 1, 0], seed=3) == m.paired_bootstrap(
        [0, 1, 1], [1, 1, 0], seed=3
    )
