"""Run stats are a typed record (#21) whose JSON is the stats object runs always wrote: the
same keys in the same order, from the same producers; older logs read back unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.config import JudgeConfig
from harness.errors import HarnessError
from harness.judge import JudgeStats
from harness.log import RunStats, parse_record, read_run
from harness.pipeline.run import VerdictTally, _pool_stats, _stats
from harness.types import CriterionVerdict

V1 = Path(__file__).resolve().parents[1] / "data" / "logs" / "v1"
PREPARED = {
    "index_cache_hit": False,
    "index_s": 0.5,
    "embedded_texts": 12,
    "retrieve_ms_median": None,
    "rerank_llm_calls": 0,
    "rerank_llm_cache_hits": 0,
    "prepare_s": 0.7,
}


def _paid(n: int) -> JudgeStats:
    stats = JudgeStats()
    for _ in range(n):
        stats.record(
            CriterionVerdict(
                criterion="relevant",
                value=True,
                reason="r",
                raw="yes",
                calls=2,
                retries=1,
                failed_attempts=1,
                prompt_tokens=10,
                completion_tokens=1,
                latency_s=0.2,
            )
        )
    return stats


@pytest.mark.parametrize("pool", [False, True])
@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("priced", [False, True])
def test_written_stats_keep_the_producers_keys_in_order(pool, lazy, priced):
    config = JudgeConfig(
        price_prompt_per_mtok=2.0 if priced else 0, price_completion_per_mtok=8.0 if priced else 0
    )
    run = dict(PREPARED)  # as run_experiment gathers them
    if pool:
        run.update(_pool_stats(_paid(2), config))
    tally = VerdictTally(lazy=lazy)
    tally.judged, tally.complete = 4, 1
    run.update(tally.to_stats())
    run["judge_s"] = 1.25
    typed = _stats(run, _paid(3), 0.0, config)
    assert isinstance(typed, RunStats)
    expected = {**run, **_paid(3).to_dict()}
    written = typed.to_dict()
    assert list(written)[: len(expected)] == list(expected)
    assert {k: written[k] for k in expected} == expected
    assert list(written)[len(expected)] == "total_s"
    assert ("cost_usd" in written) == priced
    assert typed.judge_calls == 6 and typed.hits_not_judged == (0 if lazy else None)
    assert typed.failure_pool_calls == (4 if pool else None)
    # and it reads back as the same record
    assert parse_record(RunStats, json.loads(json.dumps(written)), "stats") == typed


def test_an_interrupted_run_before_preparing_writes_only_what_it_has():
    typed = _stats({}, JudgeStats(), 0.0, JudgeConfig())
    assert list(typed.to_dict()) == [*JudgeStats().to_dict(), "total_s"]
    assert RunStats().to_dict() == {}  # a header written at the start


@pytest.mark.parametrize("folder", ["run", "sweep/trials/0", "sweep/trials/1"])
def test_older_logs_read_as_typed_stats_and_write_back_the_same(folder):
    raw = json.loads((V1 / folder / "header.json").read_text())
    header = read_run(V1 / folder).header
    assert isinstance(header.stats, RunStats)
    assert json.dumps(header.to_dict()["stats"]) == json.dumps(raw["stats"])
    assert header.stats.judge_failed_attempts is None  # not recorded then


def test_unknown_keys_are_kept_and_wrong_types_named():
    typed = parse_record(RunStats, {"judge_calls": 2, "total_s": 1.0, "newer": [1]}, "h")
    assert typed.extra == {"newer": [1]} and typed.to_dict()["newer"] == [1]
    with pytest.raises(HarnessError, match="judge_calls"):
        parse_record(RunStats, {"judge_calls": "many"}, "header.json stats")
