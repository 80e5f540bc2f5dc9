"""`harness generate`: questions from the documents, filtered, with their sources."""

from __future__ import annotations

import argparse

from harness.cli.options import cache_dir_option, emit, format_option, positive_int
from harness.config import QUESTION_TYPES
from harness.report import text


def _types(value: str) -> tuple[str, ...]:
    """--types simple,distracting (comma-separated, each a known type)."""
    types = tuple(t.strip() for t in value.split(",") if t.strip())
    bad = [t for t in types if t not in QUESTION_TYPES]
    if not types or bad:
        raise argparse.ArgumentTypeError(
            f"expected some of {','.join(QUESTION_TYPES)} (comma-separated), got {value!r}"
        )
    return types


def cmd_generate(args: argparse.Namespace) -> int:
    """Generate questions (or with --dry-run estimate the calls and tokens)."""
    from harness.config import load_experiment
    from harness.generate import estimate_generation, generate_questions

    config = load_experiment(args.experiment, overrides=args.set or [])
    if args.dry_run:
        est = estimate_generation(
            config, n=args.n, types=args.types, seed=args.seed, cache_dir=args.cache_dir
        )
        return emit(args, est, text.format_generate_estimate(est))
    report = generate_questions(
        config,
        out=args.out,
        n=args.n,
        types=args.types,
        seed=args.seed,
        cache_dir=args.cache_dir,
    )
    return emit(args, report.to_dict(), text.format_generation(report))


def register(sub: argparse._SubParsersAction) -> None:
    """Add generate to the command line."""
    p = sub.add_parser(
        "generate", help="write questions from the documents, critiqued, with their sources"
    )
    p.add_argument("experiment", help="experiment file (TOML); [generate] holds the settings")
    p.add_argument("--n", type=positive_int, help="questions to keep (default: generate.n)")
    p.add_argument(
        "--out",
        default="questions/generated.jsonl",
        help="questions file to write (default: questions/generated.jsonl); the report, "
        "exam and paraphrases go beside it",
    )
    p.add_argument(
        "--types",
        type=_types,
        help=f"comma-separated question types (default: generate.types): {','.join(QUESTION_TYPES)}",
    )
    p.add_argument("--seed", type=int, help="sampling and cache seed (default: generate.seed)")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a setting, e.g. generate.min_score=3",
    )
    p.add_argument("--dry-run", action="store_true", help="estimate calls and tokens; pay nothing")
    format_option(p)
    cache_dir_option(p)
    p.set_defaults(func=cmd_generate)
