"""Endpoint faults (issue 11, items 5, 6, 8 and 12): malformed 200 answers, connections
that always drop for some prompts, long or date-form Retry-After, and every attempt
counted. All against the fake server on 127.0.0.1."""

from __future__ import annotations

import functools
import threading
import time
import types
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import httpx
import pytest

from harness.config import CriteriaConfig, load_experiment
from harness.errors import JudgeUnavailable
from harness.judge import JudgeStats, judge_pairs
from harness.judge.backends import chat as judge_factory
from harness.judge.chat import ChatJudge
from harness.llm.client import retry_after_s
from harness.pipeline import run_experiment
from harness.testing import Act, FakeOpenAI
from tests.conftest import DATA

PAIRS = [(f"question {i}?", f"passage number {i} about swaps") for i in range(12)]
MALFORMED = ("badjson", "nochoices", "emptychoices", "nomessage")


def judge_for(server: FakeOpenAI, **kw) -> ChatJudge:
    kw.setdefault("retry_base_s", 0.002)
    kw.setdefault("retry_cap_s", 0.01)
    return ChatJudge(base_url=server.base_url, model="fake", api_key="sk-test-not-a-key", **kw)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for the run tests: the index is built once; each test's judge model has
    its own name, so no test reads another's verdicts."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs build their judge in the chat backend: make its backoff milliseconds."""
    monkeypatch.setattr(
        judge_factory,
        "ChatJudge",
        functools.partial(ChatJudge, retry_base_s=0.002, retry_cap_s=0.01),
    )


def run_against(server: FakeOpenAI, tmp_path: Path, cache: Path, model: str, *overrides: str):
    config = load_experiment(
        DATA / "experiment.toml",
        [f"judge.base_url={server.base_url}", f"judge.model={model}", *overrides],
    )
    return run_experiment(config, results_dir=tmp_path / "r", cache_dir=cache)


# item 5 ---------------------------------------------------------------------------


def test_malformed_200_replies_are_retried_then_recorded_as_errors(tmp_path, cache, fast_retries):
    """A 200 that is not JSON, has no choices, `choices: []` or no message is a failed
    attempt: retried (the first answer to every prompt is malformed, and they recover),
    and where it stays malformed (the compost chunks) an error verdict; the run finishes
    with every other verdict kept."""
    seen: set[str] = set()
    lock = threading.Lock()

    def behave(n: int, prompt: str) -> Act:
        kind = MALFORMED[n % len(MALFORMED)]
        if "Compost" in prompt:
            return Act(kind)
        with lock:
            first = prompt not in seen
            seen.add(prompt)
        return Act(kind) if first else Act(text="yes")

    with FakeOpenAI(behave) as server:
        run = run_against(server, tmp_path, cache, "fake-malformed", "judge.max_retries=2")
    s = run.header.stats
    assert run.header.status == "done" and len(run.questions) == 6
    hits = [h for q in run.questions for h in q.hits]
    errs = [h for h in hits if h.verdict.relevant.error]
    assert errs and all("compost" in h.chunk.text.lower() for h in errs)
    for h in errs:
        v = h.verdict.relevant
        assert v.value is None and v.error.startswith("MalformedReply: a 200 answer")
        assert (v.calls, v.retries, v.failed_attempts) == (3, 2, 3)
    kept = [h for h in hits if not h.verdict.relevant.error]
    assert len(kept) == len(hits) - len(errs)
    assert all(h.verdict.relevant.value is True for h in kept)
    assert all(h.verdict.relevant.retries == 1 for h in kept)  # each recovered on retry
    assert {k for k in server.kinds if k != "answer"} == set(MALFORMED)
    assert s["judge_errors"] == len(errs)
    assert s["judge_calls"] == server.requests
    assert s["judge_failed_attempts"] == server.requests - server.answered


def test_each_malformed_kind_ends_as_an_error_verdict_not_an_exception():
    for kind in MALFORMED:
        with FakeOpenAI(lambda n, p, kind=kind: Act(kind)) as server:
            v = judge_for(server, max_retries=1).grade("q?", "p", "relevant", "crit")
        assert v.value is None and v.error.startswith("MalformedReply:"), kind
        assert v.calls == server.requests == 2 and v.failed_attempts == 2


# item 6 ---------------------------------------------------------------------------


def test_prompts_whose_connection_always_drops_are_errors_not_a_stopped_run(
    tmp_path, cache, fast_retries
):
    """The watering chunk's prompts always get a dropped connection; the endpoint
    answers everything else, so those verdicts are errors and the run finishes."""

    def behave(n: int, prompt: str) -> Act:
        return Act("drop") if "## Watering" in prompt else Act(text="yes")

    with FakeOpenAI(behave) as server:
        run = run_against(server, tmp_path, cache, "fake-drops", "judge.max_retries=2")
    assert run.header.status == "done" and len(run.questions) == 6
    hits = [h for q in run.questions for h in q.hits]
    errs = [h for h in hits if h.verdict.error]
    assert errs == [h for h in hits if "## Watering" in h.chunk.text] and len(errs) >= 2
    assert all(h.verdict.relevant.error.startswith("APIConnectionError") for h in errs)
    assert all(h.verdict.relevant.value is True for h in hits if h not in errs)
    assert run.header.stats["judge_errors"] == len(errs)
    assert server.kinds["drop"] == 3 * len(errs)  # each asked 1 + max_retries times


def test_unreachable_only_when_the_endpoint_never_answered():
    def behave(n: int, prompt: str) -> Act:
        return Act("drop") if "dropped" in prompt else Act(text="yes")

    # never answered: the endpoint is unreachable, stop
    with FakeOpenAI(behave) as server:
        judge = judge_for(server, max_retries=1)
        with pytest.raises(JudgeUnavailable, match="unreachable"):
            judge.grade("q?", "dropped", "relevant", "crit")
    # answered once: a prompt whose connection keeps dropping is that verdict's error
    with FakeOpenAI(behave) as server:
        judge = judge_for(server, max_retries=1)
        assert judge.grade("q?", "fine", "relevant", "crit").value is True
        v = judge.grade("q?", "dropped", "relevant", "crit")
        assert v.value is None and v.error.startswith("APIConnectionError")
        assert (v.calls, v.retries, v.failed_attempts) == (2, 1, 2)
    # an endpoint that goes down after answering is stopped by the consecutive limit
    with FakeOpenAI(lambda n, p: Act(text="yes") if n == 1 else Act("drop")) as server:
        judge = judge_for(server, max_retries=1, max_consecutive_failures=3)
        with pytest.raises(JudgeUnavailable, match="failed 3 verdicts in a row"):
            judge_pairs(PAIRS, judge, criteria=CriteriaConfig(), cache=None, stats=JudgeStats())
        assert server.requests == 1 + 3 * 2


# item 8 ---------------------------------------------------------------------------


def _headers(**h: str) -> types.SimpleNamespace:
    return types.SimpleNamespace(response=types.SimpleNamespace(headers=httpx.Headers(h)))


def test_retry_after_forms_are_read():
    soon = format_datetime(datetime.now(UTC) + timedelta(seconds=90), usegmt=True)
    assert 88 <= retry_after_s(_headers(**{"retry-after": soon})) <= 90
    past = format_datetime(datetime.now(UTC) - timedelta(hours=1), usegmt=True)
    assert retry_after_s(_headers(**{"retry-after": past})) == 0.0
    assert retry_after_s(_headers(**{"retry-after": "120"})) == 120.0
    assert retry_after_s(_headers(**{"retry-after-ms": "45000", "retry-after": "1"})) == 45.0
    assert retry_after_s(_headers(**{"retry-after": "soon-ish"})) is None
    assert retry_after_s(_headers()) is None
    assert retry_after_s(ValueError("no response")) is None


def test_retry_after_above_the_backoff_cap_and_in_date_form_is_honoured():
    """A 45 s Retry-After (above the 30 s backoff cap) is waited for, not replaced by a
    half-second jitter; a date 2 s ahead is waited for too (checked on the clock)."""
    slept: list[float] = []
    with FakeOpenAI(lambda n, p: Act("429", retry_after_s=45) if n == 1 else Act()) as server:
        judge = judge_for(server, retry_cap_s=30.0)
        judge.client.sleep = slept.append  # this client's waits only
        v = judge.grade("q?", "p", "relevant", "crit")
    assert v.value is True and v.retries == 1 and slept == [45.0]

    def behave(n: int, prompt: str) -> Act:
        if n > 1:
            return Act()
        when = format_datetime(datetime.now(UTC) + timedelta(seconds=2), usegmt=True)
        return Act("429", retry_after=when)

    with FakeOpenAI(behave) as server:
        t0 = time.perf_counter()
        v = judge_for(server).grade("q?", "p", "relevant", "crit")
        elapsed = time.perf_counter() - t0
    assert v.value is True and v.retries == 1 and server.requests == 2
    assert 1.0 <= elapsed < 4.0  # the date is to the second: 1-2 s of waiting


def test_retry_after_above_the_ceiling_stops_with_one_clear_error(tmp_path, cache):
    in_an_hour = format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)
    for act in (Act("429", retry_after_s=7200), Act("429", retry_after=in_an_hour)):
        with FakeOpenAI(lambda n, p, act=act: act) as server:
            judge = judge_for(server, max_retry_after_s=600)
            t0 = time.perf_counter()
            with pytest.raises(JudgeUnavailable) as err:
                judge.grade("q?", "p", "relevant", "crit")
            assert time.perf_counter() - t0 < 2 and server.requests == 1  # no hammering
        msg = str(err.value)
        assert server.base_url in msg and "judge.max_retry_after_s = 600" in msg
        assert ("7200 s" if act.retry_after is None else "asked to wait 3") in msg
    # through a run: `judge.max_retry_after_s` from the experiment reaches the client
    with FakeOpenAI(lambda n, p: Act("429", retry_after_s=90)) as server:
        with pytest.raises(JudgeUnavailable, match=r"asked to wait 90 s .*= 60 s"):
            run_against(server, tmp_path, cache, "fake-429", "judge.max_retry_after_s=60")
        # one per worker, and one a freed worker may start before the stop reaches it
        assert server.requests <= 4


# item 12 --------------------------------------------------------------------------


def test_every_attempt_is_counted_on_error_verdicts_and_successful_ones():
    """429s, 500s, drops and malformed replies, some that pass on a retry and some that
    never do: every request the server saw is a call, every unanswered one a failed
    attempt, and each failed attempt was either retried or ended its verdict."""
    transient = ("429", "500", "drop", "nochoices", "badjson", "emptychoices")
    asked: dict[str, int] = {}
    lock = threading.Lock()

    def behave(n: int, prompt: str) -> Act:
        with lock:
            asked[prompt] = attempt = asked.get(prompt, 0) + 1
        if "number 3 " in prompt or "number 7 " in prompt:
            return Act("500")  # always
        if "number 5 " in prompt:
            return Act("emptychoices")  # always
        i = int(prompt.split("passage number ")[1].split()[0])
        if attempt <= i % 3:  # pairs 1, 4, ... fail once, pairs 2, 8, ... twice
            kind = transient[(i + attempt) % len(transient)]
            return Act(kind, retry_after_s=0.001) if kind == "429" else Act(kind)
        return Act(text="yes")

    with FakeOpenAI(behave) as server:
        judge = judge_for(server, max_retries=3)
        stats = JudgeStats()
        verdicts = judge_pairs(
            PAIRS, judge, criteria=CriteriaConfig(), cache=None, stats=stats, concurrency=3
        )
    d = stats.to_dict()
    assert {i for i, v in enumerate(verdicts) if v.error} == {3, 5, 7}
    failed = [v.relevant for v in verdicts if v.relevant.error]
    for v in failed:  # an error verdict carries its attempts: 1 + max_retries
        assert (v.calls, v.retries, v.failed_attempts) == (4, 3, 4)
    for i, v in enumerate(verdicts):
        if i not in (3, 5, 7):  # both criteria asked, each failing i % 3 times first
            assert v.relevant.retries == v.complete.retries == i % 3
            assert v.relevant.calls == v.complete.calls == 1 + i % 3
    assert d["judge_calls"] == server.requests
    unanswered = sum(n for k, n in server.kinds.items() if k != "answer")
    assert d["judge_failed_attempts"] == unanswered == server.requests - server.answered
    # each failed attempt was retried, or was the last of a verdict that failed
    assert d["judge_retries"] + len(failed) == d["judge_failed_attempts"]
    ok = [i for i in range(len(PAIRS)) if i not in (3, 5, 7)]
    assert d["judge_retries"] == 3 * len(failed) + 2 * sum(i % 3 for i in ok)
    assert d["judge_errors"] == len(failed) == 3
    assert d["prompt_tokens"] == server.reported_prompt_tokens
