"""Calibration without labels (#22): the judge exam plus the corpus's near misses give
a judge's error rates, and a cut on P(yes); runs that use it say how far to trust them."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest

from harness.analysis.exam_calibration import (
    ExamPair,
    calibrate_from_exam,
    duplicate_share,
    fit_exam,
    near_misses,
)
from harness.config import CriteriaConfig, load_experiment
from harness.errors import HarnessError
from harness.generate.exam import ExamItem
from harness.judge.calibration import (
    Calibration,
    ErrorRates,
    read_calibration,
    trust_summary,
    write_calibration,
)
from harness.judge.protocol import BaseJudge
from harness.pipeline import run_experiment
from harness.stores import VerdictCache
from harness.testing import Act, FakeOpenAI
from harness.types import Chunk, ComponentSpec, CriterionVerdict, SourceSpan, Verdict
from tests.conftest import DATA

N = 400
# P(judged relevant), P(judged complete | judged relevant) per kind of passage
RELEVANT = {"SRC": 0.90, "UNREL": 0.10, "NEAR": 0.60}
COMPLETE_GIVEN_RELEVANT = {"SRC": 0.80 / 0.90, "UNREL": 0.50, "NEAR": 0.50}


def _u(*parts: str) -> float:
    """A deterministic uniform draw in [0, 1) from the text of the call."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class NoisyJudge(BaseJudge):
    """A scripted judge with known error rates: it says yes of a passage marked SRC,
    UNREL or NEAR with the probabilities above, drawn from a hash of the call, so the
    same pair always gets the same verdict. No logprobs unless `p_yes` is given."""

    def __init__(self, p_yes: dict[str, float] | None = None) -> None:
        self.spec = ComponentSpec(name="noisy", args={"version": 1})
        self.p_yes = p_yes

    def identity(self) -> str:
        """A fixed version string."""
        return "noisy-v1" + ("-p" if self.p_yes else "")

    def grade(
        self, question: str, chunk_text: str, criterion: str, criterion_text: str
    ) -> CriterionVerdict:
        """Yes with the known rate of the passage's kind."""
        kind = next(k for k in RELEVANT if chunk_text.startswith(k))
        if self.p_yes is not None:  # the raw cut is wrong: P(yes) says it all
            p = self.p_yes[kind]
            return CriterionVerdict(criterion, p >= 0.5, p_yes=p, calls=1)
        rate = (RELEVANT if criterion == "relevant" else COMPLETE_GIVEN_RELEVANT)[kind]
        return CriterionVerdict(
            criterion, _u(question, chunk_text, criterion) < rate, reason="noisy", calls=1
        )


def _exam_and_corpus(n: int = N) -> tuple[list[ExamItem], list[Chunk]]:
    """Per question i, a document d{i}: its source passage (the exam's answer) and a
    second chunk about the same subject that does not answer (a near miss); the exam's
    unrelated passage comes from another document."""
    items, chunks = [], []
    for i in range(n):
        src = f"SRC topic{i} the shed key number {i} is kept by member {i} on Mondays"
        near = f"NEAR topic{i} meetings for subject {i} happen in the hall with tea"
        q = f"who keeps key number {i} for topic{i}"
        chunks += [
            Chunk(f"d{i}#0", f"d{i}", src, 0),
            Chunk(f"d{i}#{len(src) + 1}", f"d{i}", near, len(src) + 1),
        ]
        span = SourceSpan(f"d{i}", 0, len(src))
        other = SourceSpan(f"u{i}", 0, 40)
        unrel = f"UNREL compost heaps {i} need turning every two weeks"
        items += [
            ExamItem(f"q{i}-source", f"q{i}", q, src, span, "source"),
            ExamItem(f"q{i}-unrelated", f"q{i}", q, unrel, other, "unrelated"),
        ]
    return items, chunks


def _write_exam(path: Path, items: list[ExamItem]) -> Path:
    path.write_text("".join(json.dumps(i.to_dict()) + "\n" for i in items), encoding="utf-8")
    return path


def test_near_misses_come_from_the_source_document_and_never_overlap_it():
    items, chunks = _exam_and_corpus(20)
    near, duplicates = near_misses(items, chunks, per_question=1)
    assert duplicates == 0 and len(near) == 20
    for pair in near:
        i = pair.question_id[1:]
        assert pair.kind == "near" and pair.passage_id == f"d{i}#{len(chunks[2 * int(i)].text) + 1}"
        assert pair.passage.startswith("NEAR")
    # a chunk repeating the source is an answer, not a near miss: excluded and counted
    src = items[0]
    copy = Chunk("x#0", "x", "NEAR " + src.passage, 0)
    near, duplicates = near_misses([src], [copy, *chunks[:2]], per_question=2)
    assert duplicates == 1 and [p.passage_id for p in near] == [chunks[1].chunk_id]
    assert duplicate_share(src.passage, copy.text) == 1.0
    assert duplicate_share(src.passage, chunks[1].text) == 0.0


def test_exam_calibration_recovers_a_scripted_judges_known_error_rates(tmp_path):
    items, chunks = _exam_and_corpus()
    exam = _write_exam(tmp_path / "q.exam.jsonl", items)
    cal, info = calibrate_from_exam(
        exam, chunks, NoisyJudge(), CriteriaConfig(), near=1, concurrency=1
    )
    assert info["pairs"] == {"source": N, "unrelated": N, "near": N}
    assert cal.basis == "exam" and cal.criteria == {}  # no logprobs: no map, rates only
    tol = 3 * math.sqrt(0.25 / N)  # three standard errors at worst
    rel, comp = cal.rates["relevant"], cal.rates["complete"]
    assert rel.tpr == pytest.approx(0.90, abs=tol)
    assert rel.fpr == pytest.approx(0.10, abs=tol)  # near misses are left out for relevant
    assert (rel.positives, rel.negatives) == (N, N)
    assert comp.tpr == pytest.approx(0.80, abs=tol)
    # complete's non-answers: unrelated (weight 1, rate 0.05) and near (weight 0.5, 0.30)
    assert comp.fpr == pytest.approx((0.05 + 0.5 * 0.30) / 1.5, abs=tol)
    assert comp.negatives == round(1.5 * N)
    assert comp.extra["near_yes"] == pytest.approx(0.30, abs=tol)
    assert comp.extra["unrelated_yes"] == pytest.approx(0.05, abs=tol)
    # the file round-trips, and a rates-only file is a valid calibration
    back = read_calibration(write_calibration(cal, tmp_path / "cal.json"))
    assert back.rates["complete"].tpr == pytest.approx(comp.tpr)
    assert back.basis == "exam" and back.criteria == {}


def test_exam_calibration_moves_a_cut_in_the_wrong_place():
    """A judge that says yes (P 0.7) of every unrelated passage and P 0.9 of answers: raw
    FPR 1; the cut moves between 0.7 and 0.9. Applied to the verdicts (--apply verdicts)
    the FPR falls to 0; by default the verdicts stay as judged, and so does their FPR."""
    items, _ = _exam_and_corpus(40)
    judge = NoisyJudge(p_yes={"SRC": 0.9, "UNREL": 0.7, "NEAR": 0.8})
    pairs = [ExamPair(i.question_id, i.question, i.passage, i.kind, i.passage_id) for i in items]
    verdicts = [Verdict(*judge.grade_both(p.question, p.passage, CriteriaConfig())) for p in pairs]
    cal = fit_exam(pairs, verdicts, applies="verdicts")
    cut = cal.criteria["relevant"].threshold
    assert cut is not None and 0.7 < cut < 0.9
    assert cal.rates["relevant"].fpr == 0.0 and cal.rates["relevant"].tpr == 1.0
    assert cal.rates["relevant"].extra["unrelated_yes_raw"] == 1.0
    assert not cal.apply(verdicts[-1].relevant).value  # an unrelated passage, re-cut: no
    as_judged = fit_exam(pairs, verdicts)
    assert as_judged.applies == "rates" and as_judged.criteria["relevant"].threshold == cut
    assert as_judged.rates["relevant"].fpr == 1.0 and as_judged.rates["relevant"].tpr == 1.0
    assert as_judged.apply(verdicts[-1].relevant) == verdicts[-1].relevant  # as judged
    assert as_judged.apply_verdict(verdicts[0]) == verdicts[0]


def test_constant_probabilities_are_refused_with_one_line():
    items, _ = _exam_and_corpus(30)
    judge = NoisyJudge(p_yes={"SRC": 0.9, "UNREL": 0.9, "NEAR": 0.9})
    pairs = [ExamPair(i.question_id, i.question, i.passage, i.kind, i.passage_id) for i in items]
    verdicts = [Verdict(*judge.grade_both(p.question, p.passage, CriteriaConfig())) for p in pairs]
    with pytest.raises(HarnessError, match="same P\\(yes\\)") as err:
        fit_exam(pairs, verdicts)
    assert "\n" not in str(err.value)


def test_trust_summary_without_rates_says_what_to_run():
    stats, warning = trust_summary([(2, 1, 3)], None)
    assert stats["statement"].startswith("untrusted")
    assert warning is not None and "harness calibrate --exam" in warning
    assert "harness generate" in warning


def test_a_judge_guessing_on_the_run_is_untrusted_whatever_its_exam_says():
    """Exam rates that would call the run trusted (the judged rate inside the corrected
    interval) do not, when most of the run's probabilities sit between 0.4 and 0.6: the
    statement says untrusted, gives the share, and keeps the corrected rates."""
    rates = {c: ErrorRates(0.95, 0.05, 40, 40, basis="exam") for c in ("relevant", "complete")}
    cal = Calibration(criteria={}, rates=rates, basis="exam", applies="rates")
    per_question = [(2, 1, 4)] * 20
    sure, warning = trust_summary(per_question, cal)
    assert sure["verdict"] == "trusted" and warning is None and "guessing" not in sure
    unsure, warning = trust_summary(per_question, cal, guessing=0.56)
    assert unsure["verdict"] == "untrusted" and unsure["guessing"] == 0.56
    assert unsure["statement"].startswith("untrusted: judged complete-rate 25%, corrected")
    assert "the judge is guessing on this run (56% of its probabilities" in unsure["statement"]
    assert warning == unsure["statement"]
    assert unsure["complete_rate"] == sure["complete_rate"]


def test_a_judge_that_finds_few_answers_or_a_wide_interval_is_untrusted():
    """On this project's documentation site the local judge found 12% of its exam's
    answers complete: the corrected rate read 50% [8%, 100%]. Neither such a judge nor
    such an interval is called trusted, whatever the raw rate."""
    per_question = [(2, 1, 4)] * 20

    def verdict(tpr: float, fpr: float, n: int) -> tuple[str, str]:
        rates = {c: ErrorRates(tpr, fpr, n, n, basis="exam") for c in ("relevant", "complete")}
        cal = Calibration(criteria={}, rates=rates, basis="exam", applies="rates")
        stats, _ = trust_summary(per_question, cal)
        return stats["verdict"], stats["statement"]

    assert verdict(0.95, 0.05, 40)[0] == "trusted"
    few, statement = verdict(0.3, 0.0, 40)
    assert few == "untrusted" and "it finds only 30% of the answers" in statement
    wide, statement = verdict(0.6, 0.3, 20)  # an interval from a weak judge and 20 pairs
    assert wide == "untrusted" and "the interval is too wide to read" in statement


def _exam_for_data() -> list[ExamItem]:
    """Exam items over the test corpus: the hive answer and an unrelated passage."""
    bees = (DATA / "corpus" / "bees.md").read_text(encoding="utf-8")
    start = bees.index("every Saturday")
    span = SourceSpan("bees.md", max(0, start - 60), min(len(bees), start + 60))
    tomatoes = (DATA / "corpus" / "tomatoes.md").read_text(encoding="utf-8")
    other = SourceSpan("tomatoes.md", 0, min(120, len(tomatoes)))
    q = "When is the hive inspection?"
    text = bees[span.start : span.end]
    return [
        ExamItem("hive-source", "hive", q, text, span, "source"),
        ExamItem(
            "hive-unrelated", "hive", q, tomatoes[other.start : other.end], other, "unrelated"
        ),
    ]


def _graded_like(n: int, prompt: str) -> Act:
    """P(yes) 0.95 for the passage with the answer, 0.6 for other bee text, 0.3 else."""
    passage = prompt.split("</passage>")[0]
    p = 0.95 if "every Saturday" in passage else 0.6 if "hive" in passage.lower() else 0.3
    text = "yes" if p >= 0.5 else "no"
    return Act(text=text, top_logprobs=(("yes", math.log(p)), ("no", math.log(1 - p))))


def _fitted_calibration(tmp_path: Path, base: list[str]) -> tuple[Path, dict]:
    """The exam calibration of DATA's experiment with the judge `base` sets, written to
    tmp_path/cal.json, with what calibrate_from_exam reported."""
    from harness.judge import open_judge
    from harness.pipeline.prepare import load_inputs

    exam = _write_exam(tmp_path / "q.exam.jsonl", _exam_for_data())
    config = load_experiment(DATA / "experiment.toml", base)
    cache = VerdictCache(tmp_path / "c" / "verdicts.sqlite")
    with open_judge(config.judge, cache_dir=tmp_path / "c") as judge:
        cal, info = calibrate_from_exam(
            exam, load_inputs(config).chunks, judge, config.judge.criteria, cache=cache
        )
    cache.close()
    return write_calibration(cal, tmp_path / "cal.json"), info


def _fake_judge(server: FakeOpenAI, model: str = "fake") -> list[str]:
    """The settings that point a run at `server` as its judge `model`."""
    return [f"judge.base_url={server.base_url}", f"judge.model={model}", "failures.explain=false"]


def test_a_run_with_an_exam_calibration_reports_corrected_rates(tmp_path):
    with FakeOpenAI(_graded_like) as server:
        base = _fake_judge(server)
        path, info = _fitted_calibration(tmp_path, base)
        assert info["pairs"]["near"] >= 1
        run = run_experiment(
            load_experiment(DATA / "experiment.toml", [*base, f"judge.calibration={path}"]),
            results_dir=tmp_path / "r",
            cache_dir=tmp_path / "c",
        )
    spec = run.header.components["calibration"]
    assert spec.args["basis"] == "exam" and "complete" in spec.args["rates"]
    trust = run.header.stats["trust"]
    assert trust["basis"] == "exam" and trust["statement"].split(":")[0] in (
        "trusted",
        "biased",
        "untrusted",
    )
    assert "complete_rate" in trust and "raw" in trust["complete_rate"]
    assert spec.args["applies"] == "rates"
    # without a calibration the run says what to run
    with FakeOpenAI(_graded_like) as server:
        plain = run_experiment(
            load_experiment(
                DATA / "experiment.toml",
                _fake_judge(server),
            ),
            results_dir=tmp_path / "r",
            cache_dir=tmp_path / "c",
        )
    assert plain.header.stats["trust"]["basis"] is None
    assert any("harness calibrate --exam" in w for w in plain.header.warnings)
    # the calibration applied to the rates only: the same verdicts as without it
    assert run.header.metrics and run.header.metrics == plain.header.metrics


def _unsure(n: int, prompt: str) -> Act:
    """P(yes) 0.55 of everything: a judge that cannot decide."""
    return Act(text="yes", top_logprobs=(("yes", math.log(0.55)), ("no", math.log(0.45))))


def test_a_run_whose_judge_is_guessing_says_untrusted_despite_its_exam(tmp_path):
    """The same exam calibration, a run whose judge answers every chunk with P(yes) 0.55:
    its trust statement is untrusted and says why, and the warning says it too."""
    with FakeOpenAI(_graded_like) as server:
        path, _ = _fitted_calibration(tmp_path, _fake_judge(server))
    with FakeOpenAI(_unsure) as server:
        run = run_experiment(
            load_experiment(
                DATA / "experiment.toml", [*_fake_judge(server), f"judge.calibration={path}"]
            ),
            results_dir=tmp_path / "r",
            cache_dir=tmp_path / "unsure-cache",
        )
    trust = run.header.stats["trust"]
    assert trust["basis"] == "exam" and trust["guessing"] == 1.0
    assert trust["statement"].startswith("untrusted: ")
    assert "the judge is guessing on this run (100% of its probabilities" in trust["statement"]
    assert trust["statement"] in run.header.warnings
    assert any(
        w.startswith("100% of the judge's probabilities") and "harness validate" in w
        for w in run.header.warnings
    )


def _constant(n: int, prompt: str) -> Act:
    """P(yes) 0.9 of everything: nothing to fit a map on."""
    return Act(text="yes", top_logprobs=(("yes", math.log(0.9)), ("no", math.log(0.1))))


@pytest.mark.parametrize("behave", [_graded_like, _constant])
def test_harness_calibrate_exam_writes_a_file_or_refuses_a_degenerate_fit(tmp_path, behave):
    from tests.cli.test_cli import assert_user_error, harness

    exam = _write_exam(tmp_path / "q.exam.jsonl", _exam_for_data())
    out = tmp_path / "cal.json"
    with FakeOpenAI(behave) as server:
        proc = harness(
            "calibrate",
            "--exam",
            str(exam),
            "--experiment",
            str(DATA / "experiment.toml"),
            "--set",
            f"judge.base_url={server.base_url}",
            "--set",
            "judge.model=fake",
            "--out",
            str(out),
            "--cache-dir",
            str(tmp_path / "c"),
        )
    if behave is _constant:
        assert_user_error(proc, "calibrate", "same P(yes)")
        assert not out.exists()
        return
    assert proc.returncode == 0, proc.stderr
    assert "from the judge exam" in proc.stdout and "TPR" in proc.stdout
    assert "not applied" in proc.stdout  # by default runs keep the judge's verdicts
    cal = read_calibration(out)
    assert cal.basis == "exam" and set(cal.rates) == {"relevant", "complete"}
    assert cal.applies == "rates"
    with FakeOpenAI(behave) as server:  # the same verdicts, from the cache, re-cut
        proc = harness(
            "calibrate", "--exam", str(exam), "--experiment", str(DATA / "experiment.toml"),
            "--set", f"judge.base_url={server.base_url}", "--set", "judge.model=fake",
            "--out", str(out), "--cache-dir", str(tmp_path / "c"), "--apply", "verdicts",
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "yes when raw P(yes) >" in proc.stdout and "re-cut by the maps" in proc.stdout
    assert read_calibration(out).applies == "verdicts"


def test_calibrate_without_target_or_exam_is_one_line():
    from tests.cli.test_cli import assert_user_error, harness

    assert_user_error(harness("calibrate"), "--exam")
    assert_user_error(harness("calibrate", "--exam", "x.jsonl"), "--experiment")


def test_labels_give_error_rates_too_even_without_logprobs(tmp_path, scripted_judge):
    """`harness calibrate RUN --qrels` measures the calibrated verdicts' error rates on
    the labelled pairs (basis "labels"); a judge without logprobs gets rates, no map."""
    from harness.analysis import calibrate, read_qrels

    run = run_experiment(
        load_experiment(DATA / "experiment.toml", ["failures.explain=false"]),
        results_dir=tmp_path,
        cache_dir=tmp_path / "c",
        judge=scripted_judge,
    )
    # the labels disagree with the scripted judge on purpose: every chunk mentioning
    # "the" is called an answer, so both kinds of error occur
    qrels = tmp_path / "q.tsv"
    rows = [
        f"{q.question.question_id}\t{h.chunk.chunk_id}\t{2 if ' the ' in h.chunk.text else 0}\n"
        for q in run.questions
        for h in q.hits
    ]
    qrels.write_text("query_id\tdoc_id\trelevance\n" + "".join(rows))
    cal = calibrate([run], read_qrels(qrels))
    assert cal.criteria == {} and cal.basis == "labels"
    hits = [(h, " the " in h.chunk.text) for q in run.questions for h in q.hits]
    answers = [h for h, y in hits if y]
    others = [h for h, y in hits if not y]
    assert answers and others
    comp = cal.rates["complete"]
    assert comp.tpr == pytest.approx(sum(h.verdict.grade == 2 for h in answers) / len(answers))
    assert comp.fpr == pytest.approx(sum(h.verdict.grade == 2 for h in others) / len(others))
    assert (comp.positives, comp.negatives) == (len(answers), len(others))


def test_a_calibration_fitted_on_another_judge_is_not_applied(tmp_path):
    """An experiment may ship its local judge's calibration and be pointed at another
    judge: that judge's verdicts are then not cut, and its numbers not called trusted,
    with another judge's error rates."""
    with FakeOpenAI(_graded_like) as server:
        path, _ = _fitted_calibration(tmp_path, _fake_judge(server))
        other = _fake_judge(server, model="another-model")
        run = run_experiment(
            load_experiment(DATA / "experiment.toml", [*other, f"judge.calibration={path}"]),
            results_dir=tmp_path / "r",
            cache_dir=tmp_path / "c",
        )
    assert "calibration" not in run.header.components
    trust = run.header.stats["trust"]
    assert trust["basis"] is None and trust["statement"].startswith("untrusted")
    hits = [h for q in run.questions for h in q.hits]
    assert hits and all(h.verdict.complete.p_raw is None for h in hits)  # nothing re-cut
