"""`harness list`, `show` and `compare`: reading result logs, paying nothing."""

from __future__ import annotations

import argparse
import dataclasses

from harness.cli.options import emit, format_option, results_dir_option
from harness.errors import HarnessError
from harness.log import (
    RunLog,
    SweepLog,
    find_sweep_dir,
    list_results,
    read_run,
    read_sweep,
    resolve_run_dir,
)
from harness.report import text
from harness.secrets import redact_url
from harness.stores.sweeps import SweepDatabase
from harness.types import QuestionResult


def select_questions(
    run: RunLog, question: str | None, failures: bool, qtype: str | None = None
) -> list[QuestionResult]:
    """The questions `show` prints: one by id, or those with no relevant-and-complete
    chunk in the top k (or an error), or all; with `qtype`, only questions of that type
    (generated sets record one per question)."""
    qs = list(run.questions)
    if qtype is not None:
        qs = [q for q in qs if q.question.type == qtype]
    k = run.header.k or 1
    if question is not None:
        qs = [q for q in qs if q.question.question_id == question]
        if not qs:
            raise HarnessError(f"{run.run_dir}: no question with id {question!r} in this run")
    if failures:
        qs = [q for q in qs if q.metrics.get(f"hit_rate@{k}") == 0.0 or q.error]
    return qs


def _database(args: argparse.Namespace) -> SweepDatabase | None:
    """The sweep tables of --storage (a postgresql:// URL), or None without it."""
    from harness.stores.postgres import is_postgres

    url = getattr(args, "storage", None)
    if not url:
        return None
    if not is_postgres(url):
        raise HarnessError(f"--storage: expected a postgresql:// URL, got {redact_url(url)}")
    return SweepDatabase(url)


def _db_run(db: SweepDatabase, arg: str) -> RunLog:
    """A trial's run from the database, named SWEEP_NAME:N."""
    sweep, _, number = arg.rpartition(":")
    if not (sweep and number.isdigit()):
        raise HarnessError(f"{arg}: name a trial of a sweep in the database as SWEEP_NAME:N")
    return db.read_run(sweep, int(number))


def cmd_show(args: argparse.Namespace) -> int:
    """Print a sweep's trials, or a run's graded chunks (all, one question, or failures);
    with --storage, a sweep (NAME) or a trial (NAME:N) from the database."""
    db = _database(args)
    if db is not None and ":" not in args.run:
        log = read_db_sweep(db, args.run)
        data = {
            "sweep": args.run,
            **log.summary.to_dict(),
            "trials": [t.to_dict() for t in log.trials],
        }
        return emit(args, data, text.format_sweep(log.summary, log.trials))
    sweep_dir = find_sweep_dir(args.run, args.results_dir) if db is None else None
    if sweep_dir is not None:
        log = read_sweep(sweep_dir)
        data = {
            "sweep_dir": str(sweep_dir),
            **log.summary.to_dict(),
            "trials": [t.to_dict() for t in log.trials],
        }
        lines = text.best_trial_breakdown_lines(log.summary, sweep_dir)
        trust = text.recommended_trust(log.summary, log.trials, sweep_dir)
        data["recommended_trust"] = trust
        table = text.format_sweep(
            log.summary,
            log.trials,
            hard=text.trial_metrics(log.trials, sweep_dir),
            trust=trust,
        )
        return emit(args, data, "\n".join([table, *lines]))
    run = _db_run(db, args.run) if db else read_run(resolve_run_dir(args.run, args.results_dir))
    if args.by:
        from harness.analysis.sources import breakdown

        rows = breakdown(run.questions, run.header.k or 1, args.by)
        data_by = {"run_dir": str(run.run_dir), "k": run.header.k, "by": args.by, "rows": rows}
        return emit(args, data_by, text.format_breakdown(rows, args.by, run.header.k or 1))
    qs = select_questions(run, args.question, args.failures, args.type)
    data = {
        "run_dir": str(run.run_dir),
        "header": run.header.to_dict(),
        "questions": [q.to_dict() for q in qs],
    }
    return emit(args, data, text.format_questions(run, qs))


def cmd_list(args: argparse.Namespace) -> int:
    """List the runs and sweeps under a results folder with status and headline metrics;
    with --storage, the sweeps in that database."""
    db = _database(args)
    if db is not None:
        try:
            rows = db.list_sweeps()
        finally:
            db.close()
        return emit(args, rows, text.format_list(rows))
    rows = list_results(args.results_dir_pos or args.results_dir)
    return emit(args, rows, text.format_list(rows))


def cmd_compare(args: argparse.Namespace) -> int:
    """Compare runs side by side against the first one given."""
    from harness.analysis import compare_runs

    db = _database(args)
    runs = [
        _db_run(db, a) if db else read_run(resolve_run_dir(a, args.results_dir)) for a in args.runs
    ]
    comp = compare_runs(runs, k=args.k, change_metric=args.metric)
    out = text.format_compare(comp, comp.change_metric)
    if args.by:
        out += "\n\n" + text.format_compare_breakdown(runs, comp.k, args.by, comp.change_metric)
    return emit(args, dataclasses.asdict(comp), out)


def read_db_sweep(db: SweepDatabase, name: str) -> SweepLog:
    """A sweep from the database, the connection closed afterwards."""
    try:
        return db.read_sweep(name)
    finally:
        db.close()


def _storage_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--storage",
        metavar="URL",
        help="read sweeps from this postgresql:// database (a trial is SWEEP_NAME:N)",
    )


def register(sub: argparse._SubParsersAction) -> None:
    """Add list, show and compare to the command line."""
    p_list = sub.add_parser("list", help="runs and sweeps with status and headline metrics")
    p_list.add_argument("results_dir_pos", nargs="?", metavar="RESULTS_DIR")
    format_option(p_list)
    results_dir_option(p_list)
    _storage_option(p_list)
    p_list.set_defaults(func=cmd_list)

    p_cmp = sub.add_parser("compare", help="metrics side by side with paired bootstrap intervals")
    p_cmp.add_argument("runs", nargs="+", metavar="RUN_OR_TRIAL")
    p_cmp.add_argument("--k", type=int, help="compare at this k (default: the largest shared k)")
    p_cmp.add_argument(
        "--metric",
        default=None,
        help="metric for the changed questions (default: the runs' objective, soft_mrr)",
    )
    p_cmp.add_argument(
        "--by", choices=("type", "topic"), help="also the metric per question type or topic"
    )
    format_option(p_cmp)
    results_dir_option(p_cmp)
    _storage_option(p_cmp)
    p_cmp.set_defaults(func=cmd_compare)

    p_show = sub.add_parser("show", help="print a run's graded chunks with verdicts and reasons")
    p_show.add_argument("run", help="run folder, or run id under --results-dir")
    p_show.add_argument("--question", help="only this question id")
    p_show.add_argument(
        "--failures", action="store_true", help="only questions with no relevant-and-complete hit"
    )
    p_show.add_argument("--type", help="only questions of this type (generated sets)")
    p_show.add_argument(
        "--by", choices=("type", "topic"), help="instead: the metrics per question type or topic"
    )
    format_option(p_show)
    results_dir_option(p_show)
    _storage_option(p_show)
    p_show.set_defaults(func=cmd_show)
