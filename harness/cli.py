"""The command line: a thin shell over the public functions.

    harness run EXPERIMENT.toml [--set key=value ...] [--dry-run] [--format table|json]
    harness sweep EXPERIMENT.toml [--trials N] [--resume SWEEP_DIR] [--storage URL] [--dry-run]
    harness list [RESULTS_DIR] [--format text|json]
    harness show RUN_OR_TRIAL_OR_SWEEP [--question ID] [--failures] [--format text|json]
    harness compare RUN_OR_TRIAL RUN_OR_TRIAL ... [--k K] [--metric NAME]
    harness validate RUN_OR_SWEEP [--qrels FILE] [--k K] [--format text|json]
    harness label RUN_OR_TRIAL [--sample N] [--out FILE]
    harness judge-check RUN_OR_TRIAL [--sample N] [--qrels FILE]
    harness export RUN_OR_TRIAL --out DIR

User errors print one line to stderr and exit 2; Ctrl-C exits 130 with every finished
result kept.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loguru import logger

from harness.errors import HarnessError
from harness.log import RunHeader, RunLog, read_run
from harness.metrics import METRIC_NAMES
from harness.types import QuestionResult

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130


def _setup_logging(verbosity: int) -> None:
    logger.remove()
    level = {-1: "WARNING", 0: "INFO"}.get(verbosity, "DEBUG")
    # Resolve sys.stderr at each write: whoever swapped it (a test, a notebook) may close it.
    logger.add(
        lambda message: sys.stderr.write(message),
        level=level,
        format="<green>{time:HH:mm:ss}</green> {message}",
        colorize=False,
    )


def format_metrics_table(header: RunHeader) -> str:
    """Metrics as a table: one row per metric, one column per k."""
    ks = list(header.ks)
    names = [*METRIC_NAMES, "failures", "errors"]
    width = max(len(n) for n in names)
    lines = [f"{'metric':<{width}}  " + "  ".join(f"{'@' + str(k):>8}" for k in ks)]
    for name in names:
        cells = []
        for k in ks:
            v = header.metrics.get(f"{name}@{k}")
            if v is None:
                cells.append(f"{'-':>8}")
            elif name in ("context_chars", "failures", "errors"):
                cells.append(f"{v:>8.0f}")
            else:
                cells.append(f"{v:>8.3f}")
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


def format_run_summary(run: RunLog) -> str:
    h = run.header
    s = h.stats
    parts = [
        f"run {h.run_id}: {h.status}, {h.data.get('n_questions', len(run.questions))} questions, "
        f"{h.data.get('n_chunks', '?')} chunks",
        format_metrics_table(h),
        *_ci_line(h),
        (
            f"judge calls {s.get('judge_calls', 0)}, cache hits {s.get('judge_cache_hits', 0)}, "
            f"errors {s.get('judge_errors', 0)}, index {'cached' if s.get('index_cache_hit') else 'built'} "
            f"in {s.get('index_s', 0):.1f} s, total {s.get('total_s', 0):.1f} s"
        ),
        f"result log: {run.run_dir}",
    ]
    if h.error:
        parts.insert(1, f"error: {h.error}")
    reranker = h.components.get("reranker")
    if reranker is not None and reranker.args.get("same_model_as_judge"):
        parts.insert(
            1,
            "warning: the llm reranker used the judge's own model; the judge graded its own "
            "ranking, which flatters these metrics",
        )
    if reranker is not None and reranker.name != "none":
        parts.insert(1, f"reranker: {reranker.name} {reranker.args}")
    return "\n".join(parts)


def _mark(value: bool | None) -> str:
    return {True: "yes", False: "no", None: "ERR"}[value]


def format_estimate(est: dict[str, Any]) -> str:
    """The calls, tokens and cost lines of a run's or a sweep's dry run."""
    why = {
        "pointwise": "'complete' is asked only of chunks judged relevant",
        "both": "one call per chunk for both criteria",
        "listwise": "one call per question",
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
    if "cost_usd_max" in est:
        lines.append(f"cost: at most ${est['cost_usd_max']:.4f}")
    rows = sorted(est["settings"], key=lambda d: d["calls_max"], reverse=True)
    lines += ["", f"{'pairs':>6}  {'open':>6}  {'calls':>6}  setting (costliest first)"]
    for d in rows[:max_rows]:
        params = " ".join(f"{k}={v}" for k, v in d["params"].items())
        lines.append(f"{d['pairs']:>6}  {d['open_pairs']:>6}  {d['calls_max']:>6}  {params}")
    if len(rows) > max_rows:
        lines.append(f"... {len(rows) - max_rows} more settings (--format json lists all)")
    return "\n".join(lines)


def format_question(q: QuestionResult, k: int, excerpt_chars: int = 300) -> str:
    m = q.metrics
    lines = [
        f"[{q.question.question_id}] {q.question.text}",
        f"    hit_rate@{k}={m.get(f'hit_rate@{k}', float('nan')):.0f}  "
        f"mrr@{k}={m.get(f'mrr@{k}', float('nan')):.3f}  "
        f"relevancy_mrr@{k}={m.get(f'relevancy_mrr@{k}', float('nan')):.3f}"
        + (f"  ERROR: {q.error}" if q.error else ""),
    ]
    for jh in q.hits:
        v = jh.verdict
        conf = ""
        if v.relevant.p_yes is not None:
            conf = f"  p(relevant)={v.relevant.p_yes:.2f}"
        if v.complete.p_yes is not None:
            conf += f"  p(complete)={v.complete.p_yes:.2f}"
        rerank = "" if jh.hit.rerank_score is None else f"  rerank {jh.hit.rerank_score:.3f}"
        lines.append(
            f"  #{jh.hit.rank}  score {jh.hit.score:.3f}{rerank}  relevant={_mark(v.relevant.value)}  "
            f"complete={_mark(v.complete.value)}{conf}  {jh.chunk.chunk_id}"
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
    return "\n".join(lines)


def _select(run: RunLog, question: str | None, failures: bool) -> list[QuestionResult]:
    qs = list(run.questions)
    k = max(run.header.ks) if run.header.ks else 1
    if question is not None:
        qs = [q for q in qs if q.question.question_id == question]
        if not qs:
            raise HarnessError(f"{run.run_dir}: no question with id {question!r} in this run")
    if failures:
        qs = [q for q in qs if q.metrics.get(f"hit_rate@{k}") == 0.0 or q.error]
    return qs


def resolve_run_dir(arg: str, results_dir: str) -> Path:
    """A run folder given as a path, as a run id under the results folder, or a sweep's
    trial as SWEEP_DIR/trials/N or SWEEP:N."""
    candidates = [Path(arg), Path(results_dir) / arg]
    if ":" in arg:
        sweep, _, number = arg.rpartition(":")
        candidates += [
            Path(sweep) / "trials" / number,
            Path(results_dir) / sweep / "trials" / number,
        ]
    for candidate in candidates:
        if (candidate / "header.json").is_file():
            return candidate
    raise HarnessError(f"{arg}: no run folder here or under {results_dir}/ (no header.json)")


# ---------------------------------------------------------------- commands


def cmd_run(args: argparse.Namespace) -> int:
    from harness.config import load_experiment
    from harness.pipeline import run_experiment

    config = load_experiment(args.experiment, overrides=args.set or [])
    if args.dry_run:
        from harness.pipeline import estimate_run

        est = estimate_run(config, cache_dir=args.cache_dir)
        if args.format == "json":
            print(json.dumps(est, indent=2))
        else:
            print(
                f"dry run: {est['questions']} questions, {est['pairs']} (question, chunk) pairs"
                f"{'' if est['exact_pairs'] else ' (upper bound: the index is not built)'}, "
                f"{est['open_pairs']} not yet judged"
            )
            print(format_estimate(est))
        return 0
    run = run_experiment(config, results_dir=args.results_dir, cache_dir=args.cache_dir)
    if args.format == "json":
        print(json.dumps({"run_dir": str(run.run_dir), **run.header.to_dict()}, indent=2))
    else:
        print(format_run_summary(run))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from harness.sweep import read_sweep

    for candidate in (Path(args.run), Path(args.results_dir) / args.run):
        if (candidate / "sweep.json").is_file():
            log = read_sweep(candidate)
            if args.format == "json":
                print(
                    json.dumps(
                        {
                            "sweep_dir": str(candidate),
                            **log.summary,
                            "trials": [t.to_dict() for t in log.trials],
                        },
                        indent=2,
                    )
                )
            else:
                print(format_sweep(log.summary, log.trials))
            return 0
    run = read_run(resolve_run_dir(args.run, args.results_dir))
    qs = _select(run, args.question, args.failures)
    if args.format == "json":
        print(
            json.dumps(
                {
                    "run_dir": str(run.run_dir),
                    "header": run.header.to_dict(),
                    "questions": [q.to_dict() for q in qs],
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0
    k = max(run.header.ks) if run.header.ks else 1
    print(format_run_summary(run))
    print()
    for q in qs:
        print(format_question(q, k))
        print()
    if not qs:
        print("no questions match")
    return 0


def _fmt_values(values: list[float] | None) -> str:
    return ", ".join(f"{v:.3f}" for v in values) if values else "-"


def format_sweep(summary: dict[str, Any], trials: Sequence[Any]) -> str:
    lines = [
        f"sweep {summary['sweep_id']}: {summary['status']}, objective "
        f"{' & '.join(summary['objective'])} ({', '.join(summary['directions'])}), "
        f"sampler {summary['sampler']['name']} seed {summary['sampler']['seed']}",
        f"{'trial':>5}  {'state':<8}  {'values':<16}  params",
    ]
    for t in trials:
        params = " ".join(f"{k}={v}" for k, v in t.params.items())
        note = f"  ({t.error})" if t.error else ""
        if t.state == "pruned" and not t.error:
            note = f"  (after {t.questions_done} questions)"
        lines.append(f"{t.number:>5}  {t.state:<8}  {_fmt_values(t.values):<16}  {params}{note}")
    best = summary.get("best") or []
    label = "best" if len(summary["objective"]) == 1 else "Pareto front"
    for b in best:
        lines.append(
            f"{label}: trial {b['number']} {_fmt_values(b['values'])} {b['params']}  {b['run_dir']}"
        )
        if "indistinguishable" in b:
            ties = ", ".join(str(n) for n in b["indistinguishable"]) or "none"
            lines.append(
                f"  cannot be told apart from it ({b['confidence']:.0%} paired bootstrap): trials {ties}"
            )
    c, st = summary["counts"], summary["stats"]
    lines.append(
        f"trials: {c['complete']} complete, {c['pruned']} pruned, {c['failed']} failed; "
        f"judge calls {st['judge_calls']}, cache hits {st['judge_cache_hits']}, distinct "
        f"verdicts {st['distinct_verdicts']}, without a cache {st['naive_calls']} calls"
    )
    return "\n".join(lines)


def cmd_sweep(args: argparse.Namespace) -> int:
    from harness.config import load_experiment
    from harness.sweep import read_sweep, run_sweep

    if args.resume and not args.experiment:
        # The resolved config the sweep started with, --set overrides included.
        from harness.config import experiment_from_dict

        config = experiment_from_dict(read_sweep(args.resume).summary["config"], args.set or [])
    elif args.experiment:
        config = load_experiment(args.experiment, overrides=args.set or [])
    else:
        raise HarnessError("sweep: give an experiment file, or --resume SWEEP_DIR")
    if args.dry_run:
        from harness.sweep import estimate_sweep

        est = estimate_sweep(config, cache_dir=args.cache_dir, trials=args.trials)
        if args.format == "json":
            print(json.dumps(est, indent=2))
        else:
            print(format_sweep_estimate(est))
        return 0
    log = run_sweep(
        config,
        results_dir=args.results_dir,
        cache_dir=args.cache_dir,
        trials=args.trials,
        resume=args.resume,
        storage=args.storage,
    )
    if args.format == "json":
        print(json.dumps({"sweep_dir": str(log.sweep_dir), **log.summary}, indent=2))
    else:
        print(format_sweep(log.summary, log.trials))
        print(f"sweep log: {log.sweep_dir}")
    return 0


def list_results(results_dir: str) -> list[dict[str, Any]]:
    """Runs and sweeps directly under `results_dir`, from their headers only."""
    from harness.log import read_header
    from harness.sweep import read_sweep

    root = Path(results_dir)
    if not root.is_dir():
        raise HarnessError(f"{results_dir}: no such folder")
    out: list[dict[str, Any]] = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if (folder / "sweep.json").is_file():
            sw = read_sweep(folder).summary
            best = (sw.get("best") or [{}])[0]
            out.append(
                {
                    "kind": "sweep",
                    "id": folder.name,
                    "path": str(folder),
                    "status": sw["status"],
                    "name": sw["config"].get("name", ""),
                    "counts": sw["counts"],
                    "objective": sw["objective"],
                    "best_values": best.get("values"),
                    "best_trial": best.get("number"),
                }
            )
        elif (folder / "header.json").is_file():
            h = read_header(folder)
            k = max(h.ks) if h.ks else 0
            out.append(
                {
                    "kind": "run",
                    "id": folder.name,
                    "path": str(folder),
                    "status": h.status,
                    "name": h.name,
                    "k": k,
                    "n_questions": h.data.get("n_questions"),
                    "metrics": {
                        m: h.metrics[m]
                        for m in (f"hit_rate@{k}", f"mrr@{k}", f"relevancy_mrr@{k}")
                        if m in h.metrics
                    },
                    "started_at": h.started_at,
                }
            )
    return out


def cmd_list(args: argparse.Namespace) -> int:
    rows = list_results(args.results_dir_pos or args.results_dir)
    if args.format == "json":
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no runs or sweeps here")
    for r in rows:
        if r["kind"] == "run":
            m = "  ".join(f"{k}={v:.3f}" for k, v in r["metrics"].items())
            print(f"run    {r['id']:<48} {r['status']:<11} {r['n_questions'] or '?':>4} q  {m}")
        else:
            c = r["counts"]
            best = (
                f"best trial {r['best_trial']}: {_fmt_values(r['best_values'])}"
                if r["best_values"]
                else ""
            )
            print(
                f"sweep  {r['id']:<48} {r['status']:<11} {c['complete']} complete, "
                f"{c['pruned']} pruned, {c['failed']} failed  {' & '.join(r['objective'])}  {best}"
            )
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from harness.compare import compare_runs

    runs = [read_run(resolve_run_dir(a, args.results_dir)) for a in args.runs]
    comp = compare_runs(runs, k=args.k, change_metric=args.metric)
    if args.format == "json":
        print(json.dumps(dataclasses.asdict(comp), indent=2, ensure_ascii=False))
        return 0
    k = comp.k
    short = [Path(r).name if Path(r).name not in ("", ".") else r for r in comp.runs]
    short = [
        f"{Path(r).parent.parent.name}/{Path(r).name}" if Path(r).parent.name == "trials" else s
        for r, s in zip(comp.runs, short, strict=True)
    ]
    print(
        f"compare at k={k} over {comp.shared_questions} shared questions "
        f"(intervals: 95% paired bootstrap of the difference to the first run)"
    )
    for i, name in enumerate(short):
        print(f"  [{i}] {name}")
    header = f"{'metric':<18}" + "".join(f"{'[' + str(i) + ']':>10}" for i in range(len(short)))
    print(header)
    for metric in (*METRIC_NAMES, "failures", "errors"):
        mk = f"{metric}@{k}"
        cells = []
        for r in comp.runs:
            v = comp.metrics[r].get(mk)
            cells.append(f"{'-':>10}" if v is None else f"{v:>10.3f}" if v < 100 else f"{v:>10.0f}")
        print(f"{mk:<18}" + "".join(cells))
    print()
    for d in comp.differences:
        i = comp.runs.index(d.run)
        sig = "" if d.low <= 0 <= d.high else "  *"
        print(f"[{i}]-[0] {d.metric:<18} {d.mean_diff:+.3f}  [{d.low:+.3f}, {d.high:+.3f}]{sig}")
    if comp.changes:
        print(f"\nquestions whose {args.metric}@{k} changed:")
    for c in comp.changes:
        i = comp.runs.index(c.run)
        word = "better" if c.after > c.before else "worse"
        print(f"  [{i}] {word:<6} {c.before:.3f} -> {c.after:.3f}  [{c.question_id}] {c.text}")
        for label, h in (("before", c.first_hit_before), ("after", c.first_hit_after)):
            if h:
                excerpt = " ".join(h["text"].split())[:140]
                print(f"        {label}: #{h['rank']} {h['chunk_id']}: {excerpt}")
            else:
                print(f"        {label}: no relevant-and-complete chunk in the top {k}")
    return 0


def _qrels_path(arg: str | None, header: RunHeader | None) -> str:
    path = arg or (header.data.get("qrels_file") if header else None)
    if not path:
        raise HarnessError("give --qrels FILE (or set questions.qrels in the experiment)")
    return str(path)


def cmd_validate(args: argparse.Namespace) -> int:
    from harness.validate import read_qrels, validate_run, validate_sweep

    target = Path(args.target)
    if not target.exists():
        target = Path(args.results_dir) / args.target
    if (target / "sweep.json").is_file():
        from harness.log import read_header

        headers = [
            read_header(p)
            for p in sorted((target / "trials").glob("*"))
            if (p / "header.json").is_file()
        ]
        qrels = read_qrels(_qrels_path(args.qrels, headers[0] if headers else None))
        res = validate_sweep(target, qrels, metric=args.metric, unjudged=args.unjudged)
        if args.format == "json":
            print(json.dumps(res, indent=2))
            return 0
        print(
            f"sweep {target}: Kendall tau between the judge's and the labels' ranking of "
            f"{res['trials']} trials by {res['metric']}@k: {res['kendall_tau']:.3f}"
        )
        print(f"{'rank':>4}  {'by judge':<44} {'by labels':<44}")
        for i, (a, b) in enumerate(zip(res["top_by_judge"], res["top_by_human"], strict=True), 1):
            ta = f"#{a['number']} j={a['judge']:.3f} h={a['human']:.3f}"
            tb = f"#{b['number']} j={b['judge']:.3f} h={b['human']:.3f}"
            print(f"{i:>4}  {ta:<44} {tb:<44}")
        return 0
    run = read_run(resolve_run_dir(args.target, args.results_dir))
    qrels = read_qrels(_qrels_path(args.qrels, run.header))
    res = validate_run(run, qrels, k=args.k, unjudged=args.unjudged)
    if args.format == "json":
        print(json.dumps(res, indent=2))
        return 0
    print(
        f"run {run.run_dir}: {res['questions_labelled']} of {res['questions_in_run']} "
        f"questions labelled; k={res['k']}; unlabelled chunks count as {res['unjudged']}"
    )
    if res["binary_labels"]:
        print("labels are binary: 'complete' is checked against relevance")
    print(
        f"{'criterion':<10} {'n':>5} {'tp':>5} {'fp':>5} {'fn':>5} {'tn':>5} {'accuracy':>9} "
        f"{'kappa':>7}  95% interval"
    )
    for crit, a in res["agreement"].items():
        if not a["n"]:
            print(f"{crit:<10} {0:>5}")
            continue
        c, ci = a["confusion"], a["kappa_ci95"]
        ci_s = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "-"
        print(
            f"{crit:<10} {a['n']:>5} {c['tp']:>5} {c['fp']:>5} {c['fn']:>5} {c['tn']:>5} "
            f"{a['accuracy']:>9.3f} {a['kappa']:>7.3f}  {ci_s}"
        )
    k = res["k"]
    print(f"\n{'metric':<18} {'judge':>8} {'labels':>8}")
    for name in ("hit_rate", "mrr", "relevancy_mrr", "precision", "ndcg"):
        key = f"{name}@{k}"
        j, h = res["metrics"]["judge"].get(key), res["metrics"]["human"].get(key)
        print(
            f"{key:<18} {j if j is not None else float('nan'):>8.3f} {h if h is not None else float('nan'):>8.3f}"
        )
    for key, p in res["ppi"].items():
        print(
            f"{key}: judge only {p['judge_only']:.3f}; label-corrected (PPI, {p['n_labelled']} "
            f"labelled) {p['ppi']:.3f} [{p['ci95'][0]:.3f}, {p['ci95'][1]:.3f}]"
        )
    return 0


def cmd_label(args: argparse.Namespace) -> int:
    """Ask a person about sampled (question, chunk) pairs; append chunk-level qrels."""
    import random

    run = read_run(resolve_run_dir(args.run, args.results_dir))
    out = Path(args.out)
    done: set[tuple[str, str]] = set()
    if out.is_file():
        from harness.validate import read_qrels

        done = {(q, c) for q, labels in read_qrels(out).items() for c in labels}
    pairs = [
        (q, h)
        for q in run.questions
        for h in q.hits
        if (q.question.question_id, h.chunk.chunk_id) not in done
    ]
    random.Random(args.seed).shuffle(pairs)
    new_file = not out.is_file()
    written = 0
    with open(out, "a", encoding="utf-8") as f:
        if new_file:
            f.write("query_id\tdoc_id\trelevance\n")
        for q, h in pairs[: args.sample]:
            print("\n" + "=" * 80)
            print(f"question [{q.question.question_id}]: {q.question.text}")
            print("-" * 80)
            print(h.chunk.text)
            print("-" * 80)
            rel = _ask(
                "relevant: is the passage about what the question asks? [y/n/s=skip/q=quit] "
            )
            if rel == "q":
                break
            if rel == "s":
                continue
            grade = 0
            if rel == "y":
                comp = _ask("complete: does it alone answer the question? [y/n/s/q] ")
                if comp == "q":
                    break
                if comp == "s":
                    continue
                grade = 2 if comp == "y" else 1
            f.write(f"{q.question.question_id}\t{h.chunk.chunk_id}\t{grade}\n")
            f.flush()
            written += 1
    print(
        f"\n{written} labels written to {out}; `harness validate {run.run_dir} --qrels {out}` "
        "compares them with the judge"
    )
    return 0


def _ask(prompt: str) -> str:
    while True:
        try:
            answer = input(prompt).strip().lower()[:1]
        except EOFError:
            return "q"
        if answer in ("y", "n", "s", "q"):
            return answer
        print("please answer y, n, s or q")


def cmd_judge_check(args: argparse.Namespace) -> int:
    from harness.config import experiment_from_dict
    from harness.pipeline import default_cache_dir, open_judge
    from harness.validate import judge_check, read_qrels

    run = read_run(resolve_run_dir(args.run, args.results_dir))
    config = experiment_from_dict(run.header.config)
    qrels_path = args.qrels or run.header.data.get("qrels_file")
    qrels = read_qrels(qrels_path) if qrels_path else None
    cache = Path(args.cache_dir) if args.cache_dir else default_cache_dir()
    with open_judge(config.judge, cache_dir=cache) as judge:
        res = judge_check(
            run,
            judge,
            config.judge.criteria,
            sample=args.sample,
            seed=args.seed,
            qrels=qrels,
            concurrency=config.judge.concurrency,
        )
    if args.format == "json":
        print(json.dumps(res, indent=2))
        return 0

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{v:.1%}"

    rw, so = res["reworded"], res["shuffled_order"]
    print(f"judge check of {run.run_dir} on {res['sample']} sampled (question, chunk) pairs")
    print(
        f"reworded prompt:  relevant flips {pct(rw['relevant_flip_rate'])}, complete flips "
        f"{pct(rw['complete_flip_rate'])} (n={rw['n']})"
    )
    print(
        f"shuffled order (listwise, {so['questions']} questions): relevant flips "
        f"{pct(so['relevant_flip_rate'])}, complete flips {pct(so['complete_flip_rate'])} (n={so['n']})"
    )
    for group, lb in res.get("length_bias", {}).items():
        if "difference" in lb and lb["difference"] is not None:
            print(
                f"length bias, {group.replace('_', ' ')} (n={lb['n']}): judged relevant "
                f"{pct(lb['judge_yes_rate_long'])} of chunks over {lb['median_chars']:.0f} chars vs "
                f"{pct(lb['judge_yes_rate_short'])} of shorter ones"
            )
    if "length_bias" not in res:
        print("length bias: needs human labels (--qrels)")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from harness.validate import export_trec

    run = read_run(resolve_run_dir(args.run, args.results_dir))
    run_path, qrels_path = export_trec(run, args.out)
    print(f"wrote {run_path} and {qrels_path} (grades 0/1/2 from the judge)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness", description="Reference-free retrieval tuning: judge, measure, compare."
    )
    parser.add_argument(
        "-q", "--quiet", action="store_const", const=-1, dest="verbosity", default=0
    )
    parser.add_argument("-v", "--verbose", action="store_const", const=1, dest="verbosity")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--results-dir", default="results", help="where run folders go (default: results)"
        )

    def cache_dir_option(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--cache-dir",
            default=None,
            help="verdict/index cache (default: $HARNESS_CACHE_DIR or ~/.cache/harness)",
        )

    def experiment_options(p: argparse.ArgumentParser, dry_run_help: str) -> None:
        """What run and sweep share: overrides, a dry run, the output format, the cache."""
        p.add_argument(
            "--set",
            action="append",
            metavar="KEY=VALUE",
            help="override a setting, e.g. chunking.chunk_size=500",
        )
        p.add_argument("--dry-run", action="store_true", help=dry_run_help)
        p.add_argument("--format", choices=("table", "json"), default="table")
        cache_dir_option(p)

    p_run = sub.add_parser("run", help="run one configuration and print its metrics")
    p_run.add_argument("experiment", help="experiment file (TOML)")
    experiment_options(p_run, "estimate judge calls, tokens and cost; pay nothing")
    common(p_run)
    p_run.set_defaults(func=cmd_run)

    p_sweep = sub.add_parser("sweep", help="search the space with Optuna; one run per trial")
    p_sweep.add_argument("experiment", nargs="?", help="experiment file with a [sweep] table")
    p_sweep.add_argument(
        "--trials", type=int, help="finished trials to reach (default: sweep.trials)"
    )
    p_sweep.add_argument("--resume", metavar="SWEEP_DIR", help="continue an interrupted sweep")
    p_sweep.add_argument(
        "--storage",
        metavar="URL",
        help="Optuna storage URL (default: a SQLite file in the sweep folder)",
    )
    experiment_options(
        p_sweep, "the most the sweep's judge calls, tokens and cost could be; pay nothing"
    )
    common(p_sweep)
    p_sweep.set_defaults(func=cmd_sweep)

    p_list = sub.add_parser("list", help="runs and sweeps with status and headline metrics")
    p_list.add_argument("results_dir_pos", nargs="?", metavar="RESULTS_DIR")
    p_list.add_argument("--format", choices=("text", "json"), default="text")
    common(p_list)
    p_list.set_defaults(func=cmd_list)

    p_cmp = sub.add_parser("compare", help="metrics side by side with paired bootstrap intervals")
    p_cmp.add_argument("runs", nargs="+", metavar="RUN_OR_TRIAL")
    p_cmp.add_argument("--k", type=int, help="compare at this k (default: the largest shared k)")
    p_cmp.add_argument(
        "--metric", default="mrr", help="metric for the changed questions (default: mrr)"
    )
    p_cmp.add_argument("--format", choices=("text", "json"), default="text")
    common(p_cmp)
    p_cmp.set_defaults(func=cmd_compare)

    p_val = sub.add_parser("validate", help="agreement of the judge with human labels (qrels)")
    p_val.add_argument("target", metavar="RUN_OR_SWEEP")
    p_val.add_argument(
        "--qrels", help="qrels file (default: questions.qrels of the run's experiment)"
    )
    p_val.add_argument("--k", type=int, help="metrics at this k (default: the run's k)")
    p_val.add_argument(
        "--metric", default="mrr", help="for a sweep: the metric ranked (default: mrr)"
    )
    p_val.add_argument(
        "--unjudged",
        choices=("irrelevant", "skip"),
        default="irrelevant",
        help="chunks of documents the qrels do not list (default: irrelevant)",
    )
    p_val.add_argument("--format", choices=("text", "json"), default="text")
    common(p_val)
    p_val.set_defaults(func=cmd_validate)

    p_lab = sub.add_parser("label", help="label sampled chunks of a run by hand, into qrels")
    p_lab.add_argument("run", metavar="RUN_OR_TRIAL")
    p_lab.add_argument("--sample", type=int, default=50)
    p_lab.add_argument(
        "--out", default="labels.tsv", help="qrels file to append to (default: labels.tsv)"
    )
    p_lab.add_argument("--seed", type=int, default=0)
    common(p_lab)
    p_lab.set_defaults(func=cmd_label)

    p_chk = sub.add_parser(
        "judge-check", help="flip rates under a reworded prompt and shuffled order"
    )
    p_chk.add_argument("run", metavar="RUN_OR_TRIAL")
    p_chk.add_argument("--sample", type=int, default=30)
    p_chk.add_argument("--seed", type=int, default=0)
    p_chk.add_argument("--qrels", help="human labels, for the length-bias check")
    cache_dir_option(p_chk)
    p_chk.add_argument("--format", choices=("text", "json"), default="text")
    common(p_chk)
    p_chk.set_defaults(func=cmd_judge_check)

    p_exp = sub.add_parser("export", help="write a run as TREC run and qrels files")
    p_exp.add_argument("run", metavar="RUN_OR_TRIAL")
    p_exp.add_argument("--out", required=True, help="folder for run.trec and qrels.trec")
    common(p_exp)
    p_exp.set_defaults(func=cmd_export)

    p_show = sub.add_parser("show", help="print a run's graded chunks with verdicts and reasons")
    p_show.add_argument("run", help="run folder, or run id under --results-dir")
    p_show.add_argument("--question", help="only this question id")
    p_show.add_argument(
        "--failures", action="store_true", help="only questions with no relevant-and-complete hit"
    )
    p_show.add_argument("--format", choices=("text", "json"), default="text")
    common(p_show)
    p_show.set_defaults(func=cmd_show)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _setup_logging(args.verbosity)
    try:
        return int(args.func(args))
    except HarnessError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("harness: interrupted; finished results and paid verdicts are kept", file=sys.stderr)
        return EXIT_INTERRUPTED


def _entry() -> Any:
    sys.exit(main())
