"""harness: reference-free retrieval tuning for RAG.

The public API (imported on first use, so `import harness` stays cheap):

    load_experiment(path, overrides)   a validated experiment (harness.config)
    run_experiment(config, ...)        one configuration end to end (harness.pipeline)
    estimate_run(config, ...)          what a run would cost the judge
    run_sweep(config, ...)             an Optuna sweep, one run per trial (harness.sweep)
    estimate_sweep(config, ...)        the most a sweep could cost
    read_run(dir), read_sweep(dir)     result logs as typed records (harness.log)
    compare_runs(runs, ...)            paired comparison (harness.analysis)
    validate_run(run, qrels, ...)      the judge against human labels

An experiment may be given as its file's path, a run as its folder's, labels as their
file's; `load_experiment`'s overrides as `["retrieval.k=3"]` (as `--set` takes them) or
`{"retrieval.k": 3}`.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_API = {
    "load_experiment": "harness.config",
    "run_experiment": "harness.pipeline",
    "estimate_run": "harness.pipeline",
    "run_sweep": "harness.sweep",
    "estimate_sweep": "harness.sweep",
    "read_run": "harness.log",
    "read_sweep": "harness.log",
    "compare_runs": "harness.analysis",
    "validate_run": "harness.analysis",
    "validate_sweep": "harness.analysis",
    "read_qrels": "harness.analysis",
}

__all__ = [*_API, "__version__"]


def __getattr__(name: str) -> Any:
    if name in _API:
        # the third-party warnings harness triggers knowingly say nothing to a notebook
        importlib.import_module("harness.noise").ignore_known_warnings()
        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
