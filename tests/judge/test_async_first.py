"""Judges are asynchronous first (issue 21): the protocol declares the coroutines,
`BaseJudge` supplies the blocking methods, and a backend written either way (a blocking
`grade` or an `async agrade`) serves every caller. Costs are a typed `Cost`."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from harness.config import CriteriaConfig
from harness.judge import BaseJudge, Judge, JudgeStats, judge_pairs
from harness.judge.chat import ChatJudge
from harness.llm import aio
from harness.testing import Act, FakeOpenAI
from harness.types import ComponentSpec, Cost, CriterionVerdict

CRITERIA = CriteriaConfig()
PAIRS = [("q1", "relevant and complete"), ("q1", "relevant only"), ("q2", "nothing")]


def _answer(chunk_text: str, criterion: str) -> CriterionVerdict:
    value = "relevant" in chunk_text if criterion == "relevant" else "complete" in chunk_text
    return CriterionVerdict(criterion, value, calls=1, prompt_tokens=10, completion_tokens=1)


class Blocking(BaseJudge):
    """A backend with `identity` and a blocking `grade` only."""

    spec = ComponentSpec(name="blocking")

    def __init__(self) -> None:
        self.threads: set[str] = set()

    def identity(self) -> str:
        return "blocking-v1"

    def grade(self, question, chunk_text, criterion, criterion_text):
        self.threads.add(threading.current_thread().name)
        return _answer(chunk_text, criterion)


class Awaiting(BaseJudge):
    """A backend with `identity` and an `async agrade` only."""

    spec = ComponentSpec(name="awaiting")

    def __init__(self) -> None:
        self.threads: set[str] = set()

    def identity(self) -> str:
        return "awaiting-v1"

    async def agrade(self, question, chunk_text, criterion, criterion_text):
        self.threads.add(threading.current_thread().name)
        return _answer(chunk_text, criterion)


@pytest.mark.parametrize("cls", [Blocking, Awaiting])
@pytest.mark.parametrize("mode", ["pointwise", "both", "listwise"])
def test_a_backend_written_either_way_serves_every_mode(cls, mode):
    judge = cls().with_options(mode=mode)
    assert isinstance(judge, Judge)
    verdicts = judge_pairs(PAIRS, judge, criteria=CRITERIA, cache=None, stats=JudgeStats())
    assert [v.grade for v in verdicts] == [2, 1, 0]
    # "complete" of the irrelevant chunk is never asked, in every mode
    assert verdicts[2].complete.reason == "not asked: judged not relevant"
    assert verdicts[2].complete.calls == 0


@pytest.mark.parametrize("cls", [Blocking, Awaiting])
def test_the_blocking_facade_waits_for_the_coroutines(cls):
    judge = cls()
    assert judge.grade("q", "relevant", "relevant", "r").value is True
    rel, comp = judge.grade_both("q", "relevant only", CRITERIA)
    assert (rel.value, comp.value) == (True, False)
    listed = judge.grade_list("q", ["nothing", "relevant and complete"], CRITERIA)
    assert [(r.value, c.value) for r, c in listed] == [(False, False), (True, True)]


def test_a_blocking_grade_runs_off_the_loop_and_a_coroutine_on_it():
    blocking, awaiting = Blocking(), Awaiting()
    for judge in (blocking, awaiting):
        judge_pairs(PAIRS, judge, criteria=CRITERIA, cache=None, stats=JudgeStats())
    assert blocking.threads and "harness-llm-loop" not in blocking.threads
    assert awaiting.threads == {"harness-llm-loop"}


def test_a_backend_with_neither_method_says_so():
    class Nothing(BaseJudge):
        spec = ComponentSpec(name="nothing")

        def identity(self) -> str:
            return "nothing"

    with pytest.raises(NotImplementedError, match="neither agrade nor grade"):
        Nothing().grade("q", "c", "relevant", "r")
    with pytest.raises(NotImplementedError, match="neither agrade nor grade"):
        judge_pairs(PAIRS, Nothing(), criteria=CRITERIA, cache=None, stats=JudgeStats())


def test_ctrl_c_in_a_blocking_grade_reaches_the_caller_and_the_loop_lives_on():
    class Interrupted(Blocking):
        def grade(self, question, chunk_text, criterion, criterion_text):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Interrupted().grade_both("q", "relevant", CRITERIA)
    assert Awaiting().grade("q", "relevant", "relevant", "r").value is True


def test_a_blocking_call_on_the_loop_thread_is_refused():
    async def inside() -> None:
        Awaiting().grade("q", "c", "relevant", "r")

    with pytest.raises(RuntimeError, match="event loop's own thread"):
        aio.submit(inside()).result(timeout=10)


# Cost ------------------------------------------------------------------------------


def test_cost_adds_up_and_sums():
    a = Cost(calls=2, prompt_tokens=10, completion_tokens=1, latency_s=0.5, failed_attempts=1)
    b = Cost(calls=1, prompt_tokens=5, retries=1, failed_attempts=1)
    total = a + b
    assert total == Cost(
        calls=3, prompt_tokens=15, completion_tokens=1, latency_s=0.5, retries=1, failed_attempts=2
    )
    assert sum([a, b]) == total == sum([a, b], Cost())
    assert sum([], Cost()) == Cost() and 0 + a == a
    assert total.answered == 1
    assert Cost(prompt_tokens=1_000_000, completion_tokens=500_000).usd(0.15, 0.6) == 0.45
    assert Cost(prompt_tokens=10).usd(0, 0) is None


def test_cost_addition_covers_every_field():
    """`+` is spelled out field by field for speed: a field added later must be in it."""
    ones = Cost(**{f.name: 1 for f in dataclasses.fields(Cost)})
    assert ones + ones == Cost(**{f.name: 2 for f in dataclasses.fields(Cost)})


def test_a_verdict_carries_its_cost_under_the_same_log_keys():
    v = CriterionVerdict("relevant", True, calls=3, prompt_tokens=7, retries=2, failed_attempts=2)
    assert v.cost == Cost(calls=3, prompt_tokens=7, retries=2, failed_attempts=2)
    assert v.with_cost(Cost()).to_dict() == CriterionVerdict("relevant", True).to_dict()
    assert list(v.to_dict()) == [
        "criterion", "value", "p_yes", "p_raw", "distribution", "evidence", "reason", "raw",
        "error", "cached", "calls", "prompt_tokens", "completion_tokens", "latency_s",
        "retries", "failed_attempts",
    ]  # fmt: skip
    stats = JudgeStats()
    stats.record(v)
    stats.record(v)
    assert stats.cost == v.cost + v.cost and stats.calls == 6 and stats.failed_attempts == 4


def test_an_ensemble_verdict_keeps_every_wordings_failed_attempts():
    """The ensemble's cost is the sum of its wordings' costs, failed attempts included
    (they were dropped before)."""
    seen: set[str] = set()
    lock = threading.Lock()

    def behave(n: int, prompt: str) -> Act:
        with lock:
            first = prompt not in seen
            seen.add(prompt)
        return Act("500") if first else Act(text="yes")

    with FakeOpenAI(behave) as server:
        judge = ChatJudge(
            base_url=server.base_url, model="fake", api_key="", mode="ensemble",
            retry_base_s=0.001, retry_cap_s=0.002,
        )  # fmt: skip
        v = judge.grade("q?", "p", "relevant", "crit")
        stats = JudgeStats()
        stats.record(v)
    assert v.value is True
    assert (v.calls, v.retries, v.failed_attempts) == (4, 2, 2) == (server.requests, 2, 2)
    assert stats.to_dict()["judge_failed_attempts"] == 2
