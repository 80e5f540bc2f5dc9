"""The first screen of every report says how far its numbers can be trusted, and decisions
read on the objective statistic with the hard counts beside it (#22 items 1 and 3)."""

from __future__ import annotations

import dataclasses
import html
from pathlib import Path

from harness.cli import main
from harness.judge.calibration import UNTRUSTED_HINT
from harness.log import RunLog, read_run
from harness.report.html import page_figures, render_page, run_page, sweep_page
from harness.report.text import (
    format_question,
    format_run_summary,
    format_sweep,
    recommended_trust,
    stability_sentence,
)
from tests.report.conftest import Logs

TRUSTED = {
    "basis": "exam",
    "calibration": "cal.json",
    "rates": {"complete": {"tpr": 0.9, "fpr": 0.1, "positives": 40, "negatives": 40}},
    "complete_rate": {"raw": 0.5, "corrected": 0.5, "low": 0.4, "high": 0.6},
    "verdict": "trusted",
    "statement": "trusted: judged complete-rate 50%, corrected 50% [40%, 60%] (TPR 0.90, "
    "FPR 0.10, exam)",
}


def _with(run: RunLog, *, trust=None, metrics=None) -> RunLog:
    h = run.header
    stats = dataclasses.replace(h.stats, trust=trust) if trust is not None else h.stats
    header = dataclasses.replace(h, stats=stats, metrics={**h.metrics, **(metrics or {})})
    return dataclasses.replace(run, header=header)


def _first_section(document: str) -> str:
    start = document.index('<section id="summary">')
    return document[start : document.index("</section>", start)]


def test_a_run_without_rates_says_what_to_run_first(logs: Logs):
    run = logs.run
    assert run.header.stats.trust is not None and not run.header.stats.trust.get("rates")
    page = run_page(run)
    data = page.to_json()
    assert data["trust"]["statement"].startswith("untrusted")
    assert "harness generate" in data["trust"]["statement"]
    assert "harness calibrate --exam" in data["trust"]["statement"]
    assert data["trust"]["verdict"] == "untrusted"
    # additive: the page's earlier keys are all still there
    assert {"run", "metrics", "questions", "judge", "validation"} <= set(data)
    doc = render_page(page, page_figures(page), "")
    first = _first_section(doc)
    assert 'id="trust"' in first and "harness calibrate --exam" in first
    assert first.index('id="trust"') < first.index("status")
    assert first.count("harness calibrate --exam") == 1  # the warning is not repeated

    summary = format_run_summary(run).splitlines()
    assert summary[1].startswith("trust: untrusted") and UNTRUSTED_HINT in summary[1]
    assert sum(UNTRUSTED_HINT in line for line in summary) == 1


def test_a_run_with_rates_shows_its_statement_and_the_soft_headline(logs: Logs):
    k = logs.run.header.k
    run = _with(logs.run, trust=TRUSTED, metrics={f"soft_mrr@{k}": 0.812})
    page = run_page(run)
    assert page.trust.verdict == "trusted" and page.trust.statement == TRUSTED["statement"]
    assert page.trust.complete_rate == TRUSTED["complete_rate"]
    keys = [h.key for h in page.headline]
    assert keys == [f"soft_mrr@{k}", f"mrr@{k}", f"hit_rate@{k}"]
    first = _first_section(render_page(page, page_figures(page), ""))
    assert TRUSTED["statement"] in first and UNTRUSTED_HINT not in first
    assert first.index(f"soft_mrr@{k}") < first.index(f"mrr@{k} ")
    text = format_run_summary(run)
    assert f"trust: {TRUSTED['statement']}" in text.splitlines()[1]
    assert f"headline: soft_mrr@{k} 0.812" in text and f"beside it mrr@{k}" in text
    # the soft level is no rate (it sits far below the labels'), and the line says so
    assert "(to compare settings by, not a rate); beside it" in text
    assert "(to compare settings by, not a rate)" in first


def test_the_run_headline_is_soft_mrr_beside_mrr_and_mrr_without_it(logs: Logs):
    h = logs.run.header
    k = h.k
    assert [x.key for x in run_page(logs.run).headline] == [
        f"soft_mrr@{k}",
        f"mrr@{k}",
        f"hit_rate@{k}",
    ]
    hard_only = {key: v for key, v in h.metrics.items() if not key.startswith("soft_")}
    run = dataclasses.replace(logs.run, header=dataclasses.replace(h, metrics=hard_only))
    assert [x.key for x in run_page(run).headline] == [f"mrr@{k}", f"hit_rate@{k}"]
    assert f"headline: mrr@{k}" in format_run_summary(run)
    assert "not a rate" not in format_run_summary(run)  # a yes/no count is one


def test_each_question_in_show_leads_with_the_headline_too(logs: Logs):
    k = logs.run.header.k
    q = logs.run.questions[0]
    line = format_question(q, k).splitlines()[1]
    m = q.metrics
    assert line == (
        f"    soft_mrr@{k}={m[f'soft_mrr@{k}']:.3f}  mrr@{k}={m[f'mrr@{k}']:.3f}  "
        f"hit_rate@{k}={m[f'hit_rate@{k}']:.0f}  relevancy_mrr@{k}={m[f'relevancy_mrr@{k}']:.3f}"
    )
    hard = dataclasses.replace(
        q, metrics={key: v for key, v in m.items() if not key.startswith("soft_")}
    )
    assert format_question(hard, k).splitlines()[1].startswith(f"    mrr@{k}=")


def test_harness_show_run_prints_the_statement_near_the_top(logs: Logs, capsys):
    assert main(["show", str(logs.run.run_dir)]) == 0
    head = capsys.readouterr().out.splitlines()[:3]
    assert any(line.startswith("trust: untrusted") for line in head)
    assert any("harness calibrate --exam" in line for line in head)


def test_the_sweep_page_and_show_carry_the_recommended_trials_statement(logs: Logs, capsys):
    sweep = logs.sweep
    runs = {t.number: read_run(t.run_dir) for t in sweep.trials if Path(t.run_dir).is_dir()}
    rec = sweep.summary.recommendation
    assert rec is not None
    page = sweep_page(sweep, runs)
    assert page.recommended_trust is not None
    assert page.recommended_trust.statement.startswith("untrusted")
    assert page.to_json()["recommended_trust"]["statement"] == page.recommended_trust.statement
    first = _first_section(render_page(page, page_figures(page), ""))
    assert f"trust (trial {rec.trial})" in first
    # whether the questions separate the settings, beside the recommendation
    assert rec.stability is not None
    assert html.escape(stability_sentence(rec.stability)) in first
    # the hard counts beside the objective on the leaderboard
    for row in page.leaderboard:
        if row.state == "complete":
            run = runs[row.number]
            k = row.params["k"]
            assert row.hard == {
                "mrr": run.header.metrics[f"mrr@{k}"],
                "hit_rate": run.header.metrics[f"hit_rate@{k}"],
            }
    doc = render_page(page, page_figures(page), "")
    assert "<th>mrr@k</th>" in doc.replace(' class="num"', "") or "mrr@k" in doc

    trust = recommended_trust(sweep.summary, sweep.trials, sweep.sweep_dir)
    assert trust == runs[rec.trial].header.stats.trust
    assert main(["show", str(sweep.sweep_dir)]) == 0
    out = capsys.readouterr().out
    assert f"trust (trial {rec.trial}): untrusted" in out
    header = next(line for line in out.splitlines() if line.strip().startswith("trial"))
    assert "mrr@k" in header and "hit_rate@k" in header
    best = runs[rec.trial]
    k = best.header.k
    row = next(line for line in out.splitlines() if line.lstrip().startswith(f"{rec.trial} "))
    assert f"{best.header.metrics[f'mrr@{k}']:.3f}" in row


def test_format_sweep_without_headers_is_as_before(logs: Logs):
    plain = format_sweep(logs.sweep.summary, logs.sweep.trials)
    assert "hit_rate@k" not in plain and "trust (trial" not in plain


def test_report_compare_reads_changes_on_the_runs_objective_by_default(logs: Logs, tmp_path):
    from harness.report.html import report_compare

    out = tmp_path / "compare.html"
    report_compare([logs.run.run_dir, logs.run_small.run_dir], out=out)
    doc = out.read_text(encoding="utf-8")
    assert '"change_metric": "soft_mrr"' in doc or '"change_metric":"soft_mrr"' in doc
    assert (
        main(["report", str(logs.run.run_dir), str(logs.run_small.run_dir), "--out", str(out)]) == 0
    )
    doc = out.read_text(encoding="utf-8")
    assert '"change_metric": "soft_mrr"' in doc or '"change_metric":"soft_mrr"' in doc
    assert (
        main(
            [
                "report",
                str(logs.run.run_dir),
                str(logs.run_small.run_dir),
                "--out",
                str(out),
                "--metric",
                "mrr",
            ]
        )
        == 0
    )
    doc = out.read_text(encoding="utf-8")
    assert '"change_metric": "mrr"' in doc or '"change_metric":"mrr"' in doc
