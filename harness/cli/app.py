"""The command line: a thin shell over the public functions.

    harness run EXPERIMENT.toml [--set key=value ...] [--dry-run]
    harness sweep EXPERIMENT.toml [--trials N] [--resume SWEEP_DIR] [--storage URL] [--dry-run]
    harness sweep [EXPERIMENT.toml] --join SWEEP_NAME --storage URL [--trials N] [--workers N]
    harness list [RESULTS_DIR]
    harness show RUN_OR_TRIAL_OR_SWEEP [--question ID] [--failures]
    harness compare RUN_OR_TRIAL RUN_OR_TRIAL ... [--k K] [--metric NAME]
    harness validate RUN_OR_SWEEP [--qrels FILE] [--k K]
    harness label RUN_OR_TRIAL [--sample N] [--out FILE]
    harness judge-check RUN_OR_TRIAL [--sample N] [--qrels FILE] [--injection] [--set k=v]
    harness calibrate RUN_OR_SWEEP [--qrels FILE] [--out FILE]
    harness export RUN_OR_TRIAL --out DIR
    harness export-config SWEEP [--trial N] --out FILE
    harness report RUN_OR_SWEEP [RUN ...] [--out FILE] [--qrels FILE]
    harness generate EXPERIMENT.toml [--n N] [--out FILE] [--types T,...] [--seed S] [--dry-run]

Every command takes --format text|json. User errors print one line to stderr and exit 2;
Ctrl-C exits 130 and SIGTERM 143, with every finished result kept; a closed stdout pipe
(`harness list | head`) exits 141 without a word.

This entry point is the only place that sets process-wide state: logging, warnings
filters and environment defaults. The library never does.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import traceback
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from loguru import logger

from harness.cli import export_config, generate, inspect, labels, report, runs
from harness.cli.options import printable
from harness.errors import HarnessError, os_error_message
from harness.noise import ignore_known_warnings
from harness.secrets import redact, remember_environment, remember_url

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130
# 128 + SIGTERM, not 130: shells, `timeout` and service managers read 128+N as "ended by
# signal N", and a SIGTERM from a supervisor should not be reported as the user's Ctrl-C.
EXIT_TERMINATED = 143
# 128 + SIGPIPE: what `yes | head` reports for its writer when the reader closes the pipe.
EXIT_BROKEN_PIPE = 141

USER_AGENT = "harness-retrieval-tuning/0.1 (offline-first)"


def _redacted_excepthook(
    exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> None:
    """A bug keeps its traceback, without the secrets its messages may hold."""
    sys.stderr.write(redact("".join(traceback.format_exception(exc_type, exc, tb))))


def _to_stderr(message: str) -> None:
    """A log line to whatever sys.stderr is at write time, secrets masked."""
    sys.stderr.write(redact(message))


def _setup_process(verbosity: int) -> None:
    """Logging to stderr, quiet third-party noise, offline model loading by default;
    secrets in the environment remembered, so no text leaving the process shows them."""
    # Values of variables named like a secret (KEY, TOKEN, SECRET, PASSWORD) and the
    # credentials in a judge URL from the environment: `redact` masks them everywhere.
    remember_environment(os.environ)
    remember_url(os.environ.get("HARNESS_JUDGE_BASE_URL"))
    sys.excepthook = _redacted_excepthook
    logger.remove()
    level = {-1: "WARNING", 0: "INFO"}.get(verbosity, "DEBUG")
    # Resolve sys.stderr at each write: whoever swapped it (a test, a notebook) may close it.
    logger.add(
        _to_stderr,
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
    ignore_known_warnings()


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
    for group in (runs, inspect, labels, export_config, report, generate):
        group.register(sub)
    return parser


class _Terminated:
    """A SIGTERM handler that stops the command the way Ctrl-C does.

    It raises KeyboardInterrupt in the main thread, so the interrupted path runs: headers
    say "interrupted" with their stats, finished results stay, a local judge server is
    stopped. Later SIGTERMs are ignored while that cleanup runs; a second interrupt in the
    middle of it could leave a header saying "running".
    """

    def __init__(self) -> None:
        self.received = False

    def __call__(self, signum: int, frame: object) -> None:
        if not self.received:
            self.received = True
            raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, run one command, and turn user errors into one line and exit status 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _setup_process(args.verbosity)
    for override in getattr(args, "set", None) or ():
        # `--set judge.base_url=https://gw/?code=...`: its query values are secrets from
        # the first log line on, not only once a client for it exists.
        key, _, value = override.partition("=")
        if key.strip().endswith("base_url"):
            remember_url(value.strip())
    terminated = _Terminated()
    # Signal handlers can only be set from the main thread (main() may be called elsewhere).
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, terminated) if in_main else None
    try:
        status = int(args.func(args))
        sys.stdout.flush()  # a closed pipe shows here, inside the handlers, not at exit
        return status
    except HarnessError as exc:
        print(f"harness: error: {printable(redact(str(exc)))}", file=sys.stderr)
        return EXIT_USER_ERROR
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        # The one place file-system trouble becomes one line: a read-only results, cache
        # or home folder, a full disk, a path that is a file. The run's header already
        # says "failed" if it could be written.
        print(f"harness: error: {printable(redact(os_error_message(exc)))}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        word = "terminated" if terminated.received else "interrupted"
        print(f"harness: {word}; finished results and paid verdicts are kept", file=sys.stderr)
        return EXIT_TERMINATED if terminated.received else EXIT_INTERRUPTED
    finally:
        if in_main:  # None: a handler set outside Python, which cannot be put back
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _quiet_stdout() -> None:
    """The reader of stdout went away (`harness list | head`): like other command-line
    tools, stop without a word. stdout is pointed at the null device so the interpreter's
    own flush at exit does not fail on the closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (a test's StringIO): nothing to flush
        pass


def _entry() -> Any:
    sys.exit(main())
