"""`harness run` and `harness sweep`: the commands that judge and pay."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.cli.options import (
    emit,
    experiment_options,
    positive_int,
    progress_sink,
    results_dir_option,
)
from harness.errors import HarnessError
from harness.report import text


def cmd_run(args: argparse.Namespace) -> int:
    """Run one experiment, or with --dry-run only estimate what it would cost."""
    from harness.config import load_experiment
    from harness.pipeline import estimate_run, run_experiment

    config = load_experiment(args.experiment, overrides=args.set or [])
    if config.judge.batch:  # a run's verdicts cannot wait for a batch window
        from loguru import logger

        logger.warning(
            "judge.batch applies to sweeps (harness sweep); this run judges online, at "
            "the online price"
        )
    if args.dry_run:
        est = estimate_run(config, cache_dir=args.cache_dir)
        return emit(args, est, text.format_run_estimate(est))
    run = run_experiment(
        config, results_dir=args.results_dir, cache_dir=args.cache_dir, progress=progress_sink()
    )
    return emit(
        args,
        {"run_dir": str(run.run_dir), **run.header.to_dict()},
        text.format_run_summary(run),
    )


def cmd_sweep(args: argparse.Namespace) -> int:
    """Run (or resume) a sweep, or with --dry-run estimate the most it could cost.

    A resume (or --join) without an experiment file reuses the config the sweep started
    with, except its endpoints and key variables: a results folder (or a database) never
    chooses where a key is sent.
    """
    from harness.config import check_recorded_endpoints, load_experiment, rebase_on_user
    from harness.log import SWEEP_FILE, read_sweep_summary
    from harness.sweep import estimate_sweep, run_sweep

    overrides = [*(args.set or []), *(["judge.batch=true"] if args.batch else [])]
    if not (args.experiment or args.resume or args.join):
        raise HarnessError(
            "sweep: give an experiment file, --resume SWEEP_DIR or --join SWEEP_NAME"
        )
    if args.experiment:
        config = load_experiment(args.experiment, overrides=overrides)
    recorded_from: tuple[dict[str, Any], str, str] | None = None
    if args.resume:
        where = str(Path(args.resume) / SWEEP_FILE)
        hint = "the experiment file (harness sweep FILE --resume SWEEP_DIR)"
        recorded_from = (read_sweep_summary(args.resume).config, where, hint)
    elif args.join:
        recorded_from = _recorded_for_join(args)
    if recorded_from is not None:
        recorded, where, hint = recorded_from
        if args.experiment:
            check_recorded_endpoints(recorded, config, where=where, hint=hint)
        else:
            # The resolved config the sweep started with, --set overrides included; its
            # endpoints and key variables are the user's (--set, environment, defaults).
            config = rebase_on_user(recorded, None, overrides, where=where, hint=hint)
    if args.dry_run:
        est = estimate_sweep(config, cache_dir=args.cache_dir, trials=args.trials)
        return emit(args, est, text.format_sweep_estimate(est))
    log = run_sweep(
        config,
        results_dir=args.results_dir,
        cache_dir=args.cache_dir,
        trials=args.trials,
        resume=args.resume,
        storage=args.storage,
        progress=progress_sink() if args.workers == 1 else None,
        name=args.name,
        join=args.join,
        workers=args.workers,
        worker_argv=lambda name: _worker_argv(args, name),
        **({"heartbeat_s": args.heartbeat} if args.heartbeat else {}),
    )
    data: dict[str, Any] = {"sweep_dir": str(log.sweep_dir), **log.summary.to_dict()}
    return emit(
        args,
        data,
        "\n".join(
            [
                text.format_sweep(
                    log.summary,
                    log.trials,
                    hard=text.trial_metrics(log.trials, log.sweep_dir),
                    trust=text.recommended_trust(log.summary, log.trials, log.sweep_dir),
                ),
                *text.best_trial_breakdown_lines(log.summary, log.sweep_dir),
            ]
        )
        + f"\nsweep log: {log.sweep_dir}",
    )


def _recorded_for_join(args: argparse.Namespace) -> tuple[dict[str, Any], str, str]:
    """The config a sweep to join started with, from the database or its folder, with
    where it was read and the hint for a mismatch."""
    from harness.sweep.logs import recorded_summary

    summary, where = recorded_summary(args.storage, args.results_dir, args.join)
    return summary.config, where, "the experiment file (harness sweep FILE --join SWEEP_NAME)"


def _worker_argv(args: argparse.Namespace, name: str) -> list[str]:
    """The command line of one local worker of sweep `name` (`--workers N`): this
    command's options, joining the sweep instead of starting one."""
    argv = [sys.executable, "-m", "harness"]
    argv += {-1: ["-q"], 1: ["-v"]}.get(args.verbosity, [])
    argv += ["sweep", "--join", name, "--results-dir", str(args.results_dir)]
    if args.experiment:
        argv.insert(argv.index("--join"), str(Path(args.experiment).resolve()))
    if args.storage:
        argv += ["--storage", args.storage]
    if args.cache_dir:
        argv += ["--cache-dir", str(args.cache_dir)]
    if args.trials is not None:
        argv += ["--trials", str(args.trials)]
    if args.heartbeat:
        argv += ["--heartbeat", str(args.heartbeat)]
    for item in args.set or []:
        argv += ["--set", item]
    return argv


def register(sub: argparse._SubParsersAction) -> None:
    """Add run and sweep to the command line."""
    p_run = sub.add_parser("run", help="run one configuration and print its metrics")
    p_run.add_argument("experiment", help="experiment file (TOML)")
    experiment_options(p_run, "estimate judge calls, tokens and cost; pay nothing")
    results_dir_option(p_run)
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
        help="Optuna storage URL (default: a SQLite file in the sweep folder); with "
        "postgresql://user@host/db the study, caches and log live in that database, "
        "shared by workers on any machine",
    )
    p_sweep.add_argument(
        "--name", help="the sweep's name (default: made from the experiment's name and the time)"
    )
    p_sweep.add_argument(
        "--join", metavar="SWEEP_NAME", help="work on an existing sweep, from any machine"
    )
    p_sweep.add_argument(
        "--workers",
        type=positive_int,
        default=1,
        help="worker processes on this machine (default 1; without --storage they share "
        "an Optuna journal file in the sweep folder)",
    )
    p_sweep.add_argument(
        "--heartbeat",
        type=positive_int,
        metavar="SECONDS",
        help="how often a PostgreSQL worker signals it lives; a silent one's trial runs "
        "again after 3 beats (default 10)",
    )
    p_sweep.add_argument(
        "--batch",
        action="store_true",
        help="judge the whole space through the endpoint's batch API first, at its lower "
        "price (same as --set judge.batch=true)",
    )
    experiment_options(
        p_sweep, "the most the sweep's judge calls, tokens and cost could be; pay nothing"
    )
    results_dir_option(p_sweep)
    p_sweep.set_defaults(func=cmd_sweep)
