"""A sweep judged through a batch API before its trials run (`judge.batch`).

Retrieval for every setting of the space costs nothing the judge bills, so the pairs
every setting would judge are collected first, judged as batch jobs
(`harness.judge.batch.judge_in_batches`) into the verdict cache, and every trial then
reads its verdicts from the cache.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from loguru import logger

from harness.config import ExperimentConfig
from harness.errors import HarnessError
from harness.judge import Judge
from harness.judge.batch import (
    BatchState,
    check_batch_config,
    check_batchable,
    judge_in_batches,
    state_path,
)
from harness.pipeline import judged_pairs
from harness.stores import VerdictCache
from harness.stores.verdicts import FILE as VERDICTS_FILE
from harness.sweep.space import SearchSpace


def space_pairs(config: ExperimentConfig, cache_dir: Path) -> list[tuple[str, str]]:
    """The distinct (question, chunk text) pairs every setting of the space judges, in
    first-seen order. A setting whose index cannot be built for free (a paid embedder
    without a cached index) has only stand-in chunks: it is left to online judging."""
    space = SearchSpace(config)
    pairs: dict[tuple[str, str], None] = {}
    inexact = 0
    for params in space.enumerate():
        got, _, exact = judged_pairs(space.trial_config(params), cache_dir)
        if not exact:
            inexact += 1
            continue
        pairs.update(dict.fromkeys(got))
    if inexact:
        logger.warning(
            "batch: {} settings need a paid index or reranker first; their trials judge online",
            inexact,
        )
    return list(pairs)


def _one_process(where: str) -> HarnessError:
    return HarnessError(
        f"{where}: judge.batch: a batch sweep runs in one process (no --workers, no "
        "database storage)"
    )


def check_batch_sweep(
    config: ExperimentConfig, *, storage: str | None, workers: int, join: str | None
) -> None:
    """Refuse, before the sweep's folder or study is made, a batch sweep that cannot
    run: more than one process (workers, a database, a joining worker), a listwise
    judge, or the local judge (no OpenAI-compatible endpoint). `batch_sweep` checks the
    judge itself again (a resume turns batch mode on after the folder is found)."""
    where = config.path or "<experiment>"
    if workers > 1 or storage is not None or join is not None:
        raise _one_process(where)
    check_batch_config(config.judge, where)


def batch_sweep(
    config: ExperimentConfig, judge: Judge, sweep_dir: Path, cache_dir: Path, *, shared: bool
) -> dict[str, Any]:
    """Judge the verdicts the whole space needs through the batch API (resuming the
    batches `sweep_dir` records); the batch stats for the sweep's summary."""
    where = config.path or "<experiment>"
    if shared:
        raise _one_process(where)
    chat = check_batchable(judge, where)
    pairs = space_pairs(config, cache_dir)
    logger.info("batch: {} distinct (question, chunk) pairs over the space", len(pairs))
    cache = VerdictCache(cache_dir / VERDICTS_FILE)
    try:
        return judge_in_batches(pairs, chat, config.judge, cache, sweep_dir)
    finally:
        cache.close()


def resume_config(config: ExperimentConfig, sweep_dir: Path) -> ExperimentConfig:
    """The config a resume of `sweep_dir` runs with: judge.batch on, even without
    `--batch`, when the folder records batches. The provider bills the batches it was
    given whatever this process does, and a finished batch's answers may not all be in
    the verdict cache yet (a kill between the two), so judging their verdicts online
    would pay them twice; a resume continues the sweep as it started (as one without
    the experiment file does, from the recorded config)."""
    path = state_path(sweep_dir)
    if config.judge.batch or not path.is_file():
        return config
    batches = BatchState.load(path).batches
    if not batches:
        return config
    running = sum(1 for b in batches if not b.get("done"))
    logger.warning(
        "sweep {}: resumed in batch mode (judge.batch) though not asked to: its {} records "
        "{} batches ({} still with the provider), whose verdicts would otherwise be paid "
        "again online",
        sweep_dir.name,
        path.name,
        len(batches),
        running,
    )
    return dataclasses.replace(config, judge=dataclasses.replace(config.judge, batch=True))
