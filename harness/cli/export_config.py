"""`harness export-config`: a sweep's chosen trial as an experiment file and LangChain code."""

from __future__ import annotations

import argparse
import dataclasses

from harness.cli.options import emit, format_option, results_dir_option
from harness.errors import HarnessError
from harness.log import find_sweep_dir, read_sweep
from harness.report import text


def cmd_export_config(args: argparse.Namespace) -> int:
    """Write the recommended (or --trial N) trial's experiment file; print its LangChain code."""
    from harness.sweep import export_config

    sweep_dir = find_sweep_dir(args.sweep, args.results_dir)
    if sweep_dir is None:
        raise HarnessError(f"{args.sweep}: not a sweep folder (nor a sweep id under --results-dir)")
    exported = export_config(read_sweep(sweep_dir), args.out, trial=args.trial)
    return emit(args, dataclasses.asdict(exported), text.format_exported_config(exported))


def register(sub: argparse._SubParsersAction) -> None:
    """Add export-config to the command line."""
    p = sub.add_parser(
        "export-config",
        help="write the recommended trial of a sweep as an experiment file, with LangChain code",
    )
    p.add_argument("sweep", metavar="SWEEP", help="sweep folder, or sweep id under --results-dir")
    p.add_argument("--trial", type=int, help="export this trial (default: the recommended one)")
    p.add_argument("--out", required=True, help="the experiment file to write (never overwritten)")
    format_option(p)
    results_dir_option(p)
    p.set_defaults(func=cmd_export_config)
