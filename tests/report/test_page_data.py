"""The report's page data (what each page shows), its escaping and the command."""

from __future__ import annotations

import dataclasses
import html
import json
import re
from pathlib import Path

import pytest

from harness.analysis import compare_runs, read_qrels, validate_run
from harness.cli import main
from harness.log import read_run
from harness.metrics import METRIC_NAMES, metric_key, paired_bootstrap
from harness.report.html import (
    compare_page,
    page_figures,
    render_page,
    report_compare,
    report_run,
    report_sweep,
    run_page,
    script_json,
    sweep_page,
)
from harness.report.html.data import OUTCOMES, SettingRow, outcome, question_words, word_marks
from harness.secrets import remember
from harness.types import Question
from tests.conftest import DATA
from tests.report.conftest import Logs


def runs_of(logs: Logs) -> dict[int, object]:
    return {t.number: read_run(t.run_dir) for t in logs.sweep.trials}


# ---------------------------------------------------------------- small pure pieces


def test_question_words_drop_stop_words_and_repeats():
    assert question_words("When is the hive inspection? The HIVE!") == ["hive", "inspection"]
    assert question_words("") == []
    assert question_words("a to is") == []


def test_word_marks_are_whole_words_case_insensitive():
    text = "Hive inspection: hives, the hive. beehive HIVE"
    spans = word_marks(text, ["hive"])
    assert [text[s:e] for s, e in spans] == ["Hive", "hive", "HIVE"]
    assert word_marks(text, []) == []
    # regex characters in a word are literal
    assert word_marks("a+b aab", ["a+b"]) == [[0, 3]]  # not the regex a+b, which finds "aab"
    assert word_marks("x.y xay", ["x"]) == [[0, 1]]


def test_chinese_and_japanese_questions_mark_their_character_pairs():
    """Without spaces between words a whole-word match found nothing: the marks are the
    question's character pairs, as BM25 reads them, wherever they occur."""
    words = question_words("年假申请需要提前多久？ How many leave days? snake_case")
    assert words[:3] == ["年假", "假申", "申请"] and words[-5:] == [
        "many",
        "leave",
        "days",
        "snake",
        "case",
    ]
    text = "员工的年假申请需要提前两周提交。Leave days: 27, not leaves."
    marked = [text[s:e] for s, e in word_marks(text, words)]
    assert marked == ["年假申请需要提前", "Leave", "days"]  # overlapping pairs joined
    assert question_words("休暇・申請") == ["休暇", "申請"]  # the middle dot is punctuation
    # a Latin word written against Chinese or Japanese is a word of its own
    mixed = "在Docker中配置Redis很简单"
    words = question_words("如何在Docker中配置Redis？")
    assert [mixed[s:e] for s, e in word_marks(mixed, words)] == ["Docker中配置Redis"]
    assert [mixed[s:e] for s, e in word_marks(mixed, ["docker"])] == ["Docker"]


def test_outcome_of_a_question(logs: Logs):
    k = logs.run.header.k
    by_id = {q.question.question_id: q for q in logs.run.questions}
    assert outcome(by_id["hive"], k) == "complete"
    assert outcome(by_id["parking"], k) == "miss"
    assert outcome(None, k) == "not run"
    broken = dataclasses.replace(by_id["hive"], metrics={}, error="judge fell over")
    assert outcome(broken, k) == "error"


def test_script_json_cannot_close_its_element():
    obj = {"t": "</script><script>alert(1)</script><!-- & \u2028\u2029 >"}
    text = script_json(obj)
    assert "<" not in text and ">" not in text and "&" not in text
    assert "\u2028" not in text and "\u2029" not in text
    assert json.loads(text) == obj


# ---------------------------------------------------------------- a run


def test_run_page_holds_what_show_prints(logs: Logs):
    run = logs.run
    h = run.header
    page = run_page(run)
    assert page.kind == "run" and page.ks == (1, 2, 3)
    rows = {r.name: r for r in page.metrics}
    assert list(rows) == [*METRIC_NAMES, "failures", "errors"]
    for name in ("hit_rate", "mrr", "relevancy_mrr"):
        for i, k in enumerate(h.ks):
            assert rows[name].values[i] == h.metrics[f"{name}@{k}"]
            assert rows[name].ci[i] == list(h.metrics_ci[f"{name}@{k}"])
    assert list(page.curves["mrr"].mean) == [h.metrics[f"mrr@{k}"] for k in h.ks]
    # the headline against k, soft_mrr first; a run without soft metrics draws the others
    assert list(page.curves) == ["soft_mrr", "mrr", "hit_rate"]
    hard = {key: v for key, v in h.metrics.items() if not key.startswith("soft_")}
    hard_run = dataclasses.replace(run, header=dataclasses.replace(h, metrics=hard))
    assert list(run_page(hard_run).curves) == ["mrr", "hit_rate"]
    stats = dict(page.judge)
    assert stats["judge_calls"] == h.stats["judge_calls"]
    assert [r[0] for r in page.judge][:2] == ["judge_calls", "judge_cache_hits"]
    assert page.components["judge"].name == "scripted"
    assert page.config["chunking"]["chunk_size"] == 200

    qs = {q.id: q for q in page.questions}
    assert list(qs) == [q.question.question_id for q in run.questions]
    assert qs["parking"].outcome == "miss" and qs["hive"].outcome == "complete"
    assert list(page.filters.outcome) == [
        o for o in OUTCOMES if any(q.outcome == o for q in page.questions)
    ]
    assert page.filters.type == () and page.filters.topic == ()
    for q, orig in zip(page.questions, run.questions, strict=True):
        assert q.metrics["mrr"] == orig.metrics.get(f"mrr@{h.k}")
        assert list(q.metrics) == ["soft_mrr", "mrr", "hit_rate", "relevancy_mrr"]
        assert q.metrics["soft_mrr"] == orig.metrics.get(f"soft_mrr@{h.k}")
        assert len(q.hits) == len(orig.hits)
        for hit, jh in zip(q.hits, orig.hits, strict=True):
            assert page.texts[hit.text] == jh.chunk.text
            assert hit.rank == jh.hit.rank and hit.score == jh.hit.score
            assert hit.grade == jh.verdict.grade
            assert hit.relevant.value == jh.verdict.relevant.value
            assert hit.relevant.reason == "scripted relevant"
            words = question_words(orig.question.text)
            for s, e in hit.marks:
                assert jh.chunk.text[s:e].lower() in words
    hive_marks = [m for hit in qs["hive"].hits for m in hit.marks]
    assert hive_marks, "the question's words are marked in its chunks"
    # the injection chunk was retrieved and is kept verbatim (escaping is the renderer's job)
    assert any("<script>window.__pwned" in t for t in page.texts)
    json.dumps(page.to_json(), allow_nan=False)


def test_page_json_keeps_the_shape_the_script_reads(logs: Logs):
    """The typed page writes the same JSON keys the page's script and the earlier
    mapping had: records by field name, a component spec and validation as their own."""
    page = run_page(logs.run, validation=validate_run(logs.run, read_qrels(DATA / "qrels.tsv")))
    data = page.to_json()
    assert list(data) == [
        "kind",
        "title",
        "run",
        "ks",
        "metrics",
        "curves",
        "failure_counts",
        "judge",
        "questions",
        "filters",
        "texts",
        "config",
        "components",
        "data",
        "validation",
        "validation_note",
        "trust",
        "headline",
    ]  # fmt: skip (#22 added trust and headline at the end: additive)
    q = data["questions"][0]
    assert list(q) == [
        "id", "text", "type", "topics", "metrics", "outcome", "error", "failure", "hits"
    ]  # fmt: skip
    assert list(q["hits"][0]) == [
        "rank", "chunk_id", "doc_id", "score", "rerank_score", "grade", "relevant",
        "complete", "text", "marks", "flags",
    ]  # fmt: skip
    assert list(q["hits"][0]["relevant"]) == ["value", "p", "reason", "error", "evidence"]
    assert data["components"]["judge"] == logs.run.header.components["judge"].to_dict()
    assert data["validation"] == json.loads(json.dumps(page.validation.to_dict()))
    assert data["judge"][0] == ["judge_calls", logs.run.header.stats["judge_calls"]]
    sweep = sweep_page(logs.sweep, runs_of(logs)).to_json()
    assert sweep["recommendation"] == logs.sweep.summary.recommendation.to_dict()
    assert list(sweep["heatmap"]) == ["questions", "question_text", "trials", "outcome"]
    cell = next(iter(next(iter(sweep["cells"].values())).values()))
    assert list(cell) == ["k", "outcome", "error", "metrics", "hits"]


@dataclasses.dataclass(frozen=True)
class TypedQuestion(Question):
    """A question as generated ones record it (type and topic), without depending on it."""

    type: str = ""
    topic: str = ""


def test_run_page_filters_by_type_and_topic_when_questions_carry_them(logs: Logs):
    qs = [
        dataclasses.replace(
            q,
            question=TypedQuestion(
                q.question.question_id, q.question.text, type=t, topic=f"topic-{i % 2}"
            ),
        )
        for i, (q, t) in enumerate(zip(logs.run.questions, ["fact", "howto"] * 3, strict=False))
    ]
    run = dataclasses.replace(logs.run, questions=tuple(qs))
    page = run_page(run)
    assert page.filters.type == ("fact", "howto")
    assert page.filters.topic == ("topic-0", "topic-1")
    assert page.questions[1].type == "howto" and page.questions[1].topics == ("topic-1",)


def test_run_page_with_labels_holds_validate_output(logs: Logs):
    qrels = read_qrels(DATA / "qrels.tsv")
    v = validate_run(logs.run, qrels)
    page = run_page(logs.run, validation=v)
    assert page.validation is not None
    relevant = next(a for a in page.validation.agreement if a.criterion == "relevant")
    assert relevant.confusion is not None
    assert dataclasses.asdict(relevant.confusion) == (v["agreement"]["relevant"]["confusion"])
    assert relevant.kappa == pytest.approx(v["agreement"]["relevant"]["kappa"])
    document = render_page(page, page_figures(page), "")
    assert "confusion matrices" in document and "kappa" in document


def test_every_page_s_top_bar_names_each_section_once(logs: Logs):
    """The run page's bar read "Judge" twice (the judge's figures and "Judge against
    labels"), two links a reader could not tell apart."""
    pages = [
        run_page(logs.run),
        sweep_page(logs.sweep, runs_of(logs)),
        compare_page([logs.run, logs.run_small], compare_runs([logs.run, logs.run_small])),
    ]
    for page in pages:
        nav = re.search(r"<nav>(.*?)</nav>", render_page(page, page_figures(page), ""))
        assert nav is not None
        labels = re.findall(r">([^<]+)</a>", nav.group(1))
        assert len(labels) == len(set(labels)) >= 4, labels
    assert "Labels" in re.findall(r">([^<]+)</a>", render_page(pages[0], {}, ""))


def test_a_trial_without_an_objective_shows_no_interval(logs: Logs):
    """A pruned trial has no objective value; its row read '- [0.000, 0.794]', an
    interval of questions it was cut short on."""
    from harness.report.html.render import _board_cells

    row = next(r for r in sweep_page(logs.sweep, runs_of(logs)).leaderboard if r.values)
    assert "[" in _board_cells(row, [], False)[3]
    pruned = dataclasses.replace(row, values=(), state="pruned")
    assert _board_cells(pruned, [], False)[3] == "-"


# ---------------------------------------------------------------- a sweep


def test_sweep_page_holds_leaderboard_forest_heatmap_and_cost(logs: Logs):
    sweep = logs.sweep
    s = sweep.summary
    runs = runs_of(logs)
    page = sweep_page(sweep, runs)
    board = page.leaderboard
    assert next(r.number for r in board if r.state == "complete") == s.best[0].number
    assert sorted(r.number for r in board) == sorted(t.number for t in sweep.trials)
    assert [r.number for r in board if r.best] == [s.best[0].number]
    rec = s.recommendation
    assert rec is not None
    assert [r.number for r in board if r.recommended] == [rec.trial]
    assert sorted(r.number for r in board if r.tie) == sorted(rec.indistinguishable)
    for r in board:
        run = runs[r.number]
        key = metric_key(s.objective[0], r.params["k"])
        assert r.ci == list(run.header.metrics_ci[key])
        assert r.context_chars == run.header.metrics[f"context_chars@{r.params['k']}"]

    # forest: each complete trial's paired difference to the best, recomputed here by hand
    best = s.best[0].number
    base = runs[best]
    kb = base.header.k
    assert len(page.forest) == s.counts.complete - 1
    for row in page.forest:
        other = runs[row.trial]
        ko = other.header.k
        a = {q.question.question_id: q.metrics[f"mrr@{kb}"] for q in base.questions}
        b = {q.question.question_id: q.metrics[f"mrr@{ko}"] for q in other.questions}
        shared = [q for q in a if q in b]
        mean, low, high = paired_bootstrap([a[q] for q in shared], [b[q] for q in shared])
        assert (row.mean, row.low, row.high, row.n) == (mean, low, high, len(shared))

    hm = page.heatmap
    assert list(hm.trials) == [t.number for t in sweep.trials]
    assert set(hm.questions) == {q.question.question_id for q in base.questions}
    assert len(hm.outcome) == len(hm.trials)
    assert all(len(row) == len(hm.questions) for row in hm.outcome)
    for t, row in zip(hm.trials, hm.outcome, strict=True):
        by_id = {q.question.question_id: q for q in runs[t].questions}
        for qid, code in zip(hm.questions, row, strict=True):
            cell = page.cells[str(t)][qid]
            assert OUTCOMES[code] == cell.outcome == outcome(by_id[qid], runs[t].header.k)
            assert [page.texts[h.text] for h in cell.hits] == [
                jh.chunk.text for jh in by_id[qid].hits
            ]
    # chunk texts are stored once
    assert len(page.texts) == len(set(page.texts))
    assert page.cost.judge_calls == s.stats.judge_calls
    assert page.cost.distinct_verdicts == s.stats.distinct_verdicts
    assert page.cost.naive_calls == s.stats.naive_calls
    assert set(page.params) <= {"chunk_size", "chunk_overlap", "k"}
    json.dumps(page.to_json(), allow_nan=False)

    figs = page_figures(page)
    assert {"forest", "history", "slice", "heatmap"} <= set(figs)
    assert ("parallel" in figs) == (len(page.params) >= 2)
    assert figs["heatmap"]["data"][0]["z"] == [list(row) for row in hm.outcome]


def test_sweep_page_of_a_pareto_front_has_no_recommendation(logs: Logs, tmp_path: Path):
    from harness.config import load_experiment
    from harness.sweep import run_sweep
    from tests.conftest import ScriptedJudge

    config = load_experiment(
        logs.root / "data" / "sweep.toml",
        ['sweep.objective=["mrr@k", "context_chars@k"]', "sweep.trials=3"],
    )
    sweep = run_sweep(
        config, results_dir=tmp_path, cache_dir=logs.root / "cache", judge=ScriptedJudge()
    )
    page = sweep_page(sweep, {t.number: read_run(t.run_dir) for t in sweep.trials})
    assert page.recommendation is None and page.best is None and page.forest == ()
    assert list(page.front) == sorted(b.number for b in sweep.summary.best)
    assert {r.number for r in page.leaderboard if r.pareto} == set(page.front)
    figs = page_figures(page)
    assert "pareto" in figs and "forest" not in figs


# ---------------------------------------------------------------- a comparison


def test_runs_judged_differently_are_said_to_be_before_their_differences(logs: Logs):
    """Two runs judged in different modes differ in every judged metric even where they
    retrieved the same chunks; compare said nothing of it."""
    from harness.analysis.compare import judge_note
    from harness.report.text import format_compare
    from harness.types import ComponentSpec

    def judged(run, **args):
        spec = ComponentSpec("openai-chat", {"base_url": "http://127.0.0.1", **args})
        header = dataclasses.replace(
            run.header, components={**run.header.components, "judge": spec}
        )
        return dataclasses.replace(run, header=header)

    run = judged(logs.run, mode="pointwise", model="m", model_sha256="a")
    other = judged(logs.run, mode="extractive", model="m", model_sha256="a")
    assert judge_note([run, run]) is None and compare_runs([run, run]).notes == []
    # another endpoint serving the same judge, or a field an older log lacks: judged alike
    moved = judged(logs.run, mode="pointwise", model="m", model_sha256="a", few_shot=2)
    moved.header.components["judge"].args["base_url"] = "http://other"
    assert judge_note([run, moved]) is None
    reloaded = judged(logs.run, mode="pointwise", model="m", model_sha256="b")
    assert "(model file)" in (judge_note([run, reloaded]) or "")
    assert judge_note([logs.run, logs.run]) is None  # the scripted judge's own spec
    comp = compare_runs([run, other])
    assert comp.notes == [
        "the runs were judged differently (mode pointwise / extractive): a difference in a "
        "judged metric is partly the judge's, not the retrieval's; compare runs judged alike"
    ]
    assert f"note: {comp.notes[0]}" in format_compare(comp, comp.change_metric).splitlines()[3]
    page = compare_page([run, other], comp)
    assert html.escape(comp.notes[0]) in render_page(page, page_figures(page), "")


def test_compare_page_holds_what_compare_prints(logs: Logs):
    runs = [logs.run, logs.run_small]
    comp = compare_runs(runs)
    page = compare_page(runs, comp)
    assert page.k == comp.k and page.shared_questions == comp.shared_questions
    assert [r.label for r in page.runs] == ["[0]", "[1]"]
    assert SettingRow("chunking.chunk_size", (200, 60)) in page.settings
    assert page.changes, "the smaller chunks change some questions"
    rows = {m.metric: m.values for m in page.metrics}
    for i, r in enumerate(runs):
        assert rows[f"mrr@{comp.k}"][i] == comp.metrics[str(r.run_dir)][f"mrr@{comp.k}"]
    assert [(d.metric, d.mean, d.low, d.high) for d in page.differences] == [
        (d.metric, d.mean_diff, d.low, d.high) for d in comp.differences
    ]
    assert all(d.significant == (not d.low <= 0 <= d.high) for d in page.differences)
    assert [c.question_id for c in page.changes] == [c.question_id for c in comp.changes]
    for c in page.changes:
        before = next(q for q in runs[0].questions if q.question.question_id == c.question_id)
        after = next(q for q in runs[1].questions if q.question.question_id == c.question_id)
        assert [page.texts[h.text] for h in c.hits_before] == [jh.chunk.text for jh in before.hits]
        assert [page.texts[h.text] for h in c.hits_after] == [jh.chunk.text for jh in after.hits]
    json.dumps(page.to_json(), allow_nan=False)


# ---------------------------------------------------------------- the document


def _outside_data(document: str) -> str:
    """The document without its JSON data blocks and its scripts."""
    return re.sub(r"<script[^>]*>.*?</script>", "", document, flags=re.S)


def test_rendered_page_escapes_markup_and_redacts_secrets(logs: Logs, tmp_path: Path):
    secret = "harness-report-test-secret-0123456789"
    remember(secret)
    run = dataclasses.replace(
        logs.run,
        header=dataclasses.replace(
            logs.run.header, warnings=[f"<b>warn</b> key {secret}"], name=f"x{secret}"
        ),
    )
    page = run_page(run)
    document = render_page(page, page_figures(page), "/* plotly */")
    assert secret not in document
    markup = _outside_data(document)
    assert "<b>warn</b>" not in markup and html.escape("<b>warn</b>") in markup
    data = re.search(r'<script type="application/json" id="page-data">(.*?)</script>', document)
    assert data is not None
    assert "<" not in data.group(1)
    # everything an injected chunk could use is escaped inside the data block
    assert "<script>window.__pwned" not in document
    assert "<img src=x" not in document
    assert json.loads(data.group(1))["texts"] == [t.replace(secret, "***") for t in page.texts]
    # the only executable scripts are plotly.js and the page's own, both by CSP hash
    scripts = re.findall(r"<script>", document)
    assert len(scripts) == 2
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', document)
    assert csp is not None
    policy = html.unescape(csp.group(1))
    assert "script-src 'sha256-" in policy and "default-src 'none'" in policy
    assert "unsafe-inline" not in policy.split("script-src")[1]


def test_report_functions_write_beside_the_log(logs: Logs):
    w = report_run(logs.run.run_dir)
    assert w.out == logs.run.run_dir / "report.html" and w.out.stat().st_size == w.size_bytes
    assert w.kind == "run" and w.figures == 2
    text = w.out.read_text(encoding="utf-8")
    assert text.count("Plotly") > 10 and text.count("<script>") == 2  # plotly.js inlined once
    assert "https://cdn" not in _outside_data(text)
    ws = report_sweep(logs.sweep.sweep_dir)
    assert ws.out == logs.sweep.sweep_dir / "report.html" and ws.figures >= 4
    wc = report_compare([logs.run.run_dir, logs.run_small.run_dir])
    assert wc.out == logs.run.run_dir / "compare.html" and wc.kind == "compare"


def test_cli_report(logs: Logs, tmp_path: Path, capsys):
    out = tmp_path / "a" / "run.html"
    assert main(["report", str(logs.run.run_dir), "--out", str(out), "--format", "json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert (
        res["out"] == str(out) and res["kind"] == "run" and out.stat().st_size == res["size_bytes"]
    )
    qrels = str(DATA / "qrels.tsv")
    assert main(["report", str(logs.run.run_dir), "--out", str(out), "--qrels", qrels]) == 0
    assert "wrote" in capsys.readouterr().out
    assert "confusion matrices" in out.read_text(encoding="utf-8")

    sweep_out = tmp_path / "sweep.html"
    assert main(["report", str(logs.sweep.sweep_dir), "--out", str(sweep_out)]) == 0
    assert "(sweep," in capsys.readouterr().out
    trial = f"{logs.sweep.sweep_dir}:1"
    cmp_out = tmp_path / "cmp.html"
    assert main(["report", str(logs.run.run_dir), trial, "--out", str(cmp_out)]) == 0
    assert "(compare," in capsys.readouterr().out and cmp_out.is_file()


def test_cli_report_errors_are_one_line(logs: Logs, tmp_path: Path, capsys):
    assert main(["report", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("harness: error:") and "Traceback" not in err
    args = ["report", str(logs.run.run_dir), str(logs.sweep.sweep_dir)]
    assert main(args) == 2
    assert "a sweep" in capsys.readouterr().err
    args = ["report", str(logs.run.run_dir), str(logs.run_small.run_dir), "--qrels", "x.tsv"]
    assert main(args) == 2
    assert "--qrels" in capsys.readouterr().err
    assert main(["report", str(logs.run.run_dir), "--qrels", str(tmp_path / "none.tsv")]) == 2
    assert "qrels" in capsys.readouterr().err
