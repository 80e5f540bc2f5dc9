"""The decision at a sweep's end: Holm, the paired test, the cheapest of equals, the
questions still needed, parameter importances, and how show prints them."""

from __future__ import annotations

import json
import math
import warnings

import optuna
import pytest

from harness.cli import main
from harness.cli.app import _setup_process
from harness.config import load_experiment
from harness.log import TrialRecord, read_sweep
from harness.metrics import holm, paired_permutation_p
from harness.report.text import stability_sentence
from harness.sweep import SweepBook, run_sweep
from harness.sweep.recommend import cheapest, more_questions
from tests.conftest import DATA, ScriptedJudge

SWEEP = DATA / "sweep.toml"


def test_holm_against_a_hand_case():
    # sorted: 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04 -> 0.06)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]) == [1.0, 1.0]  # capped at 1, then kept monotone
    assert holm([0.2]) == [0.2]
    assert holm([]) == []


def test_paired_sign_flip_test_by_hand():
    # d = (1, 1, 1): of the 8 sign vectors only all-plus and all-minus reach |mean| = 1
    assert paired_permutation_p([0, 0, 0], [1, 1, 1]) == pytest.approx(0.25)
    # one question differs: flipping it gives the same |mean|, so nothing separates them
    assert paired_permutation_p([1, 1, 1, 1], [1, 1, 1, 0]) == 1.0
    assert paired_permutation_p([0.5, 0.5], [0.5, 0.5]) == 1.0
    # 20 questions, every one lost: beyond exact enumeration, drawn with a fixed seed
    p = paired_permutation_p([1.0] * 20, [0.0] * 20)
    assert p == paired_permutation_p([1.0] * 20, [0.0] * 20) and p < 0.001


def test_sample_size_estimate_by_hand():
    # d = (1, 0, 1, 0): mean 0.5, var 1/3; (1.95996 + 0.84162)^2 * (1/3) / 0.25 = 10.47
    # questions in all, so ceil(10.47) - 4 = 7 more
    assert more_questions([1, 0, 1, 0]) == 7
    assert more_questions([1, -1, 0]) is None  # no mean difference: nothing to separate
    assert more_questions([0.5, 0.5]) == 0  # no spread: the questions used suffice
    assert more_questions([]) is None


def _trial(n: int, value: float, k: int = 3, reranker: str = "none") -> TrialRecord:
    params = {"chunk_size": 200, "chunk_overlap": 20, "k": k, "reranker": reranker}
    return TrialRecord(n, "complete", params, [value], run_dir="")


def _book(trials: list[tuple[TrialRecord, float, list[float]]]) -> SweepBook:
    """A book over hand-made trials: (record, context_chars at its k, per-question mrr)."""
    b = SweepBook(("mrr@k",))
    for record, chars, values in trials:
        b.trials[record.number] = record
        b.per_question[record.number] = {f"q{i}": v for i, v in enumerate(values)}
        b.metrics[record.number] = {f"context_chars@{record.params['k']}": chars}
    return b


BEST = [1.0] * 10
ONE_WORSE = [1.0] * 9 + [0.5]  # differs on one question: p = 1, not separable
ALL_WORSE = [0.0] * 10  # differs everywhere: separable


def test_cheapest_of_equals_prefers_fewer_characters():
    b = _book(
        [
            (_trial(0, 1.0), 1000.0, BEST),
            (_trial(1, 0.95), 600.0, ONE_WORSE),
            (_trial(2, 0.0), 100.0, ALL_WORSE),  # cheapest of all, but separable
        ]
    )
    r = b.recommendation()
    assert r is not None and r.best == 0 and r.trial == 1
    assert r.indistinguishable == [1]
    tests = {t.trial: t for t in r.comparisons}
    assert tests[1].p_holm == 1.0 and tests[2].p_holm < 0.05
    assert tests[2].p_holm == pytest.approx(min(1.0, 2 * tests[2].p_value))
    assert r.reason.startswith("trial 1 is recommended: it cannot be told apart from the best")
    assert "40% fewer characters" in r.reason and "Holm-adjusted p = 1.00" in r.reason
    assert r.context_chars == 600.0 and r.runner_up == 1


def test_cheapest_of_equals_then_smaller_k_then_no_reranker():
    by_k = _book([(_trial(0, 1.0, k=3), 500.0, BEST), (_trial(1, 0.95, k=2), 500.0, ONE_WORSE)])
    r = by_k.recommendation()
    assert r is not None and r.trial == 1 and "k = 2 vs 3" in r.reason
    by_reranker = _book(
        [
            (_trial(0, 1.0, reranker="bm25"), 500.0, BEST),
            (_trial(1, 0.95, reranker="none"), 500.0, ONE_WORSE),
        ]
    )
    r = by_reranker.recommendation()
    assert r is not None and r.trial == 1 and "needs no reranker (the best uses bm25)" in r.reason
    # all equal: the best itself
    same = _book([(_trial(0, 1.0), 500.0, BEST), (_trial(1, 0.95), 500.0, ONE_WORSE)])
    r = same.recommendation()
    assert r is not None and r.trial == 0 and r.indistinguishable == [1]
    assert "none of the trials a paired test cannot separate from it" in r.reason
    # the rule alone, on records: characters, then k, then reranker
    metrics = {0: {"context_chars@3": 500.0}, 1: {"context_chars@2": 500.0}}
    assert cheapest([_trial(0, 1.0), _trial(1, 0.9, k=2)], metrics, prefer=0).number == 1


def test_no_recommendation_for_two_objectives_or_none_complete():
    assert SweepBook(("mrr@k", "context_chars@k")).recommendation() is None
    assert SweepBook(("mrr@k",)).recommendation() is None


def test_a_separated_best_is_recommended_with_the_questions_left():
    b = _book([(_trial(0, 1.0), 900.0, BEST), (_trial(1, 0.0), 100.0, ALL_WORSE)])
    r = b.recommendation()
    assert r is not None and r.trial == 0 and r.indistinguishable == []
    assert "separates it from every other complete trial" in r.reason
    assert r.more_questions == 0  # d = 1 everywhere: no spread, nothing more needed


def test_ranking_stability_says_whether_the_questions_separate_the_trials():
    """Three trials apart on every question: every split ranks them alike (tau 1). Three
    trials that are the same questions' scores shuffled: they tie on the whole set, and
    two halves disagree (below 0). Fewer than 3 trials or 4 shared questions: none."""
    apart = _book(
        [(_trial(i, v, k=i), 100.0 * i, [v + 0.01 * (q % 3) for q in range(12)])
         for i, v in enumerate((0.9, 0.5, 0.1))]
    )  # fmt: skip
    st = apart.recommendation().stability
    assert (st.trials, st.questions, st.tau, st.tau_low, st.same_winner) == (3, 12, 1.0, 1.0, 1.0)
    assert "same setting first in 100% of them" in stability_sentence(st)
    assert "the questions separate the trials" in stability_sentence(st)
    base = [1.0, 0.5, 0.0, 0.2, 1.0, 0.0, 0.5, 0.3, 0.0, 1.0, 0.2, 0.3]
    shuffled = _book(
        [(_trial(i, sum(base) / 12, k=i), 100.0, base[i * 4 :] + base[: i * 4]) for i in range(3)]
    )
    st = shuffled.recommendation().stability
    assert st.tau < 0 and st.tau_low <= st.tau <= st.tau_high and st.same_winner < 1.0
    assert "another question set would rank them differently" in stability_sentence(st)
    two = _book([(_trial(0, 1.0, k=2), 1.0, BEST), (_trial(1, 0.0), 1.0, ALL_WORSE)])
    assert two.recommendation().stability is None
    few = _book([(_trial(i, 1.0, k=i), 1.0, [1.0, 0.0, 1.0]) for i in range(3)])
    assert few.recommendation().stability is None
    # a setting tried twice counts once
    again = _book([(_trial(i, 1.0, k=2 + i % 2), 1.0, BEST) for i in range(3)])
    assert again.recommendation().stability is None
    # a question missing from one trial, or NaN in one, is left out of the split
    b = _book([(_trial(i, 1.0, k=i), 1.0, [float(q % 2) for q in range(6)]) for i in range(3)])
    b.per_question[1].pop("q0")
    b.per_question[2]["q1"] = math.nan
    assert b.recommendation().stability.questions == 4


def test_ranking_stability_reads_first_by_the_objectives_direction():
    """A minimised objective: the lowest setting is first. One setting far below two
    alike ones: minimised, every split puts it first; maximised, the two alike ones
    swap places between halves."""
    from harness.sweep.recommend import ranking_stability

    low = [0.0] * 12
    b = [1.0, 0.0] * 6
    c = [0.0, 1.0] * 6
    ranked = [_trial(i, 0.0, k=i) for i in range(3)]
    per_q = {i: {f"q{j}": v for j, v in enumerate(vals)} for i, vals in enumerate((low, b, c))}
    assert ranking_stability(ranked, per_q, minimize=True).same_winner == 1.0
    assert ranking_stability(ranked, per_q).same_winner < 1.0


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("recommend")
    config = load_experiment(SWEEP)
    return run_sweep(config, results_dir=tmp / "r", cache_dir=tmp / "cache", judge=ScriptedJudge())


def test_a_real_sweep_ends_with_a_recommendation(sweep):
    s = sweep.summary
    complete = [t for t in sweep.trials if t.state == "complete"]
    r = s.recommendation
    assert r is not None and r.best == s.best[0].number
    assert r.trial in {r.best, *r.indistinguishable}
    assert {t.trial for t in r.comparisons} <= {t.number for t in complete}
    assert r.trial in {t.number for t in complete}
    # the scripted judge gives every trial the same mrr@k: the cheapest of them is chosen
    chars = {t.number: sweep_chars(t) for t in complete}
    assert chars[r.trial] == min(chars.values()) and r.context_chars == chars[r.trial]
    # nothing to attribute when every trial scores the same; show says why
    assert s.importances == {} and s.importances_note.startswith("every complete trial scored")
    # written to sweep.json, and read back the same
    again = read_sweep(sweep.sweep_dir).summary
    assert again.recommendation == r and again.importances_note == s.importances_note


def sweep_chars(t: TrialRecord) -> float:
    from pathlib import Path

    from harness.log import read_run

    return read_run(Path(t.run_dir)).header.metrics[f"context_chars@{t.params['k']}"]


def test_importances_after_a_real_sweep(tmp_path, capsys):
    config = load_experiment(SWEEP, ['sweep.objective=["precision@k"]'])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        _setup_process(0)  # what `harness sweep` sets up: its warning filters in front
        log = run_sweep(
            config, results_dir=tmp_path, cache_dir=tmp_path / "c", judge=ScriptedJudge()
        )
    # TPE's group mode and PED-ANOVA's normalize=False are used knowingly: Optuna's notes
    # that they are experimental are not the user's to read on stderr
    experimental = optuna.exceptions.ExperimentalWarning
    assert not [str(w.message) for w in seen if issubclass(w.category, experimental)]
    s = log.summary
    assert s.importances, s.importances_note
    assert all(v >= 0 for v in s.importances.values())
    assert math.isclose(sum(s.importances.values()), 1.0, abs_tol=1e-9)
    assert set(s.importances) <= {"chunk_size", "chunk_overlap", "k"}
    assert read_sweep(log.sweep_dir).summary.importances == s.importances
    assert main(["show", str(log.sweep_dir)]) == 0
    assert "parameter importances (PED-ANOVA, precision@k): " in capsys.readouterr().out
    assert main(["show", str(log.sweep_dir), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["importances"] == pytest.approx(s.importances)


def test_show_prints_the_recommendation_in_text_and_json(sweep, capsys):
    assert main(["show", str(sweep.sweep_dir)]) == 0
    out = capsys.readouterr().out
    r = sweep.summary.recommendation
    assert f"recommended: trial {r.trial}" in out and r.reason in out
    assert "parameter importances: none (every complete trial scored the same" in out
    assert main(["show", str(sweep.sweep_dir), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["recommendation"]["trial"] == r.trial
    assert data["recommendation"]["reason"] == r.reason
    assert data["recommendation"]["indistinguishable"] == r.indistinguishable
    # every complete trial scored the same on every question: the split finds no order
    assert r.stability is not None and "ranking stability: split-half Kendall tau" in out
    assert data["recommendation"]["stability"]["tau"] == r.stability.tau


def test_two_objectives_show_says_there_is_no_recommendation(tmp_path, capsys):
    config = load_experiment(
        SWEEP, ['sweep.objective=["mrr@k", "context_chars@k"]', "sweep.trials=2"]
    )
    log = run_sweep(config, results_dir=tmp_path, cache_dir=tmp_path / "c", judge=ScriptedJudge())
    assert log.summary.recommendation is None
    assert "recommendation" not in json.loads((log.sweep_dir / "sweep.json").read_text())
    assert main(["show", str(log.sweep_dir)]) == 0
    assert "recommendation: none for two objectives" in capsys.readouterr().out
