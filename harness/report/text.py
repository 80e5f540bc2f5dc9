"""Renderers for the terminal: every table and summary the CLI prints, as strings.

Each takes the typed log records (or the plain results of an analysis) and returns
text; the CLI only chooses between these and `--format json`. The HTML report will sit
beside this module and read the same records.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.analysis.compare import Comparison
from harness.judge.calibration import is_trust_warning, trust_statement
from harness.log import (
    RankingStability,
    RunHeader,
    RunLog,
    SweepSummary,
    TrialRecord,
    effective_status,
)
from harness.metrics import COUNTS, METRIC_NAMES, METRICS, failure_count_name, headline
from harness.types import FAILURE_LABELS, QuestionResult

if TYPE_CHECKING:  # harness.sweep imports Optuna, which show and list do not need
    from harness.sweep import ExportedConfig


def _bound_cell(bound: tuple[float, float]) -> str:
    """A metric lazy judging could only bound, as "least..most"."""
    lo, hi = bound
    if max(abs(lo), abs(hi)) >= 100 or (lo.is_integer() and hi.is_integer()):
        return f"{lo:.0f}..{hi:.0f}"
    return f"{lo:.2f}..{hi:.2f}"


def _lazy_lines(h: RunHeader) -> list[str]:
    """What a reader of a lazily judged run must know about its metrics."""
    skipped = h.stats.hits_not_judged
    if skipped is None and not h.metric_bounds:
        return []
    return [
        f"lazy judging: {skipped or 0} chunks left unjudged once each question's objective "
        "was settled; a..b are bounds (least..most), not values; a complete run "
        "(--set judge.lazy=false) pays only for the missing verdicts"
    ]


def _rows(names: Sequence[str], has: Callable[[str], bool]) -> list[str]:
    """The metric rows a table shows: all but the metrics that exist only for some runs,
    where `has` says a run has none of them. Source metrics need questions with a source
    span (generated sets), the metrics on evidence a judge that extracts it: elsewhere
    they would be a row of dashes, which reads as a failure."""
    return [
        n
        for n in names
        if n not in METRICS or METRICS[n].on not in ("source", "evidence") or has(n)
    ]


def format_metrics_table(header: RunHeader) -> str:
    """Metrics as a table: one row per metric, one column per k. A metric that lazy
    judging could only bound is shown as least..most, never as a value."""
    ks = list(header.ks)
    names = _rows(
        [*METRIC_NAMES, "failures", "errors"],
        lambda n: any(
            f"{n}@{k}" in header.metrics or f"{n}@{k}" in header.metric_bounds for k in ks
        ),
    )
    width = max(len(n) for n in names)
    cell = 10 if header.metric_bounds else 8
    lines = [f"{'metric':<{width}}  " + "  ".join(f"{'@' + str(k):>{cell}}" for k in ks)]
    for name in names:
        cells = []
        for k in ks:
            v = header.metrics.get(f"{name}@{k}")
            b = header.metric_bounds.get(f"{name}@{k}")
            if v is None and b is not None:
                cells.append(f"{_bound_cell(b):>{cell}}")
            elif v is None:
                cells.append(f"{'-':>{cell}}")
            elif name in ("context_chars", "failures", "errors"):
                cells.append(f"{v:>{cell}.0f}")
            else:
                cells.append(f"{v:>{cell}.3f}")
        lines.append(f"{name:<{width}}  " + "  ".join(cells))
    return "\n".join(lines)


def _ci_line(h: RunHeader) -> list[str]:
    k = max(h.ks) if h.ks else 0
    parts = [
        f"{name} [{h.metrics_ci[f'{name}@{k}'][0]:.3f}, {h.metrics_ci[f'{name}@{k}'][1]:.3f}]"
        for name in ("hit_rate", "mrr", "relevancy_mrr")
        if f"{name}@{k}" in h.metrics_ci
    ]
    return (
        [f"95% intervals at k={k} (bootstrap over questions): " + ", ".join(parts)] if parts else []
    )


def failure_counts(h: RunHeader) -> dict[str, float]:
    """Why the run's failures failed, at its k: each of FAILURE_LABELS with its count, and
    "not explained" when no pool was judged (failures.judge_pool = false, a sweep's
    trial) and the source spans did not explain them all. Empty when no failure was
    explained (failures.explain = false, or nothing failed)."""
    k = h.k
    counts = {label: h.metrics.get(f"{failure_count_name(label)}@{k}") for label in FAILURE_LABELS}
    if all(v is None for v in counts.values()):
        return {}
    out = {label: v or 0.0 for label, v in counts.items()}
    left = (h.metrics.get(f"failures@{k}") or 0) - sum(out.values())
    if not _pools_judged(h) and left > 0:
        out["not explained"] = left
    return out


def _pools_judged(h: RunHeader) -> bool:
    """Whether the run judged a pool for the failures its spans did not explain
    (failures.judge_pool; a log written before the setting existed did)."""
    return bool(h.config.get("failures", {}).get("judge_pool", True))


def _failures_line(h: RunHeader) -> list[str]:
    counts = failure_counts(h)
    if not counts:
        return []
    parts = ", ".join(f"{v:.0f} {label}" for label, v in counts.items())
    calls = h.stats.failure_pool_calls
    if not _pools_judged(h):
        # a sweep's trial: only the source spans labelled its failures
        paid = " (from their source spans; no pool judged: failures.judge_pool = false)"
    else:
        paid = f" ({calls} of the judge calls went to their pools)" if calls is not None else ""
    return [f"failures at k={h.k}: {parts}{paid}; harness show --failures says why"]


def headline_metrics(h: RunHeader) -> list[tuple[str, float, tuple[float, float] | None]]:
    """(metric key, mean, 95% interval or None) of HEADLINE_METRICS at the run's k, those
    the run has (a mode without probabilities has no soft_mrr)."""
    k = h.k or (max(h.ks) if h.ks else 1)
    out = []
    for key, value in headline(h.metrics, k).items():
        ci = h.metrics_ci.get(key)
        out.append((key, value, (ci[0], ci[1]) if ci is not None else None))
    return out


SOFT_NOT_A_RATE = "to compare settings by, not a rate"
"""What the headline says of a soft metric: it ranks settings as people would, but its
level sits far from the labels' (quick-start handbook 0.32 against 0.82, TREC DL 0.54
against 0.75; docs/pages/judging.md#what-the-metrics-mean)."""


def headline_line(h: RunHeader) -> str | None:
    """`headline: soft_mrr@4 0.812 [0.70, 0.90] (to compare settings by, not a rate);
    beside it mrr@4 0.900, hit_rate@4 0.950`."""
    rows = headline_metrics(h)
    if not rows:
        return None

    def cell(key: str, v: float, ci: tuple[float, float] | None) -> str:
        return f"{key} {v:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")

    first, rest = rows[0], rows[1:]
    note = f" ({SOFT_NOT_A_RATE})" if first[0].startswith("soft_") else ""
    beside = f"; beside it {', '.join(cell(*r) for r in rest)}" if rest else ""
    return f"headline: {cell(*first)}{note}{beside}"


def format_run_summary(run: RunLog) -> str:
    """What `harness run` prints at the end: status, how far its numbers can be trusted
    (the trust statement, or what to run to know), the headline (soft_mrr beside mrr and
    hit_rate), metrics table, intervals and cost, with the reranker and a warning when the
    llm reranker shared the judge's model.
    """
    h = run.header
    s = h.stats
    status = effective_status(h)
    headline = headline_line(h)
    parts = [
        f"run {h.run_id}: {status}, "
        f"{h.data.get('n_questions', len(run.questions))} questions, "
        f"{h.data.get('n_chunks', '?')} chunks indexed",
        *([headline] if headline else []),
        format_metrics_table(h),
        *_lazy_lines(h),
        *_ci_line(h),
        *_failures_line(h),
        (
            f"judge calls {s.judge_calls or 0}, cache hits {s.judge_cache_hits or 0}, "
            f"errors {s.judge_errors or 0}, index {'cached' if s.index_cache_hit else 'built'} "
            f"in {s.index_s or 0:.1f} s, total {s.total_s or 0:.1f} s"
        ),
        *breakdown_lines(run.questions, h.k or 1),
        f"result log: {run.run_dir}",
    ]
    if h.error:
        parts.insert(1, f"error: {h.error}")
    elif status != h.status:
        parts.insert(1, f"error: its process ({h.pid} on {h.host}) is gone; the run did not finish")
    for w in reversed([w for w in h.warnings if not is_trust_warning(w, s.trust)]):
        parts.insert(1, f"warning: {w}")
    reranker = h.components.get("reranker")
    if reranker is not None and reranker.args.get("same_model_as_judge"):
        parts.insert(
            1,
            "warning: the llm reranker used the judge's own model; the judge graded its own "
            "ranking, which flatters these metrics",
        )
    if reranker is not None and reranker.name != "none":
        parts.insert(1, f"reranker: {reranker.name} {reranker.args}")
    if s.trust or status in ("done", "pruned"):  # a run still judging has no statement yet
        parts.insert(1, f"trust: {trust_statement(s.trust)}")
    return "\n".join(parts)


def mark(value: bool | None) -> str:
    """A verdict value as yes, no, or ERR when judging failed (None)."""
    return {True: "yes", False: "no", None: "ERR"}[value]


def format_estimate(est: dict[str, Any]) -> str:
    """The calls, tokens and cost lines of a run's or a sweep's dry run."""
    why = {
        "pointwise": "'complete' is asked only of chunks judged relevant",
        "both": "one call per chunk for both criteria",
        "graded": "one call per chunk for a 0-3 grade",
        "extractive": "'complete' (the answering sentence) only of chunks judged relevant",
        "ensemble": "two wordings per criterion; 'complete' only of relevant chunks",
        "listwise": "one call per question",
        "criteria": "one call per chunk for four 0-3 criterion grades",
    }[est["mode"]]
    lines = [
        f"judge calls: {est['judge_calls_min']} to {est['judge_calls_max']} "
        f"(mode {est['mode']}: {why})",
        f"prompt tokens: about {est['prompt_tokens_min']} to {est['prompt_tokens_max']}; "
        f"completion tokens at most {est['completion_tokens_max']}",
    ]
    if "cost_usd_max" in est:
        lines.append(f"cost: at most ${est['cost_usd_max']:.4f}")
    return "\n".join(lines)


def format_sweep_estimate(est: dict[str, Any], max_rows: int = 20) -> str:
    """A sweep's dry run: the bound, then the costliest settings of the space."""
    lines = [
        f"dry run: {est['trials']} trials ({est['sampler']}) over {est['settings_in_space']} "
        f"settings{'' if est['exact_pairs'] else ' (upper bounds: some indexes are not built)'}",
        f"judge calls: at most {est['judge_calls_max']} (mode {est['mode']}; one trial at "
        f"most {est['one_trial_calls_max']}; without the verdict cache up to "
        f"{est['no_cache_calls_max']})",
        f"prompt tokens: at most {est['prompt_tokens_max']}; "
        f"completion tokens at most {est['completion_tokens_max']}",
    ]
    if est.get("sampler_reason"):
        lines.insert(1, f"  {est['sampler']}: {est['sampler_reason']}")
    if "cost_usd_max" in est:
        lines.append(f"cost: at most ${est['cost_usd_max']:.4f}")
    if "batch_cost_usd_max" in est:
        chosen = " (judge.batch: the sweep goes this way)" if est.get("batch") else ""
        lines.append(
            f"online price: at most ${est['cost_usd_max']:.4f}; batch price: at most "
            f"${est['batch_cost_usd_max']:.4f} (the whole space through a batch API){chosen}"
        )
    if est.get("lazy"):
        lines.append(
            f"lazy judging (judge.lazy): at most {est['lazy_judge_calls_max']} judge calls; "
            "each question stops once its objective is settled (one verdict when its first "
            "chunk settles it)"
        )
    rows = sorted(est["settings"], key=lambda d: d["calls_max"], reverse=True)
    lines += ["", f"{'pairs':>6}  {'open':>6}  {'calls':>6}  setting (costliest first)"]
    for d in rows[:max_rows]:
        params = " ".join(f"{k}={v}" for k, v in d["params"].items())
        lines.append(f"{d['pairs']:>6}  {d['open_pairs']:>6}  {d['calls_max']:>6}  {params}")
    if len(rows) > max_rows:
        lines.append(f"... {len(rows) - max_rows} more settings (--format json lists all)")
    return "\n".join(lines)


def format_question(q: QuestionResult, k: int, excerpt_chars: int = 300) -> str:
    """One question as `show` prints it: its headline metrics at k (soft_mrr, mrr,
    hit_rate, as `run` leads) and relevancy_mrr, then each hit with its verdicts,
    scores, an excerpt of at most `excerpt_chars` characters and any reasons or errors.
    """
    m = q.metrics
    # the run's headline in its order (soft_mrr first), then relevancy_mrr; a question
    # without metrics (judging failed) shows its hard ones as nan
    nan = float("nan")
    lead = headline(m, k) or {f"mrr@{k}": nan, f"hit_rate@{k}": nan}
    shown = {**lead, f"relevancy_mrr@{k}": m.get(f"relevancy_mrr@{k}", nan)}
    values = "  ".join(
        f"{key}={value:.0f}" if key.startswith("hit_rate@") else f"{key}={value:.3f}"
        for key, value in shown.items()
    )
    lines = [
        f"[{q.question.question_id}] {q.question.text}",
        f"    {values}" + (f"  ERROR: {q.error}" if q.error else ""),
    ]
    if q.failure is not None:
        f = q.failure
        where = "" if f.chunk_id is None else f"  {f.chunk_id}"
        rank = ""
        if f.label in ("missed", "judge-missed"):
            # the reason says where a chunk without a dense rank was found
            rank = "" if f.rank is None else f"  rank {f.rank}"
        lines.append(f"    failure: {f.label}{rank}{where}")
        lines.extend(
            textwrap.wrap(f.reason, 100, initial_indent="      ", subsequent_indent="      ")
        )
    for jh in q.hits:
        v = jh.verdict
        conf = ""
        if v.relevant.p_yes is not None:
            conf = f"  p(relevant)={v.relevant.p_yes:.2f}"
        if v.complete.p_yes is not None:
            conf += f"  p(complete)={v.complete.p_yes:.2f}"
        rerank = "" if jh.hit.rerank_score is None else f"  rerank {jh.hit.rerank_score:.3f}"
        lines.append(
            f"  #{jh.hit.rank}  score {jh.hit.score:.3f}{rerank}  relevant={mark(v.relevant.value)}  "
            f"complete={mark(v.complete.value)}{conf}  {jh.chunk.chunk_id}"
        )
        text = " ".join(jh.chunk.text.split())
        if len(text) > excerpt_chars:
            text = text[: excerpt_chars - 1] + "…"
        lines.extend(
            textwrap.wrap(text, 100, initial_indent="      | ", subsequent_indent="      | ")
        )
        for crit in (v.relevant, v.complete):
            note = crit.error or crit.reason
            if note:
                lines.append(f"      {crit.criterion}: {note}")
            if crit.evidence:
                lines.append(f"      {crit.criterion} evidence: {crit.evidence[:200]}")
            if crit.p_raw is not None:
                lines.append(
                    f"      {crit.criterion}: raw P(yes) {crit.p_raw:.2f}, calibrated {crit.p_yes:.2f}"
                )
        lines.extend(f"      ! {flag}" for flag in jh.flags)
    return "\n".join(lines)


def fmt_values(values: list[float] | None) -> str:
    """A trial's objective values to three decimals; "-" when it has none."""
    return ", ".join(f"{v:.3f}" for v in values) if values else "-"


HARD_BESIDE = ("mrr", "hit_rate")
"""The yes/no counts shown beside a sweep's objective, whatever it is."""


def format_sweep(
    summary: SweepSummary,
    trials: Sequence[TrialRecord],
    *,
    hard: Mapping[int, Mapping[str, float]] | None = None,
    trust: Mapping[str, Any] | None = None,
) -> str:
    """A sweep: its settings, one row per trial (its objective values, then, with `hard`
    (trial number -> its run header's metrics, see `trial_metrics`), mrr@k and
    hit_rate@k at its k beside them), the best trial(s) with ties, the recommendation with
    `trust` (the recommended trial's `stats.trust`, see `recommended_trust`) as its trust
    statement, the cost."""
    head_hard = "".join(f"  {name + '@k':>10}" for name in HARD_BESIDE) if hard else ""
    lines = [
        f"sweep {summary.sweep_id}: {effective_status(summary)}, objective "
        f"{' & '.join(summary.objective)} ({', '.join(summary.directions)}), "
        f"sampler {summary.sampler.name} seed {summary.sampler.seed}",
        f"{'trial':>5}  {'state':<8}  {'values':<16}{head_hard}  params",
    ]
    if summary.sampler.reason:
        lines.insert(1, f"  {summary.sampler.name}: {summary.sampler.reason}")
    for t in trials:
        params = " ".join(f"{k}={v}" for k, v in t.params.items())
        note = f"  ({t.error})" if t.error else ""
        if t.state == "pruned" and not t.error:
            note = f"  (after {t.questions_done} questions)"
        cells = ""
        if hard:
            mine = hard.get(t.number, {})
            k = t.params.get("k")
            for name in HARD_BESIDE:
                v = mine.get(f"{name}@{k}")
                cells += f"  {'-' if v is None else f'{v:.3f}':>10}"
        lines.append(
            f"{t.number:>5}  {t.state:<8}  {fmt_values(t.values):<16}{cells}  {params}{note}"
        )
    label = "best" if len(summary.objective) == 1 else "Pareto front"
    for b in summary.best:
        lines.append(f"{label}: trial {b.number} {fmt_values(b.values)} {b.params}  {b.run_dir}")
        if b.indistinguishable is not None:
            ties = ", ".join(str(n) for n in b.indistinguishable) or "none"
            lines.append(
                f"  cannot be told apart from it ({b.confidence:.0%} paired bootstrap): trials {ties}"
            )
    lines += _recommendation_lines(summary)
    if summary.recommendation is not None and trust is not None:
        lines.append(
            f"  trust (trial {summary.recommendation.trial}): {trust_statement(dict(trust))}"
        )
    lines += _importance_lines(summary)
    lines += [f"warning: {w}" for w in summary.warnings]
    c, st = summary.counts, summary.stats
    lines.append(
        f"trials: {c.complete} complete, {c.pruned} pruned, {c.failed} failed"
        + (f", {c.repeats} repeats not run" if c.repeats else "")
        + f"; judge calls {st.judge_calls}, cache hits {st.judge_cache_hits}, distinct "
        f"verdicts {st.distinct_verdicts}, without a cache {st.naive_calls} calls"
    )
    if st.batch_verdicts:
        lines.append(
            f"batch API: {st.batch_verdicts} verdicts judged before the trials "
            f"(${st.batch_cost_usd:.4f} of the sweep's ${st.cost_usd:.4f})"
        )
    return "\n".join(lines)


STABLE, UNSTABLE = 0.7, 0.3
"""Median split-half taus at or above which the questions separate the trials, and below
which they do not (in between: partly). On the TREC DL development half the labels' own
ranking of 12 retrieval settings gave -0.35: its 22 queries do not separate them."""


def stability_sentence(st: RankingStability) -> str:
    """The ranking stability in one sentence, with what it means for the pick."""
    if st.tau >= STABLE:
        read = "the questions separate the trials"
    elif st.tau >= UNSTABLE:
        read = "the questions separate the trials only in part"
    else:
        read = (
            "the trials differ less than the questions do; another question set would "
            "rank them differently"
        )
    winner = (
        f"; the halves put the same setting first in {st.same_winner:.0%} of them"
        if st.same_winner is not None
        else ""
    )
    return (
        f"ranking stability: split-half Kendall tau {st.tau:.2f} ({st.trials} settings, "
        f"{st.questions} questions, median of {st.draws} random halves; 10-90%: "
        f"{st.tau_low:.2f}..{st.tau_high:.2f}{winner}): {read}"
    )


def _recommendation_lines(summary: SweepSummary) -> list[str]:
    """The recommendation: the trial, why, the tests behind it, the questions still needed."""
    r = summary.recommendation
    if len(summary.objective) != 1:
        return [
            "recommendation: none for two objectives (a Pareto front has no single best; "
            "pick a trial of the front by the trade-off you accept)"
        ]
    if r is None:
        return ["recommendation: none yet (no complete trial)"]
    params = " ".join(f"{k}={v}" for k, v in r.params.items())
    lines = [f"recommended: trial {r.trial}  {params}", f"  {r.reason}"]
    if r.comparisons:
        tests = ", ".join(
            f"{t.trial} p={t.p_value:.3f} (Holm {t.p_holm:.3f})" for t in r.comparisons
        )
        lines.append(f"  against the best (trial {r.best}), alpha {r.alpha:g}: {tests}")
        lines.append(f"  test: {r.test}")
    if r.runner_up is not None:
        if r.more_questions is None:
            more = "their mean difference is 0, so no number of questions would"
        elif r.more_questions == 0:
            more = "the questions used already suffice at 80% power"
        else:
            s = "" if r.more_questions == 1 else "s"
            more = f"about {r.more_questions} more question{s} would (80% power)"
        lines.append(f"  separating the best from the runner-up (trial {r.runner_up}): {more}")
    if r.stability is not None:
        lines.append(f"  {stability_sentence(r.stability)}")
    return lines


def _importance_lines(summary: SweepSummary) -> list[str]:
    """Parameter importances, or why there are none."""
    if summary.importances:
        shares = ", ".join(f"{k} {v:.2f}" for k, v in summary.importances.items())
        return [f"parameter importances (PED-ANOVA, {summary.objective[0]}): {shares}"]
    if summary.importances_note:
        return [f"parameter importances: none ({summary.importances_note})"]
    if summary.status == "done":
        return ["parameter importances: not recorded (a sweep from before they were)"]
    return ["parameter importances: computed when the sweep ends"]


def format_exported_config(exported: ExportedConfig) -> str:
    """`export-config`: the file written, why that trial, then the LangChain code."""
    params = " ".join(f"{k}={v}" for k, v in exported.params.items())
    return (
        f"wrote {exported.out}: trial {exported.trial}  {params}\n"
        f"  {exported.why}\n"
        "  set the judge's endpoint in it (judge.base_url, judge.api_key_env): a results "
        "folder's endpoints are never copied\n\n"
        "# The same retrieval in LangChain, to paste into your RAG system:\n"
        f"{exported.langchain}"
    )


def format_run_estimate(est: dict[str, Any]) -> str:
    """A run's dry run: the pairs, then calls, tokens and cost."""
    first = (
        f"dry run: {est['questions']} questions, {est['pairs']} (question, chunk) pairs"
        f"{'' if est['exact_pairs'] else ' (upper bound: the index is not built)'}, "
        f"{est['open_pairs']} not yet judged"
    )
    out = first + "\n" + format_estimate(est)
    if est.get("lazy"):
        cost = est.get("lazy_cost_usd_max")
        out += (
            f"\nlazy judging (judge.lazy): {est['lazy_judge_calls_min']} to "
            f"{est['lazy_judge_calls_max']} judge calls"
            + (f", at most ${cost:.4f}" if cost is not None else "")
            + ": each question stops once its objective is settled"
        )
    if "failure_pool_calls_max" in est:
        cost = est.get("failure_pool_cost_usd_max")
        out += (
            f"\nexplaining failures: at most {est['failure_pool_calls_max']} more judge calls "
            f"({est['failure_pool_open_pairs']} of {est['failure_pool_pairs']} pool pairs not "
            "yet judged"
            + (f", at most ${cost:.4f}" if cost is not None else "")
            + "); an upper bound: every question could fail (failures.judge_pool = false "
            "labels failures from their source spans alone; failures.explain = false skips it)"
        )
    return out


def format_questions(run: RunLog, questions: Sequence[QuestionResult]) -> str:
    """`show RUN`: the summary, then each selected question with its graded chunks."""
    k = run.header.k or 1
    blocks = [format_run_summary(run), ""]
    for q in questions:
        blocks += [format_question(q, k), ""]
    if not questions:
        blocks.append("no questions match")
    return "\n".join(blocks).rstrip("\n") + ("\n" if questions else "")


def format_list(rows: Sequence[dict[str, Any]]) -> str:
    """`list`: one line per run or sweep."""
    if not rows:
        return "no runs or sweeps here"
    lines = []
    for r in rows:
        if r["status"] == "unreadable":
            lines.append(f"{r['kind']:<6} {r['id']:<48} unreadable: {r['error']}")
        elif r["kind"] == "run":
            m = "  ".join(f"{k}={v:.3f}" for k, v in r["metrics"].items())
            lines.append(
                f"run    {r['id']:<48} {r['status']:<11} {r['n_questions'] or '?':>4} q  {m}"
            )
        else:
            c = r["counts"]
            best = (
                f"best trial {r['best_trial']}: {fmt_values(r['best_values'])}"
                if r["best_values"]
                else ""
            )
            lines.append(
                f"sweep  {r['id']:<48} {r['status']:<11} {c['complete']} complete, "
                f"{c['pruned']} pruned, {c['failed']} failed  {' & '.join(r['objective'])}  {best}"
            )
    return "\n".join(lines)


def short_name(run_dir: str | Path) -> str:
    """A run's name as compare prints it: `<sweep>/<n>` for a trial, else the folder."""
    p = Path(run_dir)
    if p.parent.name == "trials":
        return f"{p.parent.parent.name}/{p.name}"
    return p.name if p.name not in ("", ".") else str(run_dir)


def format_compare(comp: Comparison, change_metric: str) -> str:
    """`compare`: metrics side by side, paired differences to the first run, and the
    questions whose `change_metric` changed, with the chunks before and after."""
    k = comp.k
    short = [short_name(r) for r in comp.runs]
    lines = [
        f"compare at k={k} over {comp.shared_questions} shared questions "
        f"(intervals: 95% paired bootstrap of the difference to the first run)"
    ]
    lines += [f"  [{i}] {name}" for i, name in enumerate(short)]
    lines += [f"note: {n}" for n in comp.notes]
    names = _rows(
        (*METRIC_NAMES, *COUNTS),
        lambda n: any(
            f"{n}@{k}" in comp.metrics[r] or f"{n}@{k}" in comp.bounds.get(r, {}) for r in comp.runs
        ),
    )
    width = max(18, *(len(f"{m}@{k}") + 1 for m in names))
    lines.append(
        f"{'metric':<{width}}" + "".join(f"{'[' + str(i) + ']':>10}" for i in range(len(short)))
    )
    for metric in names:
        mk = f"{metric}@{k}"
        cells = []
        for r in comp.runs:
            v = comp.metrics[r].get(mk)
            b = comp.bounds.get(r, {}).get(mk)
            if v is None and b is not None:
                cells.append(f"{_bound_cell(b):>10}")
                continue
            whole = metric in COUNTS or (v is not None and v >= 100)  # counts, characters
            cells.append(f"{'-':>10}" if v is None else f"{v:>10.0f}" if whole else f"{v:>10.3f}")
        lines.append(f"{mk:<{width}}" + "".join(cells))
    if any(comp.bounds.values()):
        lines.append(
            "a..b: bounds, not values: lazy judging left chunks unjudged once each question's "
            "objective was settled (no difference is given for them)"
        )
    lines.append("")
    for d in comp.differences:
        i = comp.runs.index(d.run)
        sig = "" if d.low <= 0 <= d.high else "  *"
        f = ".0f" if d.metric.startswith("context_chars@") else ".3f"  # characters
        lines.append(
            f"[{i}]-[0] {d.metric:<{width}}{d.mean_diff:+{f}}  [{d.low:+{f}}, {d.high:+{f}}]{sig}"
        )
    if comp.changes:
        lines.append(f"\nquestions whose {change_metric}@{k} changed:")
    for c in comp.changes:
        i = comp.runs.index(c.run)
        word = "better" if c.after > c.before else "worse"
        lines.append(
            f"  [{i}] {word:<6} {c.before:.3f} -> {c.after:.3f}  [{c.question_id}] {c.text}"
        )
        for label, h in (("before", c.first_hit_before), ("after", c.first_hit_after)):
            if h:
                excerpt = " ".join(h["text"].split())[:140]
                lines.append(f"        {label}: #{h['rank']} {h['chunk_id']}: {excerpt}")
            else:
                lines.append(f"        {label}: no relevant-and-complete chunk in the top {k}")
    return "\n".join(lines)


def format_validate_sweep(res: dict[str, Any], target: str) -> str:
    """`validate SWEEP`: Kendall tau and the top trials by judge and by labels."""
    hard = res.get("hard")
    lines = [
        f"sweep {target}: Kendall tau between the judge's and the labels' ranking of "
        f"{res['trials']} trials by {res['metric']}@k: {res['kendall_tau']:.3f}",
    ]
    if hard:
        tau_hard = res.get("kendall_tau_hard")
        lines.append(
            f"  beside it, the judge's {hard}@k: Kendall tau "
            + ("-" if tau_hard is None else f"{tau_hard:.3f}")
            + f" (the labels' side is {hard}@k either way: labels are certain)"
        )
    if res.get("note"):
        lines.append(f"  note: {res['note']}")
    lines.append(f"{'rank':>4}  {'by judge':<44} {'by labels':<44}")

    def cell(r: dict[str, Any]) -> str:
        beside = (
            f" ({hard} {r['judge_hard']:.3f})" if hard and r.get("judge_hard") is not None else ""
        )
        return f"#{r['number']} j={r['judge']:.3f}{beside} h={r['human']:.3f}"

    for i, (a, b) in enumerate(zip(res["top_by_judge"], res["top_by_human"], strict=True), 1):
        lines.append(f"{i:>4}  {cell(a):<44} {cell(b):<44}")
    return "\n".join(lines)


def unlabelled_note(res: Mapping[str, Any]) -> str:
    """How `validate_run` counted the retrieved chunks its labels do not list, and which
    questions the labels' metrics cover, in words."""
    skipped = res.get("unlabelled_skipped", 0)
    irrelevant = res.get("unlabelled_irrelevant", 0)
    parts = []
    if skipped:
        parts.append(f"{skipped} unlabelled chunks left out (the labels name chunks)")
    if irrelevant:
        parts.append(
            f"{irrelevant} unlabelled chunks counted irrelevant (the labels name documents)"
        )
    covered = res.get("questions_with_label_metrics")
    if covered is not None and covered < res["questions_labelled"]:
        parts.append(
            f"the labels' metrics cover the {covered} questions whose top {res['k']} are all "
            "labelled"
        )
    return "; ".join(parts) or "every retrieved chunk labelled"


def format_validate_run(res: dict[str, Any], run_dir: Path) -> str:
    """`validate RUN`: agreement per criterion, metrics both ways, PPI estimates."""
    lines = [
        f"run {run_dir}: {res['questions_labelled']} of {res['questions_in_run']} "
        f"questions labelled; k={res['k']}; {unlabelled_note(res)}"
    ]
    if res["binary_labels"]:
        lines.append("labels are binary: 'complete' is checked against relevance")
    lines.append(
        f"labels: relevant from grade {res.get('relevant_grade', 1)}, complete from grade "
        f"{res.get('complete_grade', '?')}"
    )
    lines.append(
        f"{'criterion':<10} {'n':>5} {'tp':>5} {'fp':>5} {'fn':>5} {'tn':>5} {'accuracy':>9} "
        f"{'kappa':>7}  {'95% interval':<17} {'AUC':>6}  judge/labels yes"
    )
    for crit, a in res["agreement"].items():
        if not a["n"]:
            lines.append(f"{crit:<10} {0:>5}")
            continue
        c, ci = a["confusion"], a["kappa_ci95"]
        ci_s = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "-"
        auc_s = "-" if a.get("auc") is None else f"{a['auc']:.3f}"
        lines.append(
            f"{crit:<10} {a['n']:>5} {c['tp']:>5} {c['fp']:>5} {c['fn']:>5} {c['tn']:>5} "
            f"{a['accuracy']:>9.3f} {a['kappa']:>7.3f}  {ci_s:<17} {auc_s:>6}  "
            f"{a['judge_yes_rate']:.0%}/{a['human_yes_rate']:.0%}"
        )
    k = res["k"]
    lines.append(f"\n{'metric':<18} {'judge':>8} {'labels':>8}")
    for name in ("hit_rate", "mrr", "relevancy_mrr", "precision", "ndcg"):
        key = f"{name}@{k}"
        j, h = res["metrics"]["judge"].get(key), res["metrics"]["human"].get(key)
        lines.append(f"{key:<18} {_num(j):>8} {_num(h):>8}")
    for key, p in res["ppi"].items():
        lines.append(
            f"{key}: judge only {p['judge_only']:.3f}; label-corrected (PPI, {p['n_labelled']} "
            f"labelled) {p['ppi']:.3f} [{p['ci95'][0]:.3f}, {p['ci95'][1]:.3f}]"
        )
    return "\n".join(lines)


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1%}"


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def format_judge_check(res: dict[str, Any]) -> str:
    """`judge-check`: flip rates under a reworded prompt and shuffled order, length bias."""
    rw, so = res["reworded"], res["shuffled_order"]
    lines = [
        f"judge check of {res['run_dir']} on {res['sample']} sampled (question, chunk) pairs",
        f"reworded prompt:  relevant flips {_pct(rw['relevant_flip_rate'])}, complete flips "
        f"{_pct(rw['complete_flip_rate'])} (n={rw['n']})",
        f"shuffled order (listwise, {so['questions']} questions): relevant flips "
        f"{_pct(so['relevant_flip_rate'])}, complete flips {_pct(so['complete_flip_rate'])} "
        f"(n={so['n']})",
    ]
    for group, lb in res.get("length_bias", {}).items():
        if "difference" in lb and lb["difference"] is not None:
            lines.append(
                f"length bias, {group.replace('_', ' ')} (n={lb['n']}): judged relevant "
                f"{_pct(lb['judge_yes_rate_long'])} of chunks over {lb['median_chars']:.0f} chars vs "
                f"{_pct(lb['judge_yes_rate_short'])} of shorter ones"
            )
    if "length_bias" not in res:
        lines.append("length bias: needs human labels (--qrels)")
    return "\n".join(lines)


def format_calibration(cal: Any, path: Path) -> str:
    """`calibrate`: per criterion the pairs fitted, the map and the raw cut it implies."""
    lines = [
        f"calibration written to {path} (Platt scaling of the judge's P(yes); labels: "
        f"relevant from grade {cal.relevant_grade}, complete from grade {cal.complete_grade})",
        f"{'criterion':<10} {'pairs':>6} {'yes':>5} {'a':>7} {'b':>7}  verdict yes when raw P(yes) >",
    ]
    for name, m in cal.criteria.items():
        cut = (
            "none (P(yes) does not rank the labels)"
            if m.threshold is None
            else f"{m.threshold:.3f}"
        )
        lines.append(f"{name:<10} {m.n:>6} {m.positives:>5} {m.a:>7.3f} {m.b:>7.3f}  {cut}")
    for name, reason in cal.source.get("left_out", {}).items():
        lines.append(f"{name}: no map, its verdicts stay as judged: {reason}")
    for name, r in cal.rates.items():
        lines.append(
            f"{name}: TPR {r.tpr:.2f}, FPR {r.fpr:.2f} on {r.positives} answers and "
            f"{r.negatives} non-answers (of the verdicts runs will report)"
        )
    if cal.applies == "rates":
        how = "verdicts kept as judged; their rates corrected with the error rates above"
    else:
        how = "no judge call: verdicts are re-cut from the cached probabilities"
    lines.append(f'apply it with judge.calibration = "{path}" ({how})')
    return "\n".join(lines)


def format_injection_check(res: dict[str, Any]) -> str:
    """`judge-check --injection`: flip rates with an instruction to the grader appended."""
    lines = [
        f"injection check of {res['run_dir']} on {res['sample']} sampled (question, chunk) "
        "pairs, each with a line telling the grader to answer yes appended"
    ]
    for name, label in (
        ("control", "control (re-judged, no line appended)"),
        ("as_configured", f"as judged (judge.injection = {res['policy']})"),
        ("unmasked", "unmasked"),
    ):
        r = res[name]
        lines.append(
            f"{label}: relevant flips {_pct(r['relevant_flip_rate'])} ({r['relevant_to_yes']} "
            f"to yes), complete flips {_pct(r['complete_flip_rate'])} ({r['complete_to_yes']} "
            f"to yes), n={r['n']}, {r['calls']} calls"
        )
    return "\n".join(lines)


GROUP_WIDTH = 60
"""Longest type or topic label a breakdown table prints; a longer one is cut with "…"."""


def _group(label: object) -> str:
    text = str(label)
    return text if len(text) <= GROUP_WIDTH else text[: GROUP_WIDTH - 1] + "…"


def format_breakdown(rows: Sequence[dict[str, Any]], by: str, k: int) -> str:
    """Mean metrics at k per question type or topic (`show --by`, and after a run)."""
    from harness.analysis.sources import BREAKDOWN_METRICS

    width = max([len(by), *(len(_group(r[by])) for r in rows)])
    head = f"{by:<{width}}  {'n':>4}  " + "  ".join(
        f"{m + '@' + str(k):>13}" for m in BREAKDOWN_METRICS
    )
    lines = [head]
    for r in rows:
        cells = "  ".join(
            f"{'-':>13}" if r[m] is None else f"{r[m]:>13.3f}" for m in BREAKDOWN_METRICS
        )
        lines.append(f"{_group(r[by]):<{width}}  {r['questions']:>4}  {cells}")
    return "\n".join(lines)


def breakdown_lines(questions: Sequence[QuestionResult], k: int) -> list[str]:
    """Breakdowns by type and by topic for questions that carry them (none otherwise)."""
    from harness.analysis.sources import breakdown

    out = []
    for by in ("type", "topic"):
        if any(getattr(q.question, by) for q in questions):
            out += [f"by {by}:", format_breakdown(breakdown(questions, k, by), by, k)]
    return out


def format_compare_breakdown(runs: Sequence[RunLog], k: int, by: str, metric: str) -> str:
    """`compare --by`: one metric at k per question type or topic, one column per run."""
    from harness.analysis.sources import breakdown

    tables = [{r[by]: r for r in breakdown(run.questions, k, by, (metric,))} for run in runs]
    groups = sorted({g for t in tables for g in t}, key=lambda g: (g == "-", g))
    width = max([len(by), *(len(_group(g)) for g in groups)])
    lines = [f"{metric}@{k} by {by}"]
    lines.append(
        f"{by:<{width}}"
        + "".join(
            f"{'[' + str(i) + '] n':>9}{'':>1}{'[' + str(i) + ']':>8}" for i in range(len(runs))
        )
    )
    for g in groups:
        cells = ""
        for t in tables:
            row = t.get(g)
            n = row["questions"] if row else 0
            v = row[metric] if row else None
            cells += f"{n:>9} " + (f"{'-':>8}" if v is None else f"{v:>8.3f}")
        lines.append(f"{_group(g):<{width}}{cells}")
    return "\n".join(lines)


def format_generation(report: Any) -> str:
    """`generate`: counts kept and dropped per filter, cost, and the files written."""
    c, s = report.counts, report.stats
    from harness.generate import FILTERS

    # duplicates have their own place in the line
    filters = ", ".join(f"{c[f]} {f}" for f in FILTERS if f in c and f != "duplicates")
    lines = [
        f"generated {c['generated']} questions: kept {c['kept']}, dropped {c['dropped']} "
        f"({filters}; {c['duplicates']} duplicates)"
        + (f"; {c['surplus']} more passed, beyond n" if c.get("surplus") else ""),
        "(a question failing several critique filters counts under each)",
        f"model calls {s['calls']}, cache hits {s['cache_hits']}, errors {s['errors']}, "
        f"tokens {s['prompt_tokens']} in / {s['completion_tokens']} out, {s['minutes']:.1f} min",
        f"judge exam: {report.exam['source']} source and {report.exam['unrelated']} unrelated "
        "passages (harness judge-check RUN --exam)",
    ]
    if report.kept_by_type:
        lines.append(
            "kept by type: " + ", ".join(f"{t} {k}" for t, k in report.kept_by_type.items())
        )
    lines += [f"warning: {w}" for w in report.warnings]
    lines += [f"{k:>12}: {v}" for k, v in report.paths.items()]
    return "\n".join(lines)


def format_generate_estimate(est: dict[str, Any]) -> str:
    """`generate --dry-run`: calls and tokens, least (nothing dropped) and most."""
    lines = [
        f"generate {est['n']} questions ({', '.join(est['types'])}), seed {est['seed']}, "
        f"model {est['model']}"
    ]
    for name, why in (("least", "if nothing is dropped"), ("most", "every planned candidate")):
        e = est[name]
        cost = f", at most ${e['cost_usd_max']:.4f}" if "cost_usd_max" in e else ""
        lines.append(
            f"{name}: {e['candidates']} candidates ({why}): {e['calls']} calls, "
            f"{e['cached_answers']} answers cached, ~{e['prompt_tokens']} prompt tokens, "
            f"at most {e['completion_tokens_max']} completion tokens{cost}"
        )
    return "\n".join(lines)


def format_exam(res: dict[str, Any]) -> str:
    """`judge-check --exam`: true-positive and true-negative rates per criterion."""
    lines = [
        f"judge exam {res['exam']}: {res['source_items']} source passages (must be judged "
        f"yes), {res['unrelated_items']} unrelated ones (must be judged no), "
        f"{res['errors']} errors",
        f"{'criterion':<10} {'TPR':>7} {'TNR':>7}",
    ]
    for crit in ("relevant", "complete"):
        r = res[crit]
        lines.append(f"{crit:<10} {_pct(r['tpr']):>7} {_pct(r['tnr']):>7}")
    if "exam_run" in res:
        lines.append(
            f"judged exam written to {res['exam_run']}; harness calibrate {res['exam_run']} "
            "--qrels <the exam's .exam.qrels.tsv> fits the judge on it"
        )
    return "\n".join(lines)


def _trial_folder(run_dir: str, sweep_dir: Path) -> Path:
    """A trial's run folder as its record names it (relative ones under the sweep's)."""
    folder = Path(run_dir)
    if not folder.is_absolute() and not folder.exists():
        folder = Path(sweep_dir) / run_dir
    return folder


def trial_metrics(trials: Sequence[TrialRecord], sweep_dir: Path) -> dict[int, dict[str, float]]:
    """Each trial's run-header metrics, by trial number (trials whose folder cannot be
    read are left out): what `format_sweep` shows beside the objective."""
    from harness.errors import HarnessError
    from harness.log import read_header

    out: dict[int, dict[str, float]] = {}
    for t in trials:
        if not t.run_dir:
            continue
        try:
            out[t.number] = dict(read_header(_trial_folder(t.run_dir, sweep_dir)).metrics)
        except (HarnessError, OSError):
            continue
    return out


def recommended_trust(
    summary: SweepSummary, trials: Sequence[TrialRecord], sweep_dir: Path
) -> dict[str, Any] | None:
    """The recommended trial's trust summary (`stats.trust`; {} when its run recorded
    none), or None without a recommendation or a readable run folder."""
    from harness.errors import HarnessError
    from harness.log import read_header

    rec = summary.recommendation
    record = next((t for t in trials if rec is not None and t.number == rec.trial), None)
    if record is None or not record.run_dir:
        return None
    try:
        header = read_header(_trial_folder(record.run_dir, sweep_dir))
    except (HarnessError, OSError):
        return None
    return dict(header.stats.trust or {})


def best_trial_breakdown_lines(summary: SweepSummary, sweep_dir: Path) -> list[str]:
    """The best trial's metrics by question type and topic, when its questions carry
    them (generated sets); nothing otherwise, or when its run folder cannot be read."""
    from harness.errors import HarnessError
    from harness.log import read_run

    out: list[str] = []
    for b in summary.best[:1]:
        folder = _trial_folder(b.run_dir, sweep_dir)
        try:
            run = read_run(folder)
        except (HarnessError, OSError):
            return []
        lines = breakdown_lines(run.questions, run.header.k or 1)
        if lines:
            out += [f"best trial {b.number}, per question group:", *lines]
    return out
