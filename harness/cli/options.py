"""Options the commands share, so each is spelled and documented once."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from harness.secrets import redact, redact_obj

# Control characters a terminal acts on (ESC starts colour, cursor and title sequences,
# \r rewrites the line, C1 0x9b is a one-byte CSI), as visible escapes. Newline and tab
# are layout; everything else in C0, DEL and C1 comes from files and replies.
_CONTROLS = {
    c: "\\r" if c == 0x0D else f"\\x{c:02x}"
    for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))
    if c not in (0x09, 0x0A)
}
_JSON_CONTROLS = {c: f"\\u{c:04x}" for c in (0x7F, *range(0x80, 0xA0))}


def printable(text: str) -> str:
    """`text` safe to print on a terminal: control characters other than newline and tab
    shown as escapes (\\x1b, \\r), so a document or a run folder cannot move the cursor,
    rewrite a line or retitle the window of the person reading it."""
    return text.translate(_CONTROLS)


def _json_printable(text: str) -> str:
    """JSON text with DEL and C1 controls escaped too (json.dumps escapes only C0)."""
    return text.translate(_JSON_CONTROLS)


def positive_int(value: str) -> int:
    """An argparse type: an integer >= 1 (`--sample -1` is refused, not read as "all but
    one")."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}")
    return number


def format_option(p: argparse.ArgumentParser) -> None:
    """--format text|json: every command has it."""
    p.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text for people (default), json for programs",
    )


def results_dir_option(p: argparse.ArgumentParser) -> None:
    """--results-dir: where run and sweep folders are."""
    p.add_argument(
        "--results-dir", default="results", help="where run folders go (default: results)"
    )


def cache_dir_option(p: argparse.ArgumentParser) -> None:
    """--cache-dir: the verdict, embedding and index caches."""
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
    format_option(p)
    cache_dir_option(p)


def emit(args: argparse.Namespace, data: Any, text: str | None) -> int:
    """Print `data` as JSON with --format json, else `text`; exit status 0. Both are
    redacted, a shown result never holds a secret (`harness.secrets`), and hold no raw
    control character (`printable`)."""
    if args.format == "json":
        print(_json_printable(json.dumps(redact_obj(data), indent=2, ensure_ascii=False)))
    elif text is not None:
        print(printable(redact(text)))
    return 0


def progress_sink() -> Any:
    """A progress bar on a terminal, log lines otherwise (None: the pipeline's default)."""
    if sys.stderr.isatty():
        from harness.report.progress import BarProgress

        return BarProgress()
    return None
