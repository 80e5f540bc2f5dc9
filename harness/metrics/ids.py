"""Metric ids: `name@k` (a fixed cut-off) or `name@k` with the letter k (each run's own k).

The one parser of metric ids, used by sweep objectives, validation and the CLI.
"""

from __future__ import annotations

import re

from harness.metrics.ir import COUNTS, METRICS, Direction

_METRIC_ID = re.compile(r"^([a-z_]+)@(k|[1-9][0-9]*)$")

OBJECTIVE_NAMES = (*METRICS, "failures")
"""Names a sweep may optimise: every registered metric, and the failures count."""


def parse_metric_id(metric_id: str) -> tuple[str, int | None]:
    """("mrr", None) for "mrr@k" (the trial's own k); ("mrr", 3) for "mrr@3".

    Raises ValueError for anything else ("mrr", "mrr@0", "MRR@3")."""
    m = _METRIC_ID.match(metric_id)
    if not m:
        raise ValueError(metric_id)
    return m.group(1), None if m.group(2) == "k" else int(m.group(2))


def metric_key(metric_id: str, k: int) -> str:
    """The run-header key of a metric id for a run retrieving k chunks ("mrr@k", 4 ->
    "mrr@4"; "mrr@3", 4 -> "mrr@3")."""
    name, fixed = parse_metric_id(metric_id)
    return f"{name}@{fixed if fixed is not None else k}"


def hard_twin(metric_id: str) -> str | None:
    """The yes/no counterpart of a soft metric id ("soft_mrr@k" -> "mrr@k"); None for a
    metric that has none (it is on the verdicts already, or a size)."""
    name, fixed = parse_metric_id(metric_id)
    hard = METRICS[name].hard if name in METRICS else None
    return None if hard is None else f"{hard}@{'k' if fixed is None else fixed}"


def direction(name: str) -> Direction:
    """ "minimize" for sizes and counts (context_chars, failures), else "maximize"."""
    if name in COUNTS:
        return "minimize"
    return METRICS[name].direction
