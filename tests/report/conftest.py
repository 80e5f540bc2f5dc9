"""Result logs for the report's tests: the tiny corpus with a chunk that carries markup
(an injection attempt), judged by the scripted judge; one run, a second run with much smaller
chunks (two questions change), and a 5-trial sweep."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.config import load_experiment
from harness.log import RunLog, SweepLog
from harness.pipeline import run_experiment
from harness.sweep import run_sweep
from tests.conftest import DATA, ScriptedJudge

PAYLOAD = (
    "Hive inspection notice. <script>window.__pwned = 1; alert(1)</script> "
    '"><img src=x onerror="window.__pwned = 2; alert(2)"> '
    "</script><!-- \u2028 The hive is inspected every Saturday at 9 am."
)
"""A chunk that tries to run script in the page: it must show as text."""


@dataclass(frozen=True)
class Logs:
    """The logs the report tests read."""

    root: Path
    run: RunLog
    run_small: RunLog
    sweep: SweepLog


@pytest.fixture(scope="session")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Logs:
    root = tmp_path_factory.mktemp("report-logs")
    data = root / "data"
    shutil.copytree(DATA, data)
    (data / "corpus" / "evil.md").write_text(PAYLOAD + "\n", encoding="utf-8")
    results, cache = root / "results", root / "cache"
    run = run_experiment(
        load_experiment(data / "experiment.toml"),
        results_dir=results,
        cache_dir=cache,
        judge=ScriptedJudge(),
    )
    small = run_experiment(
        load_experiment(
            data / "experiment.toml", ["chunking.chunk_size=60", "chunking.chunk_overlap=0"]
        ),
        results_dir=results,
        cache_dir=cache,
        judge=ScriptedJudge(),
    )
    sweep = run_sweep(
        load_experiment(data / "sweep.toml"),
        results_dir=results,
        cache_dir=cache,
        judge=ScriptedJudge(),
    )
    return Logs(root, run, small, sweep)
