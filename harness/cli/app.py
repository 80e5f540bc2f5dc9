"""The command line: a thin shell over the public functions.

    harness run EXPERIMENT.toml [--set key=value ...] [--dry-run]
    harness sweep EXPERIMENT.toml [--trials N] [--resume SWEEP_DIR] [--storage URL] [--dry-run]
    harness list [RESULTS_DIR]
    harness show RUN_OR_TRIAL_OR_SWEEP [--question ID] [--failures]
    harness compare RUN_OR_TRIAL RUN_OR_TRIAL ... [--k K] [--metric NAME]
    harness validate RUN_OR_SWEEP [--qrels FILE] [--k K]
    harness label RUN_OR_TRIAL [--sample N] [--out FILE]
    harness judge-check RUN_OR_TRIAL [--sample N] [--qrels FILE]
    harness export RUN_OR_TRIAL --out DIR

Every command takes --format text|json. User errors print one line to stderr and exit 2;
Ctrl-C exits 130 with every finished result kept.

This entry point is the only place that sets process-wide state: logging, warnings
filters and environment defaults. The library never does.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from loguru import logger

from harness.cli import inspect, labels, runs
from harness.errors import HarnessError

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130

USER_AGENT = "harness-retrieval-tuning/0.1 (offline-first)"


def _setup_process(verbosity: int) -> None:
    """Logging to stderr, quiet third-party noise, offline model loading by default."""
    logger.remove()
    level = {-1: "WARNING", 0: "INFO"}.get(verbosity, "DEBUG")
    # Resolve sys.stderr at each write: whoever swapped it (a test, a notebook) may close it.
    logger.add(
        lambda message: sys.stderr.write(message),
        level=level,
        format="<green>{time:HH:mm:ss}</green> {message}",
        colorize=False,
    )
    # Models load from package folders: never ask a hub, never draw its progress bars.
    for name, value in (
        ("HF_HUB_OFFLINE", "1"),
        ("TRANSFORMERS_OFFLINE", "1"),
        ("HF_HUB_DISABLE_PROGRESS_BARS", "1"),
        ("TRANSFORMERS_VERBOSITY", "error"),
        ("USER_AGENT", USER_AGENT),
    ):
        os.environ.setdefault(name, value)
    # langchain-community announces on import that it is being sunset; grid sweeps use
    # Optuna's BruteForceSampler knowingly.
    warnings.filterwarnings(
        "ignore", message=".*langchain.community.*", category=DeprecationWarning
    )
    warnings.filterwarnings("ignore", message="BruteForceSampler is experimental")


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: global flags and one sub-command per task."""
    parser = argparse.ArgumentParser(
        prog="harness", description="Reference-free retrieval tuning: judge, measure, compare."
    )
    parser.add_argument(
        "-q", "--quiet", action="store_const", const=-1, dest="verbosity", default=0
    )
    parser.add_argument("-v", "--verbose", action="store_const", const=1, dest="verbosity")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in (runs, inspect, labels):
        group.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, run one command, and turn user errors into one line and exit status 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _setup_process(args.verbosity)
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
