"""The command line: a thin shell over the public functions.

    harness run EXPERIMENT.toml [--set key=value ...] [--format table|json]
    harness show RUN [--question ID] [--failures] [--format text|json]

User errors print one line to stderr and exit 2; Ctrl-C exits 130 with every finished
result kept.
"""

from __future__ import annotations

import argparse
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
    logger.add(sys.stderr, level=level, format="<green>{time:HH:mm:ss}</green> {message}")


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


def format_run_summary(run: RunLog) -> str:
    h = run.header
    s = h.stats
    parts = [
        f"run {h.run_id}: {h.status}, {h.data.get('n_questions', len(run.questions))} questions, "
        f"{h.data.get('n_chunks', '?')} chunks",
        format_metrics_table(h),
        (
            f"judge calls {s.get('judge_calls', 0)}, cache hits {s.get('judge_cache_hits', 0)}, "
            f"errors {s.get('judge_errors', 0)}, index {'cached' if s.get('index_cache_hit') else 'built'} "
            f"in {s.get('index_s', 0):.1f} s, total {s.get('total_s', 0):.1f} s"
        ),
        f"result log: {run.run_dir}",
    ]
    if h.error:
        parts.insert(1, f"error: {h.error}")
    return "\n".join(parts)


def _mark(value: bool | None) -> str:
    return {True: "yes", False: "no", None: "ERR"}[value]


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
        lines.append(
            f"  #{jh.hit.rank}  score {jh.hit.score:.3f}  relevant={_mark(v.relevant.value)}  "
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
    """A run folder given as a path, or as a run id under the results folder."""
    for candidate in (Path(arg), Path(results_dir) / arg):
        if (candidate / "header.json").is_file():
            return candidate
    raise HarnessError(f"{arg}: no run folder here or under {results_dir}/ (no header.json)")


# ---------------------------------------------------------------- commands


def cmd_run(args: argparse.Namespace) -> int:
    from harness.config import load_experiment
    from harness.pipeline import run_experiment

    config = load_experiment(args.experiment, overrides=args.set or [])
    run = run_experiment(config, results_dir=args.results_dir, cache_dir=args.cache_dir)
    if args.format == "json":
        print(json.dumps({"run_dir": str(run.run_dir), **run.header.to_dict()}, indent=2))
    else:
        print(format_run_summary(run))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
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

    p_run = sub.add_parser("run", help="run one configuration and print its metrics")
    p_run.add_argument("experiment", help="experiment file (TOML)")
    p_run.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a setting, e.g. chunking.chunk_size=500",
    )
    p_run.add_argument("--format", choices=("table", "json"), default="table")
    p_run.add_argument(
        "--cache-dir",
        default=None,
        help="verdict/index cache (default: $HARNESS_CACHE_DIR or ~/.cache/harness)",
    )
    common(p_run)
    p_run.set_defaults(func=cmd_run)

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
