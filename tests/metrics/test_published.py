"""The metrics published reference-free and RAGAS-style evaluations report (issue 15),
each checked by hand."""

from __future__ import annotations

import pytest

from harness import metrics as m
from harness.metrics import stats


def test_ap_on_the_worked_example():
    # [not relevant, relevant] -> (0 + 1/2) / 1 = 0.5
    assert m.average_precision([0, 1], 2) == pytest.approx(0.5)
    assert m.question_metrics([0, 1], [10, 10], [2])["ap@2"] == pytest.approx(0.5)


def test_ap_by_hand():
    # relevant at 1 and 3: (1/1 + 2/3) / 2
    assert m.average_precision([2, 0, 1], 3) == pytest.approx((1 + 2 / 3) / 2)
    # complete counts as relevant; only the top k counts
    assert m.average_precision([0, 0, 2], 2) == 0.0
    assert m.average_precision([1, 1], 2) == 1.0
    assert m.average_precision([], 3) == 0.0  # nothing retrieved
    assert m.average_precision([0, 0], 2) == 0.0  # no relevant chunk: 0, not absent
    with pytest.raises(ValueError):
        m.average_precision([1], 0)


def test_relevancy_mrr_found_averages_only_questions_with_a_relevant_chunk():
    per_q = [
        m.question_metrics([0, 1], [1, 1], [1, 2]),  # relevant at 2
        m.question_metrics([0, 0], [1, 1], [1, 2]),  # none
        m.question_metrics([2, 0], [1, 1], [1, 2]),  # relevant at 1
    ]
    assert "relevancy_mrr_found@2" not in per_q[1]  # left out, not 0
    assert per_q[0]["relevancy_mrr_found@2"] == per_q[0]["relevancy_mrr@2"] == 0.5
    agg = m.aggregate(per_q, [1, 2])
    assert agg["relevancy_mrr_found@2"] == pytest.approx((0.5 + 1.0) / 2)
    assert agg["relevancy_mrr@2"] == pytest.approx((0.5 + 0 + 1.0) / 3)  # ours: over all
    assert agg["relevancy_mrr_found@1"] == 1.0  # only the third question has one at 1
    assert m.relevancy_mrr_found([], 2) is None


def test_relevant_share_by_hand():
    # 40 of 100 + 0 of 300 characters marked as the answer
    assert m.relevant_share([(40, 100), (0, 300)], 2) == pytest.approx(40 / 400)
    assert m.relevant_share([(40, 100), (0, 300)], 1) == pytest.approx(0.4)
    assert m.relevant_share([(None, 100), (None, 300)], 2) is None  # nothing extracts
    assert m.relevant_share([], 2) is None
    assert m.relevant_share([(0, 0)], 1) is None  # no characters: no share


def test_relevant_share_is_absent_without_evidence_and_present_with_it():
    without = m.question_metrics([2, 0], [100, 300], [1, 2])
    assert not any(key.startswith("relevant_share") for key in without)
    with_ev = m.question_metrics([2, 0], [100, 300], [1, 2], evidence=[40, 0])
    assert with_ev["relevant_share@1"] == pytest.approx(0.4)
    assert with_ev["relevant_share@2"] == pytest.approx(0.1)
    # a failed verdict in the top k leaves it out, like every grade metric
    failed = m.question_metrics([2, None], [100, 300], [1, 2], evidence=[40, 0])
    assert "relevant_share@1" in failed and "relevant_share@2" not in failed
    with pytest.raises(ValueError):
        m.question_metrics([2, 0], [100, 300], [2], evidence=[40])


def test_registered_everywhere_metrics_go():
    for name in ("ap", "relevancy_mrr_found", "relevant_share"):
        assert name in m.METRICS and name in m.METRIC_NAMES
        assert name in m.OBJECTIVE_NAMES  # a sweep may optimise it
        assert name in stats.CI_METRICS  # runs report an interval
        assert m.direction(name) == "maximize"
    per_q = [
        m.question_metrics([0, 1], [10, 10], [2], evidence=[0, 5]),
        m.question_metrics([1, 1], [10, 10], [2], evidence=[0, 0]),
    ]
    ci = m.aggregate_ci(per_q, [2])
    assert {"ap@2", "relevancy_mrr_found@2", "relevant_share@2"} <= set(ci)


def test_failure_counts_come_from_the_questions_labels():
    per_q = [
        {"hit_rate@2": 0.0, "failures_missed@2": 1.0},
        {"hit_rate@2": 0.0, "failures_not_in_corpus@2": 1.0},
        {"hit_rate@2": 0.0, "failures_missed@2": 1.0},
        {"hit_rate@2": 1.0},
    ]
    agg = m.aggregate(per_q, [1, 2])
    assert agg["failures_missed@2"] == 2
    assert agg["failures_split@2"] == 0
    assert agg["failures_not_in_corpus@2"] == 1
    assert "failures_missed@1" not in agg  # explained at the run's k only
    assert "failures_missed@2" not in m.aggregate([{"hit_rate@2": 0.0}], [2])  # none explained
    assert m.failure_count_name("not-in-corpus") == "failures_not_in_corpus"


def test_relevant_share_as_an_objective_needs_extractive_judging():
    from harness.config import parse_experiment
    from harness.errors import ConfigError

    base = {"corpus": {"sources": ["d"]}, "questions": {"file": "q.jsonl"}}
    with pytest.raises(ConfigError) as exc:
        parse_experiment(
            base, overrides=['sweep.objective=["relevant_share@k"]', "judge.mode=pointwise"]
        )
    assert exc.value.field == "sweep.objective" and "extractive" in str(exc.value)
    ok = parse_experiment(
        base, overrides=['sweep.objective=["relevant_share@k"]', "judge.mode=extractive"]
    )
    assert ok.sweep.objective == ("relevant_share@k",)
    with pytest.raises(ConfigError):  # the default mode, pointwise, extracts nothing
        parse_experiment(base, overrides=['sweep.objective=["relevant_share@k"]'])
    assert parse_experiment(base, overrides=['sweep.objective=["ap@k"]']).sweep.objective


def test_the_run_table_has_a_relevant_share_row_only_where_the_judge_extracts(
    tmp_path, scripted_judge
):
    """relevant_share needs extractive judging: every other mode printed it as a row of
    dashes, which reads as a failure."""
    import dataclasses

    from harness.config import load_experiment
    from harness.pipeline import run_experiment
    from harness.report.text import format_metrics_table
    from tests.conftest import DATA

    run = run_experiment(
        load_experiment(DATA / "experiment.toml"),
        results_dir=tmp_path,
        cache_dir=tmp_path / "c",
        judge=scripted_judge,
    )
    table = format_metrics_table(run.header)
    assert "relevant_share" not in table and "\nhit_rate " in table
    extracted = dataclasses.replace(
        run.header, metrics={**run.header.metrics, "relevant_share@1": 0.4}
    )
    assert "\nrelevant_share " in format_metrics_table(extracted)
