"""`harness report`: one self-contained HTML page per run, sweep or comparison."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from harness.cli.options import emit, format_option, results_dir_option
from harness.errors import HarnessError
from harness.log import find_sweep_dir, resolve_run_dir

if TYPE_CHECKING:  # the page's packages (plotly) load only when a page is written
    from harness.report.html import WrittenReport


def cmd_report(args: argparse.Namespace) -> int:
    """Write the page of a run, a sweep, or (with several runs) a comparison."""
    from harness.report.html import (
        report_compare,
        report_database_sweep,
        report_run,
        report_sweep,
    )

    targets = [args.target, *args.more]
    if args.storage:
        if len(targets) > 1 or args.qrels is not None:
            raise HarnessError("--storage: the page of one sweep in the database, without --qrels")
        written = report_database_sweep(
            args.storage, args.target, out=args.out, results_dir=args.results_dir
        )
        return _emit_written(args, written)
    sweep_dir = find_sweep_dir(args.target, args.results_dir)
    if len(targets) == 1 and sweep_dir is not None:
        written = report_sweep(sweep_dir, out=args.out, qrels=args.qrels)
    elif len(targets) == 1:
        written = report_run(
            resolve_run_dir(args.target, args.results_dir), out=args.out, qrels=args.qrels
        )
    else:
        if args.qrels is not None:
            raise HarnessError("--qrels: only for the page of one run or sweep, not a comparison")
        for t in targets:
            if find_sweep_dir(t, args.results_dir) is not None:
                raise HarnessError(
                    f"{t}: a sweep; compare runs or trials (SWEEP_DIR/trials/N or SWEEP:N)"
                )
        dirs = [resolve_run_dir(t, args.results_dir) for t in targets]
        written = report_compare(dirs, out=args.out, k=args.k, metric=args.metric)
    return _emit_written(args, written)


def _emit_written(args: argparse.Namespace, written: WrittenReport) -> int:
    size_mb = written.size_bytes / 1e6
    message = (
        f"wrote {written.out} ({written.kind}, {size_mb:.1f} MB, {written.figures} plots) "
        f"in {written.seconds:.1f} s; it opens offline in any browser"
    )
    return emit(args, written.to_dict(), message)


def register(sub: argparse._SubParsersAction) -> None:
    """Add report to the command line."""
    p = sub.add_parser(
        "report", help="one self-contained HTML page for a run, a sweep or a comparison"
    )
    p.add_argument("target", metavar="RUN_OR_SWEEP", help="run, trial or sweep folder (or id)")
    p.add_argument(
        "more", nargs="*", metavar="RUN", help="more runs or trials: a comparison with the first"
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        help="page to write (default: report.html beside the log; compare.html in the "
        "first run's folder for a comparison)",
    )
    p.add_argument(
        "--qrels", help="labels: adds the judge against them (default: the experiment's)"
    )
    p.add_argument(
        "--k", type=int, help="comparison: compare at this k (default: the largest shared)"
    )
    p.add_argument(
        "--metric",
        default=None,
        help="comparison: metric for the changed questions (default: the runs' objective, "
        "soft_mrr; its hard twin where the runs have no probabilities)",
    )
    p.add_argument(
        "--storage",
        metavar="URL",
        help="the sweep RUN_OR_SWEEP names is in this postgresql:// database",
    )
    format_option(p)
    results_dir_option(p)
    p.set_defaults(func=cmd_report)
