"""`harness run` and `harness sweep`: the commands that judge and pay."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.cli.options import (
    emit,
    experiment_options,
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

    A resume without an experiment file reuses the config the sweep started with, except
    its endpoints and key variables: a results folder never chooses where a key is sent.
    """
    from harness.config import check_recorded_endpoints, load_experiment, rebase_on_user
    from harness.log import SWEEP_FILE, read_sweep_summary
    from harness.sweep import estimate_sweep, run_sweep

    overrides = args.set or []
    if not (args.experiment or args.resume):
        raise HarnessError("sweep: give an experiment file, or --resume SWEEP_DIR")
    if args.experiment:
        config = load_experiment(args.experiment, overrides=overrides)
    if args.resume:
        recorded = read_sweep_summary(args.resume).config
        where = str(Path(args.resume) / SWEEP_FILE)
        hint = "the experiment file (harness sweep FILE --resume SWEEP_DIR)"
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
        progress=progress_sink(),
    )
    data: dict[str, Any] = {"sweep_dir": str(log.sweep_dir), **log.summary.to_dict()}
    return emit(
        args,
        data,
        text.format_sweep(log.summary, log.trials) + f"\nsweep log: {log.sweep_dir}",
    )


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
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
        help="Optuna storage URL (default: a SQLite file in the sweep folder)",
    )
    experiment_options(
        p_sweep, "the most the sweep's judge calls, tokens and cost could be; pay nothing"
    )
    results_dir_option(p_sweep)
    p_sweep.set_defaults(func=cmd_sweep)
