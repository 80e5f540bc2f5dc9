"""Warnings harness triggers knowingly, silenced for the command line and the Python API
alike: each names one third-party call harness makes on purpose, so the warning tells a
user nothing they can act on. Only these messages are silenced; every other warning shows.
"""

from __future__ import annotations

import warnings

KNOWN_WARNINGS: tuple[tuple[str, type[Warning]], ...] = (
    # langchain-community announces on import that it is being sunset (only that notice:
    # LangChain's deprecation warnings for a user's own imports name it too).
    ("`langchain-community` is being sunset", DeprecationWarning),
    # Grid sweeps use Optuna's BruteForceSampler knowingly.
    ("BruteForceSampler is experimental", Warning),
    # Shared sweeps fail the trials of dead workers through Optuna's (experimental) call,
    # as Optuna's own optimize loop does with the same warning silenced.
    (".*fail_stale_trials is experimental", Warning),
    # TPE's multivariate/group modes and RDB heartbeats are started knowingly, once per
    # worker process, and PED-ANOVA is asked for unnormalized importances.
    (
        "Argument ``(multivariate|group|heartbeat_interval|normalize)`` is an experimental",
        Warning,
    ),
    # PED-ANOVA warns for every conditional parameter (chunk_overlap per chunk size) seen
    # in fewer than 2 trials; it leaves those out, as the sweep's importances expect.
    ("Some regimes for parameter", Warning),
)


def ignore_known_warnings() -> None:
    """Add a filter for each of KNOWN_WARNINGS not already in place. A call that finds
    them all changes nothing: re-adding a filter moves it ahead of the user's own and
    resets every module's "shown once" memory, so a warning of theirs would show again."""
    present = {
        (f[1].pattern, f[2]) for f in warnings.filters if f[0] == "ignore" and f[1] is not None
    }
    for message, category in KNOWN_WARNINGS:
        if (message, category) not in present:
            warnings.filterwarnings("ignore", message=message, category=category)
