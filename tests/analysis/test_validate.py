"""Judge validation against human labels: agreement statistics by hand, PPI on a simulated
bias, validate/label/export end to end, and our MRR against trec_eval's own code."""

from __future__ import annotations

import io
import random

import numpy as np
import pytest

from harness import metrics as m
from harness.analysis import export_trec, read_qrels, validate_run, validate_sweep
from harness.cli import main
from harness.config import load_experiment
from harness.errors import HarnessError
from harness.log import read_run
from harness.pipeline import run_experiment
from tests.conftest import DATA, ScriptedJudge

QRELS = DATA / "qrels.tsv"


def test_confusion_and_kappa_by_hand():
    judge = [True, True, False, False, True, False, True, True]
    human = [True, False, False, True, True, False, True, False]
    assert m.confusion(judge, human) == {"tp": 3, "fp": 2, "fn": 1, "tn": 2}
    # p_o = 5/8; p_judge(yes) = 5/8, p_human(yes) = 4/8; p_e = 5/8*4/8 + 3/8*4/8 = 0.5
    assert m.cohen_kappa(judge, human) == pytest.approx((5 / 8 - 0.5) / 0.5)
    assert m.cohen_kappa([True, False], [True, False]) == 1.0
    assert m.cohen_kappa([True, True], [True, True]) == 1.0  # p_e = 1, full agreement
    assert m.cohen_kappa([True, False], [False, True]) == pytest.approx(-1.0)
    with pytest.raises(ValueError):
        m.cohen_kappa([], [])


def test_kendall_tau_matches_scipy_with_ties():
    from scipy.stats import kendalltau

    rng = random.Random(1)
    for _ in range(20):
        x = [rng.choice([0.1, 0.2, 0.3, 0.4]) for _ in range(9)]
        y = [rng.choice([0.1, 0.5, 0.9]) for _ in range(9)]
        expected = kendalltau(x, y).statistic  # tau-b
        got = m.kendall_tau(x, y)
        assert got == pytest.approx(0.0 if expected != expected else expected)
    assert m.kendall_tau([1, 2, 3], [1, 2, 3]) == 1.0
    assert m.kendall_tau([1, 2, 3], [3, 2, 1]) == -1.0
    # the vectorised twin the ranking-stability functions use: the same figures
    from harness.metrics.stats import _tau_b

    for _ in range(50):
        x = [rng.choice([0.1, 0.2, 0.3]) for _ in range(7)]
        y = [rng.choice([0.1, 0.5]) for _ in range(7)]
        assert _tau_b(np.array(x), np.array(y)) == pytest.approx(m.kendall_tau(x, y))
    assert _tau_b(np.array([1.0, 1.0]), np.array([1.0, 2.0])) == 0.0


def test_ranking_stability_over_questions():
    """Settings far apart: every half of the questions ranks them as the other half does.
    Settings drawn alike: the halves agree no better than chance. Settings with equal
    totals: the halves disagree (what one favours, the other disfavours)."""
    rng = random.Random(3)
    apart = [[s + rng.uniform(-0.05, 0.05) for _ in range(40)] for s in (0.2, 0.5, 0.8)]
    assert m.split_half_taus(apart, draws=50) == [1.0] * 50
    assert m.bootstrap_taus(apart, draws=50) == [1.0] * 50
    assert m.split_half_same_winner(apart, draws=50) == 1.0
    same = [[rng.uniform(0, 1) for _ in range(40)] for _ in range(6)]
    halves = sorted(m.split_half_taus(same, draws=300, seed=1))
    assert -0.5 < halves[150] < 0.5 and halves[30] < 0 < halves[270]  # median, 10%, 90%
    assert m.bootstrap_taus(same, draws=300, seed=1) != [1.0] * 300
    assert m.split_half_same_winner(same, draws=300, seed=1) < 1 / 6  # chance or less
    # both from one pass over the same halves
    assert m.split_half(same, draws=300, seed=1) == (
        m.split_half_taus(same, draws=300, seed=1),
        m.split_half_same_winner(same, draws=300, seed=1),
    )
    # 4 questions: a split is 2 vs 2; settings a (1, 1, 0, 0) and b (0, 0, 1, 1) tie on
    # all four, and a half with questions {0, 1} ranks a first, its other half b first
    tie = [[1, 1, 0, 0], [0, 0, 1, 1]]
    assert set(m.split_half_taus(tie, draws=100)) <= {-1.0, 0.0}
    assert -1.0 in m.split_half_taus(tie, draws=100)
    # a split {0, 1} / {2, 3} puts a first, then b: not the same; {0, 2} / {1, 3} ties
    # both on both halves: the same
    assert 0.0 < m.split_half_same_winner(tie, draws=100) < 1.0
    for bad in ([[1, 2]], [[1], [2]], [[1, float("nan")], [1, 2]]):
        with pytest.raises(ValueError):
            m.split_half_taus(bad)
        with pytest.raises(ValueError):
            m.bootstrap_taus(bad)
        with pytest.raises(ValueError):
            m.split_half_same_winner(bad)


def test_bootstrap_mean_ci_contains_the_mean_and_shrinks_with_n():
    low, high = m.bootstrap_mean_ci([0, 1] * 10)
    assert low < 0.5 < high
    low2, high2 = m.bootstrap_mean_ci([0, 1] * 500)
    assert high2 - low2 < high - low
    assert m.bootstrap_mean_ci([0.7]) == (0.7, 0.7)


def test_ppi_removes_a_known_judge_bias():
    """The judge says yes to every true yes and to 40% of the noes: biased up by ~0.2.
    Over many simulated studies the corrected interval covers the truth about 95% of the
    time and the naive judge-only figure never does."""
    covered = naive_covered = 0
    errors = []
    for seed in range(60):
        rng = random.Random(seed)
        human_all = [float(rng.random() < 0.5) for _ in range(2000)]
        judge_all = [1.0 if h else float(rng.random() < 0.4) for h in human_all]
        labelled = rng.sample(range(2000), 200)
        est, low, high = m.ppi_mean(
            judge_all, [judge_all[i] for i in labelled], [human_all[i] for i in labelled]
        )
        truth = sum(human_all) / len(human_all)
        covered += low <= truth <= high
        naive = sum(judge_all) / len(judge_all)
        naive_covered += abs(naive - truth) < (high - low) / 2
        errors.append(abs(est - truth))
    assert covered >= 52  # >= ~87% of 60 (nominal 95%)
    assert naive_covered == 0
    assert sum(errors) / len(errors) < 0.03


@pytest.fixture
def run_with_planted_disagreements(tmp_path, cache_dir):
    class Contrary(ScriptedJudge):
        """Denies every chunk of compost.md: planted disagreements with the labels."""

        def grade(self, question, chunk_text, criterion, criterion_text):
            v = super().grade(question, chunk_text, criterion, criterion_text)
            if "Compost must be turned" in chunk_text or "Green waste" in chunk_text:
                return type(v)(**{**v.to_dict(), "value": False})
            return v

    config = load_experiment(
        DATA / "experiment.toml", [f"questions.qrels={str(QRELS)!r}".replace("'", '"')]
    )
    return run_experiment(config, results_dir=tmp_path, cache_dir=cache_dir, judge=Contrary())


def test_validate_counts_agreement_and_metrics_both_ways(run_with_planted_disagreements):
    run = run_with_planted_disagreements
    qrels = read_qrels(QRELS)
    res = validate_run(run, qrels)
    # The same counts, computed independently from the log.
    tp = fp = fn = tn = 0
    for q in run.questions:
        labels = qrels[q.question.question_id]
        for h in q.hits:
            human = labels.get(h.chunk.doc_id, 0) >= 1
            judge = bool(h.verdict.relevant.value)
            tp += judge and human
            fp += judge and not human
            fn += human and not judge
            tn += not judge and not human
    rel = res["agreement"]["relevant"]
    assert rel["confusion"] == {"tp": tp, "fp": fp, "fn": fn, "tn": tn}
    assert fn >= 1  # the planted disagreements on compost.md
    assert rel["kappa"] == pytest.approx(
        m.cohen_kappa(
            [bool(h.verdict.relevant.value) for q in run.questions for h in q.hits],
            [
                qrels[q.question.question_id].get(h.chunk.doc_id, 0) >= 1
                for q in run.questions
                for h in q.hits
            ],
        )
    )
    assert rel["kappa_ci95"][0] <= rel["kappa"] <= rel["kappa_ci95"][1]
    # graded labels: "complete" is checked against grade 2
    assert res["binary_labels"] is False
    comp = res["agreement"]["complete"]
    assert comp["n"] == rel["n"]
    # By the labels, the compost question is answered; by the contrary judge it is not.
    assert res["metrics"]["human"]["hit_rate@3"] > res["metrics"]["judge"]["hit_rate@3"]
    assert "hit_rate@3" in res["ppi"] and "mrr@3" in res["ppi"]


def test_validate_cli_reads_qrels_from_the_experiment(run_with_planted_disagreements, capsys):
    assert main(["validate", str(run_with_planted_disagreements.run_dir)]) == 0
    out = capsys.readouterr().out
    assert "kappa" in out and "relevant" in out and "label-corrected (PPI" in out


def test_header_has_bootstrap_intervals(run_with_planted_disagreements):
    h = run_with_planted_disagreements.header
    for key in ("hit_rate@3", "mrr@3", "relevancy_mrr@1"):
        low, high = h.metrics_ci[key]
        assert low <= h.metrics[key] <= high


def test_label_through_its_prompts(run_with_planted_disagreements, tmp_path, monkeypatch, capsys):
    out = tmp_path / "labels.tsv"
    args = ["label", str(run_with_planted_disagreements.run_dir), "--sample", "10"]
    # pair 1: relevant, complete; pair 2: relevant, not complete; pair 3: not relevant;
    # pair 4: skipped; then a typo, then quit.
    monkeypatch.setattr("sys.stdin", io.StringIO("y\ny\ny\nn\nn\ns\nmaybe\nq\n"))
    assert main([*args, "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[0].startswith("# chunking: ") and lines[1] == "query_id\tdoc_id\trelevance"
    assert [line.split("\t")[2] for line in lines[2:]] == ["2", "1", "0"]
    assert "please answer y, n, s or q" in capsys.readouterr().out
    labels = read_qrels(out)  # chunk-level labels, which validate reads back
    assert sum(len(v) for v in labels.values()) == 3
    res = validate_run(run_with_planted_disagreements, labels, unjudged="skip")
    assert res["agreement"]["relevant"]["n"] == 3
    # labelling again skips what is already labelled
    monkeypatch.setattr("sys.stdin", io.StringIO("n\nq\n"))
    assert main([*args, "--out", str(out)]) == 0
    assert len(read_qrels(out)[next(iter(read_qrels(out)))]) >= 1
    assert len(out.read_text().splitlines()) == 6


def test_label_asks_whole_questions_and_validate_leaves_out_what_it_never_asked(
    run_with_planted_disagreements, tmp_path
):
    """`harness label` labels a question's chunks in rank order before the next question,
    so the labels give that question's metrics; `validate` leaves a chunk the labels do
    not list out where they name chunks (nobody looked at it), where it counted it
    irrelevant before and so measured agreement on verdicts nobody labelled."""
    from harness.analysis import label_run
    from harness.analysis.validate import is_chunk_id
    from harness.report.text import format_validate_run

    run = run_with_planted_disagreements
    k = len(run.questions[0].hits)
    asked: list[tuple[str, int]] = []

    def ask(q, h):
        rank = q.hits.index(h) + 1
        asked.append((q.question.question_id, rank))
        return 2 if rank == 1 else 0

    out = tmp_path / "labels.tsv"
    assert label_run(run, out, ask, sample=k + 1) == k + 1
    first, second = asked[0][0], asked[k][0]
    assert asked == [(first, r) for r in range(1, k + 1)] + [(second, 1)]
    labels = read_qrels(out)
    res = validate_run(run, labels)
    assert res["agreement"]["relevant"]["n"] == k + 1
    assert (res["unlabelled_skipped"], res["unlabelled_irrelevant"]) == (k - 1, 0)
    assert res["questions_with_label_metrics"] == 1
    assert res["metrics"]["human"][f"hit_rate@{k}"] == 1.0  # the fully labelled question
    summary = format_validate_run(res, run.run_dir)
    assert f"{k - 1} unlabelled chunks left out (the labels name chunks)" in summary
    assert "the labels' metrics cover the 1 questions" in summary
    # the old default, asked for: every unlisted chunk a "no" nobody gave
    old = validate_run(run, labels, unjudged="irrelevant")
    assert old["agreement"]["relevant"]["n"] == 2 * k
    # document-level labels keep TREC's convention by default
    docs = validate_run(run, read_qrels(QRELS))
    assert docs["unlabelled_skipped"] == 0 and docs["unlabelled_irrelevant"] > 0
    assert is_chunk_id("notes.md#120") and not is_chunk_id("notes.md")
    assert not is_chunk_id("page.html#intro") and not is_chunk_id("#5")


def test_our_mrr_is_trec_evals_recip_rank(run_with_planted_disagreements, tmp_path):
    import pytrec_eval

    run = run_with_planted_disagreements
    run_path, qrels_path = export_trec(run, tmp_path / "trec")
    with open(run_path) as r, open(qrels_path) as q:
        trec_run = pytrec_eval.parse_run(r)
        trec_qrels = pytrec_eval.parse_qrel(q)
    at2 = pytrec_eval.RelevanceEvaluator(trec_qrels, {"recip_rank"}, relevance_level=2).evaluate(
        trec_run
    )
    at1 = pytrec_eval.RelevanceEvaluator(
        trec_qrels, {"recip_rank", "P_3"}, relevance_level=1
    ).evaluate(trec_run)
    for q in run.questions:
        qid = q.question.question_id
        if qid not in at2:  # trec_eval skips questions with no judged chunk
            continue
        assert q.metrics["mrr@3"] == pytest.approx(at2[qid]["recip_rank"])
        assert q.metrics["relevancy_mrr@3"] == pytest.approx(at1[qid]["recip_rank"])
        assert q.metrics["precision@3"] == pytest.approx(at1[qid]["P_3"])


def test_validate_sweep_kendall_tau(tmp_path):
    from harness.sweep import run_sweep

    config = load_experiment(DATA / "sweep.toml", ["sweep.pruner=none", "sweep.trials=4"])
    log = run_sweep(config, results_dir=tmp_path, cache_dir=tmp_path / "c", judge=ScriptedJudge())
    res = validate_sweep(log.sweep_dir, read_qrels(QRELS))
    assert res["trials"] == 4
    from scipy.stats import kendalltau

    expected = kendalltau(
        [r["judge"] for r in res["rows"]], [r["human"] for r in res["rows"]]
    ).statistic
    assert res["kendall_tau"] == pytest.approx(0.0 if expected != expected else expected)
    assert res["top_by_judge"][0]["judge"] == max(r["judge"] for r in res["rows"])


def test_judge_check_measures_wording_and_position_sensitivity(tmp_path, capsys):
    from harness.testing import Act, FakeOpenAI

    def behave(n, prompt):
        if "<passage n=" in prompt:  # listwise: only the first position is ever relevant
            count = prompt.count("<passage n=")
            return Act(
                text="\n".join(
                    f"{i}: relevant={'yes' if i == 1 else 'no'} complete=no"
                    for i in range(1, count + 1)
                )
            )
        if prompt.startswith(("You check search results",)) or "Search result:" in prompt:
            return Act(text="yes")  # the reworded prompt: yes to everything
        return Act(text="yes" if ("swap" in prompt.lower() or "hive" in prompt.lower()) else "no")

    with FakeOpenAI(behave) as server:
        overrides = [
            f"judge.base_url={server.base_url}",
            "judge.model=fake",
            f'questions.qrels="{QRELS}"',
        ]
        config = load_experiment(DATA / "experiment.toml", overrides)
        run = run_experiment(config, results_dir=tmp_path, cache_dir=tmp_path / "c")
        # the endpoint comes from the user, never from the run folder
        assert main(["judge-check", str(run.run_dir), "--sample", "18", "--format", "json",
                     "--cache-dir", str(tmp_path / "c"),
                     "--set", f"judge.base_url={server.base_url}",
                     "--set", "judge.model=fake"]) == 0  # fmt: skip
    import json

    res = json.loads(capsys.readouterr().out)
    judged = [h for q in run.questions for h in q.hits]
    originally_no = sum(1 for h in judged if not h.verdict.relevant.value)
    assert res["reworded"]["n"] == 18
    assert res["reworded"]["relevant_flip_rate"] == pytest.approx(originally_no / 18)
    # listwise: whichever chunk lands first is "relevant", so shuffling moves the yes around
    so = res["shuffled_order"]
    assert so["questions"] == 6 and so["n"] == 18
    assert 0 < so["relevant_flip_rate"] <= 2 / 3
    lb = res["length_bias"]
    assert lb["human_relevant"]["n"] + lb["human_not_relevant"]["n"] == 18


def _sweep_on(tmp_path, objective: str):
    from harness.sweep import run_sweep

    config = load_experiment(
        DATA / "sweep.toml",
        ["sweep.pruner=none", "sweep.trials=4", f'sweep.objective=["{objective}"]'],
    )
    return run_sweep(config, results_dir=tmp_path, cache_dir=tmp_path / "c", judge=ScriptedJudge())


def test_validate_sweep_ranks_on_the_sweeps_objective_with_the_hard_twin_beside(tmp_path, capsys):
    log = _sweep_on(tmp_path / "soft", "soft_mrr@k")
    qrels = read_qrels(QRELS)
    res = validate_sweep(log.sweep_dir, qrels)
    assert res["metric"] == "soft_mrr" and res["hard"] == "mrr"
    for row in res["rows"]:
        run = read_run(next(t.run_dir for t in log.trials if t.number == row["number"]))
        k = min(int(row["params"]["k"]), max(run.header.ks))
        by_mrr = validate_run(run, qrels, k=k)["metrics"]
        assert row["judge"] == by_mrr["judge"][f"soft_mrr@{k}"]
        assert row["judge_hard"] == by_mrr["judge"][f"mrr@{k}"]
        assert row["human"] == by_mrr["human"][f"mrr@{k}"]  # labels are certain
    assert "kendall_tau_hard" in res
    # the metric named explicitly (name or id) still wins
    assert validate_sweep(log.sweep_dir, qrels, metric="mrr")["metric"] == "mrr"
    assert validate_sweep(log.sweep_dir, qrels, metric="soft_mrr@k")["metric"] == "soft_mrr"
    assert main(["validate", str(log.sweep_dir), "--qrels", str(QRELS)]) == 0
    out = capsys.readouterr().out
    assert "by soft_mrr@k" in out and "beside it, the judge's mrr@k" in out

    other = validate_sweep(_sweep_on(tmp_path / "hit", "hit_rate@k").sweep_dir, qrels)
    assert other["metric"] == "hit_rate" and other["hard"] is None


def test_ppi_interval_of_a_rate_stays_inside_zero_to_one():
    """With few labels the normal interval passes 1 (a judge that misses answers the
    labels see everywhere); `bounds` keeps a rate's estimate and interval inside [0, 1]
    and leaves an interval already inside it alone."""
    judge = [0.0, 1.0, 0.0, 1.0, 0.0, 0.0]
    human = [1.0] * 6
    _, low, high = m.ppi_mean(judge, judge, human)
    assert high > 1.0
    est_b, low_b, high_b = m.ppi_mean(judge, judge, human, bounds=(0.0, 1.0))
    assert (est_b, high_b) == (1.0, 1.0) and low_b == low
    inside = m.ppi_mean([0.5, 0.4, 0.6, 0.5], [0.5, 0.4], [0.5, 0.5])
    assert m.ppi_mean([0.5, 0.4, 0.6, 0.5], [0.5, 0.4], [0.5, 0.5], bounds=(0.0, 1.0)) == inside


def test_validate_sweep_sources_labels_each_trial_by_its_own_chunks(tmp_path):
    """Chunk ids are `doc#start`: bees.md's 120- and 300-character chunks from offset
    169 are both `bees.md#169`. Source-span labels merged over the trials gave the short
    chunk (the answer lies past its end) the long one's "complete"; each trial is now
    labelled by its own chunks."""
    import json

    from harness.analysis.sources import source_qrels
    from harness.sweep import run_sweep

    text = (DATA / "corpus" / "bees.md").read_text()
    start = text.index("Never inspect in the rain")
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps(
            {
                "id": "hive",
                "text": "Should the hive be inspected in the rain?",
                "source": [{"doc_id": "bees.md", "start": start, "end": start + 26}],
            }
        )
        + "\n"
    )
    config = load_experiment(
        DATA / "sweep.toml",
        [
            f'questions.file="{questions}"',
            "sweep.sampler=grid",
            "sweep.pruner=none",
            "sweep.baseline=false",
            "sweep.space.chunk_size=[120, 300]",
            "sweep.space.chunk_overlap={low=0, high=0, step=1}",
            "sweep.space.k=[3]",
        ],
    )
    log = run_sweep(config, results_dir=tmp_path, cache_dir=tmp_path / "c", judge=ScriptedJudge())
    runs = {t.params["chunk_size"]: read_run(t.run_dir) for t in log.trials}
    short, long = runs[120], runs[300]
    assert "bees.md#169" in {h.chunk.chunk_id for h in short.questions[0].hits} & {
        h.chunk.chunk_id for h in long.questions[0].hits
    }, "both trials retrieve a chunk with the id bees.md#169"
    assert source_qrels(long)["hive"]["bees.md#169"] == 2
    assert source_qrels(short)["hive"]["bees.md#169"] == 0  # ends before the answer
    res = validate_sweep(log.sweep_dir, source_qrels, metric="mrr")
    by_size = {r["params"]["chunk_size"]: r["human"] for r in res["rows"]}
    for size, run in runs.items():
        own = validate_run(run, source_qrels(run))["metrics"]["human"]["mrr@3"]
        assert by_size[size] == pytest.approx(own)
    # the labels merged over the trials, as before: the short chunk read as the answer
    merged = {"hive": {**source_qrels(short)["hive"], **source_qrels(long)["hive"]}}
    before = validate_sweep(log.sweep_dir, merged, metric="mrr")
    wrong = {r["params"]["chunk_size"]: r["human"] for r in before["rows"]}
    assert wrong[120] > by_size[120]


def test_chunk_labels_apply_only_to_runs_that_cut_their_chunks_alike(
    run_with_planted_disagreements, tmp_path, cache_dir, capsys
):
    """Chunk ids are `doc#start`: a run with another chunk size has chunks with the
    labelled ids and other texts. `harness label` records the chunking in the labels
    file; validate and calibrate apply the chunk labels to runs cut the same way only,
    and label refuses to mix two chunkings in one file."""
    from harness.analysis import label_run
    from harness.analysis.validate import CHUNKING_LINE

    run = run_with_planted_disagreements
    out = tmp_path / "labels.tsv"
    # stopped before the first answer: the file holds its header only, and labelling
    # again goes on (it refused "the file holds no labels" before)
    assert label_run(run, out, lambda q, h: "quit", sample=3) == 0
    assert label_run(run, out, lambda q, h: 2, sample=3) == 3
    first = out.read_text().splitlines()[0]
    assert first.startswith(CHUNKING_LINE) and '"chunk_size": 200' in first
    assert sum(len(v) for v in read_qrels(out).values()) == 3  # the line is a comment
    other = run_experiment(
        load_experiment(DATA / "experiment.toml", ["chunking.chunk_size=120"]),
        results_dir=tmp_path / "r",
        cache_dir=cache_dir,
        judge=ScriptedJudge(),
    )
    with pytest.raises(HarnessError, match="cut with chunk_overlap=20 chunk_size=200"):
        label_run(other, out, lambda q, h: 2, sample=1)
    from harness.analysis.validate import labelled_chunking, labels_for

    labels, chunking = read_qrels(out), labelled_chunking(out)
    assert labels_for(run, labels, chunking) == labels
    assert labels_for(other, labels, chunking) == {}  # a sweep's trial cut otherwise: none
    qid = next(iter(labels))
    with_doc = {**labels, qid: {**labels[qid], "bees.md": 1}}  # a document's label applies
    assert labels_for(other, with_doc, chunking) == {qid: {"bees.md": 1}}
    assert main(["validate", str(run.run_dir), "--qrels", str(out)]) == 0
    capsys.readouterr()
    assert main(["validate", str(other.run_dir), "--qrels", str(out)]) == 2
    err = capsys.readouterr().err
    assert "its chunk labels are of chunks cut with chunk_overlap=20 chunk_size=200" in err
    assert (
        main(
            [
                "calibrate",
                str(other.run_dir),
                "--qrels",
                str(out),
                "--out",
                str(tmp_path / "c.json"),
            ]
        )
        == 2
    )
