"""Calibration: Platt scaling recovers a known cut; applying it costs no call."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from harness.analysis import calibrate, fit_platt, read_qrels, validate_run
from harness.config import load_experiment
from harness.judge.calibration import Calibration, PlattMap, read_calibration, write_calibration
from harness.log import RunLog, read_run
from harness.pipeline import run_experiment
from harness.stores import VerdictCache
from harness.testing import Act, FakeOpenAI
from harness.types import CriterionVerdict
from tests.conftest import DATA


def _simulated_judge(threshold: float, n: int, seed: int) -> tuple[list[float], list[bool]]:
    """A judge whose P(yes) is a noisy score; the truth is yes above `threshold`."""
    rng = random.Random(seed)
    ps, ys = [], []
    for _ in range(n):
        truth = rng.random()
        p = min(max(truth + rng.gauss(0, 0.05), 0.001), 0.999)
        ps.append(p)
        ys.append(truth > threshold)
    return ps, ys


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.8])
def test_platt_recovers_a_known_threshold(threshold):
    ps, ys = _simulated_judge(threshold, 400, seed=1)
    m = fit_platt(ps, ys)
    assert m.threshold == pytest.approx(threshold, abs=0.05)
    # a handful of labels already moves the cut most of the way
    few = fit_platt(ps[:40], ys[:40])
    assert abs(few.threshold - threshold) < abs(0.5 - threshold) or threshold == 0.5


def test_platt_edge_cases():
    assert fit_platt([0.2, 0.9], [True, True]).a == 0.0  # one class: a constant map
    assert fit_platt([0.2, 0.9], [True, True]).threshold is None
    with pytest.raises(ValueError):
        fit_platt([], [])


def test_applying_a_map_keeps_the_raw_probability():
    cal = Calibration({"complete": PlattMap(a=2.0, b=-2 * math.log(0.8 / 0.2), n=10, positives=3)})
    v = CriterionVerdict("complete", True, p_yes=0.7)
    out = cal.apply(v)
    assert out.p_raw == 0.7 and out.p_yes < 0.5 and out.value is False
    assert cal.apply(out).p_raw == 0.7  # re-applying starts from the raw again
    not_asked = CriterionVerdict("complete", False, reason="not asked: judged not relevant")
    assert cal.apply(not_asked) is not_asked
    assert cal.apply(CriterionVerdict("relevant", True, p_yes=0.9)).p_raw is None  # no map


def _graded(n, prompt):
    """A judge that ranks well but cuts too low: the answer 0.9, other hive text 0.7
    (it says "complete" of both), the rest 0.3."""
    passage = prompt.split("</passage>")[0]
    p2 = 0.9 if "every Saturday" in passage else 0.7 if "hive" in passage.lower() else 0.3
    top = (("2", math.log(p2)), ("1", math.log((1 - p2) * 0.8)), ("0", math.log((1 - p2) * 0.2)))
    return Act(text="2" if p2 > 0.5 else "1", top_logprobs=top)


def _label(text: str) -> int:
    return 2 if "every Saturday" in text else 1 if "hive" in text.lower() else 0


def _graded_run(server: FakeOpenAI, tmp_path) -> tuple[list[str], RunLog, Path]:
    """(the settings judging with `_graded` on `server`, a run of the tiny experiment
    under them, qrels of its judged chunks by `_label`)."""
    base = [
        f"judge.base_url={server.base_url}",
        "judge.model=fake",
        "judge.mode=graded",
        # explaining a failure judges a wider pool: a calibration that changes which
        # questions fail would then pay for new pools; here only the calibration counts
        "failures.explain=false",
    ]
    config = load_experiment(DATA / "experiment.toml", base)
    first = run_experiment(config, results_dir=tmp_path / "r", cache_dir=tmp_path / "c")
    qrels_path = tmp_path / "qrels.tsv"
    lines = ["query_id\tdoc_id\trelevance"] + [
        f"{q.question.question_id}\t{h.chunk.chunk_id}\t{_label(h.chunk.text)}"
        for q in first.questions
        for h in q.hits
    ]
    qrels_path.write_text("\n".join(lines) + "\n")
    return base, first, qrels_path


def test_calibrate_then_apply_costs_no_call_and_changes_no_cached_verdict(tmp_path):
    with FakeOpenAI(_graded) as server:
        base, first, qrels_path = _graded_run(server, tmp_path)
        paid = server.requests
        assert paid > 0 and first.header.stats["judge_calls"] == paid
        cal = calibrate([first], read_qrels(qrels_path))
        assert set(cal.criteria) == {"relevant", "complete"}
        cal_path = write_calibration(cal, tmp_path / "judge-calibration.json")
        assert read_calibration(cal_path).criteria["complete"].n == cal.criteria["complete"].n
        cache = VerdictCache(tmp_path / "c" / "verdicts.sqlite")
        before = len(cache)
        cache.close()
        again = run_experiment(
            load_experiment(DATA / "experiment.toml", [*base, f"judge.calibration={cal_path}"]),
            results_dir=tmp_path / "r",
            cache_dir=tmp_path / "c",
        )
        assert server.requests == paid  # no call
    cache = VerdictCache(tmp_path / "c" / "verdicts.sqlite")
    assert len(cache) == before
    cache.close()
    assert again.header.components["calibration"].args["sha256"]
    hits = [h for q in again.questions for h in q.hits]
    assert all(h.verdict.complete.p_raw is not None for h in hits)
    # the calibrated complete verdicts follow the labels better than the raw ones
    v_raw = validate_run(first, read_qrels(qrels_path))["agreement"]["complete"]["kappa"]
    v_cal = validate_run(again, read_qrels(qrels_path))["agreement"]["complete"]["kappa"]
    assert v_cal > v_raw
    assert json.loads(cal_path.read_text())["method"] == "platt"


def test_validate_takes_grade_cutoffs(tmp_path, scripted_judge):
    run = run_experiment(
        load_experiment(DATA / "experiment.toml"),
        results_dir=tmp_path,
        cache_dir=tmp_path / "c",
        judge=scripted_judge,
    )
    qrels = tmp_path / "q.tsv"
    qrels.write_text(
        "query_id\tdoc_id\trelevance\n"
        + "".join(
            f"{q.question.question_id}\t{q.hits[0].chunk.chunk_id}\t3\n" for q in run.questions
        )
    )
    default = validate_run(run, read_qrels(qrels))
    assert (default["relevant_grade"], default["complete_grade"]) == (1, 2)
    strict = validate_run(read_run(run.run_dir), read_qrels(qrels), complete_grade=3)
    assert strict["complete_grade"] == 3
    with pytest.raises(Exception, match="relevant-grade"):
        validate_run(run, read_qrels(qrels), relevant_grade=3, complete_grade=2)


def test_saturation_warning(tmp_path):
    with FakeOpenAI() as server:  # says yes to everything
        config = load_experiment(
            DATA / "experiment.toml", [f"judge.base_url={server.base_url}", "judge.model=fake"]
        )
        run = run_experiment(config, results_dir=tmp_path, cache_dir=tmp_path / "c")
    assert run.header.stats["complete_share"] == 1.0
    assert any("complete" in w and "calibrate" in w for w in run.header.warnings)
    from harness.report.text import format_run_summary

    assert "warning: the judge called 100% of" in format_run_summary(run)


def test_a_label_calibration_can_apply_to_the_rates_only(tmp_path):
    """`harness calibrate RUN --qrels Q --apply rates`: runs keep their verdicts, and the
    file's error rates are those of the raw verdicts (the default re-cuts them)."""
    from harness.analysis.calibrate import judged_yes, labelled_hits
    from tests.cli.test_cli import harness

    with FakeOpenAI(_graded) as server:
        base, first, qrels_path = _graded_run(server, tmp_path)
        out = tmp_path / "cal.json"
        proc = harness(
            "calibrate", str(first.run_dir), "--qrels", str(qrels_path),
            "--apply", "rates", "--out", str(out),
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert "verdicts kept as judged" in proc.stdout and "FPR" in proc.stdout
        cal = read_calibration(out)
        assert cal.applies == "rates"
        # the raw verdicts' rates: the judge says "complete" of every hive text
        rows = [
            (judged_yes(h.verdict, "complete"), g >= 2)
            for h, g in labelled_hits([first], read_qrels(qrels_path))
        ]
        negatives = [yes for yes, truth in rows if not truth and yes is not None]
        assert cal.rates["complete"].fpr == pytest.approx(sum(negatives) / len(negatives))
        recut = calibrate([first], read_qrels(qrels_path))
        assert recut.applies == "verdicts"
        assert recut.rates["complete"].fpr < cal.rates["complete"].fpr
        again = run_experiment(
            load_experiment(DATA / "experiment.toml", [*base, f"judge.calibration={out}"]),
            results_dir=tmp_path / "r",
            cache_dir=tmp_path / "c",
        )
    assert again.header.metrics == first.header.metrics  # verdicts as judged

    def as_judged(run):
        return [
            (v.relevant.value, v.relevant.p_yes, v.complete.value, v.complete.p_yes)
            for v in (h.verdict for q in run.questions for h in q.hits)
        ]

    assert as_judged(again) == as_judged(first)  # from the cache, not re-cut


def test_a_map_that_would_give_every_chunk_one_verdict_is_left_out(tmp_path):
    """Labels of one kind only fit a constant map (re-cut, every verdict the same), and
    labels the judge's P(yes) ranks backwards fit a < 0 (re-cut, its verdicts turned
    around): re-cutting leaves such a criterion as judged and says why; a calibration of
    the rates only keeps its map (it never re-cuts)."""
    with FakeOpenAI(_graded) as server:
        _, first, _ = _graded_run(server, tmp_path)
    hits = [(q.question.question_id, h) for q in first.questions for h in q.hits]
    every_one_relevant = tmp_path / "all-relevant.tsv"
    every_one_relevant.write_text(
        "".join(f"{qid}\t{h.chunk.chunk_id}\t{max(1, _label(h.chunk.text))}\n" for qid, h in hits)
    )
    cal = calibrate([first], read_qrels(every_one_relevant))
    assert "relevant" not in cal.criteria and "complete" in cal.criteria
    assert cal.source["left_out"]["relevant"].startswith(f"all {len(hits)} labelled pairs are yes")
    assert cal.criteria["complete"].a > 0
    # what a run does with it: relevance as judged, completeness re-cut
    v = hits[0][1].verdict
    assert cal.apply(v.relevant) == v.relevant and cal.apply(v.complete).p_raw is not None
    backwards = tmp_path / "backwards.tsv"
    backwards.write_text(
        "".join(f"{qid}\t{h.chunk.chunk_id}\t{2 - _label(h.chunk.text)}\n" for qid, h in hits)
    )
    recut = calibrate([first], read_qrels(backwards))
    assert "does not rank the labelled pairs" in recut.source["left_out"]["complete"]
    assert "complete" not in recut.criteria
    rates_only = calibrate([first], read_qrels(backwards), applies="rates")
    assert rates_only.criteria["complete"].a < 0 and "left_out" not in rates_only.source
    from harness.report.text import format_calibration

    out = format_calibration(cal, tmp_path / "cal.json")
    assert "relevant: no map, its verdicts stay as judged: all" in out
    assert "never" not in out
