"""The asynchronous client (issue 17): requests on one event loop keep the retry,
Retry-After, budget and cancellation behaviour, and pairs sharing a chunk are not
serialised against an endpoint without a prompt cache. All against FakeOpenAI."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from harness.config import CriteriaConfig
from harness.judge import JudgeStats, judge_pairs
from harness.judge.chat import ChatJudge
from harness.llm.ratelimit import RateLimiter
from harness.testing import Act, FakeOpenAI


def _judge(server: FakeOpenAI, **kw) -> ChatJudge:
    kw.setdefault("retry_base_s", 0.002)
    kw.setdefault("retry_cap_s", 0.01)
    return ChatJudge(base_url=server.base_url, model="fake", api_key="sk-test-not-a-key", **kw)


def _no(n: int, prompt: str) -> Act:
    return Act(text="no")


def test_in_flight_is_the_concurrency_and_a_shared_chunk_is_no_critical_path():
    pairs = [(f"question {i}?", "the same passage") for i in range(16)]
    with FakeOpenAI(_no, latency_s=0.1) as server:
        verdicts = judge_pairs(
            pairs, _judge(server), criteria=CriteriaConfig(), cache=None, stats=JudgeStats(),
            concurrency=8,
        )  # fmt: skip
        # 8 of the chunk's 16 pairs at once, not one after another
        assert server.max_in_flight == 8
    assert all(v.grade == 0 for v in verdicts)
    # a server with a prompt cache (the local llama.cpp one) gets the chunk's pairs in a row
    with FakeOpenAI(_no, latency_s=0.01) as server:
        judge_pairs(
            pairs, _judge(server, prompt_cache=True), criteria=CriteriaConfig(), cache=None,
            stats=JudgeStats(), concurrency=8,
        )  # fmt: skip
        assert server.max_in_flight == 1


def test_a_burst_opens_one_connection_per_call_in_flight_and_keeps_each(tmp_path):
    """Relevance then completeness of 24 pairs, 6 in flight: the connections are opened
    while the work is set up (`Judge.warm`), and each answer hands its connection and
    its call permit to the next request together, so no request opens a connection of
    its own; a rerun from the cache opens none."""
    from harness.stores import VerdictCache

    pairs = [(f"question {i}?", f"passage {i}") for i in range(24)]
    cache = VerdictCache(tmp_path / "verdicts.sqlite")
    with FakeOpenAI(lambda n, p: Act(text="yes"), latency_s=0.02) as server:
        judge = _judge(server)
        warmed: list[int] = []
        warm = judge.warm
        judge.warm = lambda calls: (warmed.append(calls), warm(calls))  # type: ignore[method-assign]
        stats = JudgeStats()
        judge_pairs(
            pairs, judge, criteria=CriteriaConfig(), cache=cache, stats=stats, concurrency=6
        )
        assert stats.calls == 48 and server.max_in_flight == 6
        assert len(server.peers) == 6
        assert warmed == [6]
        stats = JudgeStats()
        judge_pairs(
            pairs, judge, criteria=CriteriaConfig(), cache=cache, stats=stats, concurrency=6
        )
        assert stats.calls == 0 and warmed == [6]  # nothing to pay: nothing opened
    cache.close()


def test_each_worker_sends_a_chunk_to_one_server_slot_of_its_own():
    """Against a llama.cpp server with 3 slots, 3 workers each own a slot: every request
    names one (`id_slot`), a chunk's requests all name the same and come in a row (both
    criteria of a pair, then the next question), so the slot's prompt cache holds the
    passage while its questions are asked."""

    def relevant(n: int, prompt: str) -> Act:
        return Act(text="yes")

    pairs = [(f"question {q}?", f"passage {c}") for q in range(4) for c in range(6)]
    with FakeOpenAI(relevant, latency_s=0.005) as server:
        judge_pairs(
            pairs, _judge(server, prompt_cache=True, slots=3), criteria=CriteriaConfig(),
            cache=None, stats=JudgeStats(), concurrency=3,
        )  # fmt: skip
        sent = list(server.slots)
    assert len(sent) == 48  # both criteria of each pair
    assert {slot for slot, _ in sent} == {0, 1, 2}
    slot_of: dict[str, set] = {}
    for slot, prompt in sent:
        chunk = next(c for _, c in pairs if c in prompt)
        slot_of.setdefault(chunk, set()).add(slot)
    assert all(len(s) == 1 for s in slot_of.values())
    for slot in range(3):
        chunks = [next(c for _, c in pairs if c in p) for s, p in sent if s == slot]
        # a chunk's 8 requests in a row on its slot, not interleaved with another's
        assert all(len(set(chunks[i : i + 8])) == 1 for i in range(0, len(chunks), 8))
    # no slot is named without a server that has them
    with FakeOpenAI(relevant) as server:
        judge_pairs(
            pairs[:2], _judge(server, prompt_cache=True), criteria=CriteriaConfig(),
            cache=None, stats=JudgeStats(), concurrency=2,
        )  # fmt: skip
        assert {slot for slot, _ in server.slots} == {None}


def test_a_chunk_is_asked_one_criterion_at_a_time():
    """Against a server with a prompt cache, a chunk's pairs are asked relevance first for
    every question, then "complete" of the relevant ones; the prompt puts the question
    last, so each repeats the one before it up to its question."""
    from harness.config.schema import DEFAULT_COMPLETE, DEFAULT_RELEVANT

    def kept_relevant(n: int, prompt: str) -> Act:
        return Act(text="yes" if DEFAULT_COMPLETE in prompt or "kept" in prompt else "no")

    pairs = [(f"question {q} {'kept' if q % 2 == 0 else 'left'}?", "one passage") for q in range(6)]
    with FakeOpenAI(kept_relevant, latency_s=0.002) as server:
        verdicts = judge_pairs(
            pairs, _judge(server, prompt_cache=True, slots=1), criteria=CriteriaConfig(),
            cache=None, stats=JudgeStats(), concurrency=1,
        )  # fmt: skip
        sent = [prompt for _, prompt in server.slots]
    criteria = [DEFAULT_RELEVANT in p for p in sent]
    asked = [next(q for q, _ in pairs if q in p) for p in sent]
    assert criteria == [True] * 6 + [False] * 3  # relevance of each, then "complete"
    kept = [q for q, _ in pairs[::2]]
    assert asked == [q for q, _ in pairs] + kept
    for before, after, q in zip(sent, sent[1:], asked[1:], strict=False):
        if (DEFAULT_RELEVANT in before) == (DEFAULT_RELEVANT in after):  # same criterion
            assert after.endswith(q) and before[: len(after) - len(q)] == after[: -len(q)]
    assert [v.grade for v in verdicts] == [2, 0] * 3


def test_retry_after_waits_overlap_on_the_loop():
    """Every prompt is rate limited once with Retry-After 0.3 s: each is retried after the
    wait, and the waits of the 8 requests in flight run at once, not one after another."""
    seen: set[str] = set()

    def behave(n: int, prompt: str) -> Act:
        if prompt in seen:
            return Act(text="no")
        seen.add(prompt)
        return Act("429", retry_after_s=0.3)

    pairs = [(f"question {i}?", f"passage {i}") for i in range(8)]
    with FakeOpenAI(behave) as server:
        stats = JudgeStats()
        t0 = time.perf_counter()
        verdicts = judge_pairs(
            pairs, _judge(server), criteria=CriteriaConfig(), cache=None, stats=stats,
            concurrency=8,
        )  # fmt: skip
        elapsed = time.perf_counter() - t0
        assert server.requests == 16
    assert all(v.grade == 0 and v.relevant.retries == 1 for v in verdicts)
    assert stats.retries == 8 and stats.failed_attempts == 8 and stats.calls == 16
    assert 0.3 <= elapsed < 2.4  # 8 waits of 0.3 s overlapped (2.4 s one after another)


def test_requests_per_minute_budget_holds_on_the_loop():
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:  # a fake clock: waiting advances it
        slept.append(s)
        now[0] += s

    limiter = RateLimiter(requests_per_minute=2, clock=lambda: now[0], sleep=sleep)
    pairs = [(f"question {i}?", f"passage {i}") for i in range(5)]
    with FakeOpenAI(_no) as server:
        judge_pairs(
            pairs, _judge(server, limiter=limiter), criteria=CriteriaConfig(), cache=None,
            stats=JudgeStats(), concurrency=4,
        )  # fmt: skip
        assert server.requests == 5
    # a full bucket of 2, then one request every 30 s of the fake clock
    assert now[0] == pytest.approx(90.0) and limiter.waited_s == pytest.approx(sum(slept))


def test_an_error_in_the_caller_cancels_the_requests_in_flight():
    pairs = [(f"question {i}?", f"passage {i}") for i in range(64)]

    def stop(i, verdict):
        raise RuntimeError("the caller gave up")

    with FakeOpenAI(_no, latency_s=0.3) as server:
        t0 = time.perf_counter()
        with pytest.raises(RuntimeError, match="gave up"):
            judge_pairs(
                pairs, _judge(server), criteria=CriteriaConfig(), cache=None,
                stats=JudgeStats(), concurrency=8, on_done=stop,
            )  # fmt: skip
        assert time.perf_counter() - t0 < 2.0
        time.sleep(0.8)  # nothing new starts once the work is cancelled
        assert server.requests <= 16
    # the loop survives for the next caller
    with FakeOpenAI(_no) as server:
        verdicts = judge_pairs(
            pairs[:4], _judge(server), criteria=CriteriaConfig(), cache=None, stats=JudgeStats()
        )
    assert [v.grade for v in verdicts] == [0, 0, 0, 0]


def test_the_sdk_is_loaded_only_when_a_request_fails():
    """Importing the OpenAI SDK and making its client cost ~0.8 s of CPU inside every
    run's judging; it now serves only failed requests (their exception types) and batch
    sweeps, so a run whose calls succeed never loads it (a process of its own, since
    other tests load it here)."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from harness.testing import Act, FakeOpenAI\n"
        "from harness.llm.client import ChatClient\n"
        "with FakeOpenAI(lambda n, p: Act(text='yes' if n == 1 else '500', kind='answer' "
        "if n == 1 else '500')) as s:\n"
        "    c = ChatClient(base_url=s.base_url, model='m', api_key='', max_retries=0)\n"
        "    assert c.chat([{'role': 'user', 'content': 'q'}], max_tokens=1).text == 'yes'\n"
        "    print('openai' in sys.modules)\n"
        "    try:\n"
        "        c.chat([{'role': 'user', 'content': 'q'}], max_tokens=1)\n"
        "    except Exception as exc:\n"
        "        print(type(exc).__name__, 'openai' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split("\n")
    assert out[0] == "False"
    assert out[1] == "ChatFailed True"


def test_the_lean_benchmark_endpoint_answers_the_judge_over_kept_connections():
    """The benchmarks' lean fake endpoint (its own process) answers every judge request
    with its canned text, several requests in a row on each connection."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from harness.testing.lean_openai import main; main()",
            "0.01",
            "yes",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        judge = ChatJudge(base_url=url, model="fake", api_key="", max_retries=0)
        pairs = [(f"question {i}?", f"passage {i}") for i in range(12)]
        stats = JudgeStats()
        verdicts = judge_pairs(
            pairs, judge, criteria=CriteriaConfig(), cache=None, stats=stats, concurrency=3
        )
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert all(v.grade == 2 for v in verdicts)  # "yes" to both criteria
    assert stats.calls == 24 and stats.errors == 0
