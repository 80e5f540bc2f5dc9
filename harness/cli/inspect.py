"""`harness list`, `show` and `compare`: reading result logs, paying nothing."""

from __future__ import annotations

import argparse
import dataclasses

from harness.cli.options import emit, format_option, results_dir_option
from harness.errors import HarnessError
from harness.log import (
    RunLog,
    find_sweep_dir,
    list_results,
    read_run,
    read_sweep,
    resolve_run_dir,
)
from harness.report import text
from harness.types import QuestionResult


def select_questions(run: RunLog, question: str | None, failures: bool) -> list[QuestionResult]:
    """The questions `show` prints: one by id, or those with no relevant-and-complete
    chunk in the top k (or an error), or all."""
    qs = list(run.questions)
    k = run.header.k or 1
    if question is not None:
        qs = [q for q in qs if q.question.question_id == question]
        if not qs:
            raise HarnessError(f"{run.run_dir}: no question with id {question!r} in this run")
    if failures:
        qs = [q for q in qs if q.metrics.get(f"hit_rate@{k}") == 0.0 or q.error]
    return qs


def cmd_show(args: argparse.Namespace) -> int:
    """Print a sweep's trials, or a run's graded chunks (all, one question, or failures)."""
    sweep_dir = find_sweep_dir(args.run, args.results_dir)
    if sweep_dir is not None:
        log = read_sweep(sweep_dir)
        data = {
            "sweep_dir": str(sweep_dir),
            **log.summary.to_dict(),
            "trials": [t.to_dict() for t in log.trials],
        }
        return emit(args, data, text.format_sweep(log.summary, log.trials))
    run = read_run(resolve_run_dir(args.run, args.results_dir))
    qs = select_questions(run, args.question, args.failures)
    data = {
        "run_dir": str(run.run_dir),
        "header": run.header.to_dict(),
        "questions": [q.to_dict() for q in qs],
    }
    return emit(args, data, text.format_questions(run, qs))


def cmd_list(args: argparse.Namespace) -> int:
    """List the runs and sweeps under a results folder with status and headline metrics."""
    rows = list_results(args.results_dir_pos or args.results_dir)
    return emit(args, rows, text.format_list(rows))


def cmd_compare(args: argparse.Namespace) -> int:
    """Compare runs side by side against the first one given."""
    from harness.analysis import compare_runs

    runs = [read_run(resolve_run_dir(a, args.results_dir)) for a in args.runs]
    comp = compare_runs(runs, k=args.k, change_metric=args.metric)
    return emit(args, dataclasses.asdict(comp), text.format_compare(comp, args.metric))


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add list, show and compare to the command line."""
    p_list = sub.add_parser("list", help="runs and sweeps with status and headline metrics")
    p_list.add_argument("results_dir_pos", nargs="?", metavar="RESULTS_DIR")
    format_option(p_list)
    results_dir_option(p_list)
    p_list.set_defaults(func=cmd_list)

    p_cmp = sub.add_parser("compare", help="metrics side by side with paired bootstrap intervals")
    p_cmp.add_argument("runs", nargs="+", metavar="RUN_OR_TRIAL")
    p_cmp.add_argument("--k", type=int, help="compare at this k (default: the largest shared k)")
    p_cmp.add_argument(
        "--metric", default="mrr", help="metric for the changed questions (default: mrr)"
    )
    format_option(p_cmp)
    results_dir_option(p_cmp)
    p_cmp.set_defaults(func=cmd_compare)

    p_show = sub.add_parser("show", help="print a run's graded chunks with verdicts and reasons")
    p_show.add_argument("run", help="run folder, or run id under --results-dir")
    p_show.add_argument("--question", help="only this question id")
    p_show.add_argument(
        "--failures", action="store_true", help="only questions with no relevant-and-complete hit"
    )
    format_option(p_show)
    results_dir_option(p_show)
    p_show.set_defaults(func=cmd_show)
