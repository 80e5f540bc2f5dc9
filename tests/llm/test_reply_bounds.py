"""Replies that are too big, too slow or too large a request (issue 26, items 6, 7, 10
and the gzip bomb of 15): each call is bounded in bytes and in time, and ends as one
error verdict. All against FakeOpenAI on 127.0.0.1."""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path

import pytest

from harness.config import CriteriaConfig, load_experiment
from harness.errors import ConfigError
from harness.judge import JudgeStats, judge_pairs
from harness.judge.chat import RAW_KEPT_CHARS, ChatJudge, kept_raw
from harness.llm.client import ChatClient, ChatFailed
from harness.pipeline import run_experiment
from harness.testing import Act, FakeOpenAI
from tests.conftest import DATA

MB = 1_000_000


def _judge(server: FakeOpenAI, **kw) -> ChatJudge:
    kw.setdefault("retry_base_s", 0.001)
    kw.setdefault("retry_cap_s", 0.005)
    return ChatJudge(base_url=server.base_url, model="fake", api_key="sk-test-not-a-key", **kw)


# item 6 ---------------------------------------------------------------------------


def test_a_10_mb_yes_is_malformed_not_a_yes():
    """A 200 whose answer is "yes" and 10 MB of spaces: read up to the 1 MB cap, never
    taken as yes, retried, then one error verdict saying why; nothing big is kept."""
    with FakeOpenAI(lambda n, p: Act("huge", text="yes", size=10 * MB)) as server:
        v = _judge(server, max_retries=1).grade("q?", "p", "relevant", "crit")
    assert v.value is None
    assert v.error.startswith("MalformedReply: a 200 answer over 1000000 bytes")
    assert "judge.max_reply_bytes" in v.error
    assert (v.calls, v.failed_attempts, server.requests) == (2, 2, 2)
    assert len(json.dumps(v.to_dict())) < 2000


def test_an_answer_longer_than_its_tokens_is_malformed():
    """Under the byte cap but far longer than 2 tokens could be: malformed, not "yes"."""
    with FakeOpenAI(lambda n, p: Act("huge", text="yes", size=200_000)) as server:
        v = _judge(server, max_retries=0).grade("q?", "p", "relevant", "crit")
    assert v.value is None and "more than 2 tokens can hold" in v.error
    assert server.requests == 1


def test_the_cap_is_configurable_and_checked():
    with FakeOpenAI(lambda n, p: Act(text="yes")) as server:
        assert _judge(server, max_reply_bytes=100_000).grade("q", "p", "relevant", "c").value
        small = _judge(server, max_reply_bytes=50, max_retries=0)
        v = small.grade("q", "p", "relevant", "c")
    assert v.value is None and "over 50 bytes" in v.error
    with pytest.raises(ConfigError, match=r"judge\.max_reply_bytes"):
        load_experiment(DATA / "experiment.toml", ["judge.max_reply_bytes=0"])


def test_kept_raw_text_is_cut_and_says_so():
    assert kept_raw("yes") == "yes"
    cut = kept_raw("y" * (RAW_KEPT_CHARS + 1234))
    assert cut.startswith("y" * RAW_KEPT_CHARS)
    assert cut.endswith("[... 1234 more characters not kept]")


def test_a_run_against_huge_replies_writes_small_files(tmp_path: Path):
    """The reported attack: answers of several megabytes beginning with "yes" (here to
    every prompt about compost; a run where all fail stops, as for any dead endpoint).
    The run finishes with those verdicts as errors, and its log and the verdict cache
    stay small."""

    def behave(n: int, prompt: str) -> Act:
        if "compost" in prompt.lower():
            return Act("huge", text="yes", size=3 * MB)
        return Act(text="yes")

    with FakeOpenAI(behave) as server:
        config = load_experiment(
            DATA / "experiment.toml",
            [
                f"judge.base_url={server.base_url}",
                "judge.model=fake-huge",
                "judge.max_retries=0",
                "judge.max_reply_bytes=200000",
            ],
        )
        run = run_experiment(config, results_dir=tmp_path / "r", cache_dir=tmp_path / "c")
    assert run.header.status == "done"
    hits = [h for q in run.questions for h in q.hits]
    errs = [h for h in hits if h.verdict.relevant.error]
    assert errs and all("compost" in h.chunk.text.lower() for h in errs)
    assert all("over 200000 bytes" in h.verdict.relevant.error for h in errs)
    assert all(h.verdict.relevant.value is None for h in errs)
    sizes = [p.stat().st_size for p in (tmp_path / "r").rglob("*") if p.is_file()]
    sizes += [p.stat().st_size for p in (tmp_path / "c").rglob("*") if p.is_file()]
    assert max(sizes) < 2 * MB


# item 15: the gzip bomb -------------------------------------------------------------


def test_a_gzip_bomb_is_inflated_only_up_to_the_cap():
    """200 KB of gzip that inflates to 200 MB: inflated chunk by chunk and stopped at the
    cap, so the client never holds more than a few megabytes."""
    with FakeOpenAI(lambda n, p: Act("gzipbomb", text="yes", size=200 * MB)) as server:
        judge = _judge(server, max_retries=0)
        judge.grade("q?", "warm up the session", "relevant", "crit")  # bomb made, cached
        tracemalloc.start()
        try:
            v = judge.grade("q?", "p", "relevant", "crit")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert v.value is None and "over 1000000 bytes" in v.error
    assert peak < 20 * MB


def test_a_small_gzip_reply_is_read():
    with FakeOpenAI(lambda n, p: Act("gzipbomb", text="yes", size=10)) as server:
        v = _judge(server).grade("q?", "p", "relevant", "crit")
    assert v.value is True and v.error is None


# item 7 ---------------------------------------------------------------------------


def test_a_slow_drip_ends_at_the_deadline_with_an_error_verdict():
    """An endpoint sending one byte a second: `timeout_s` bounds each whole request, so
    the call ends after about timeout_s per attempt, retried once, then an error."""
    with FakeOpenAI(lambda n, p: Act("drip", text="yes", hang_s=1.0)) as server:
        judge = _judge(server, timeout_s=1.0, max_retries=1)
        t0 = time.perf_counter()
        v = judge.grade("q?", "p", "relevant", "crit")
        elapsed = time.perf_counter() - t0
    assert v.value is None and v.error.startswith("APITimeoutError")
    assert (v.calls, v.retries, v.failed_attempts) == (2, 1, 2)
    assert 1.9 <= elapsed < 4.0


def test_a_drip_fast_enough_for_the_deadline_is_read():
    with FakeOpenAI(lambda n, p: Act("drip", text="yes", hang_s=0.001)) as server:
        v = _judge(server, timeout_s=10.0).grade("q?", "p", "relevant", "crit")
    assert v.value is True


# item 10 --------------------------------------------------------------------------


def test_413_is_not_retried():
    """A request too large will not shrink by waiting: one request per verdict."""
    pairs = [(f"question {i}?", f"passage {i}") for i in range(4)]
    with FakeOpenAI(lambda n, p: Act("413")) as server:
        judge = _judge(server, max_retries=1)
        stats = JudgeStats()
        verdicts = judge_pairs(pairs, judge, criteria=CriteriaConfig(), cache=None, stats=stats)
        assert server.requests == 4
    for v in verdicts:
        assert v.relevant.value is None and "413" in v.relevant.error
        assert (v.relevant.calls, v.relevant.retries, v.relevant.failed_attempts) == (1, 0, 1)
    assert stats.errors == 4 and stats.calls == 4


def test_413_through_the_blocking_client():
    with FakeOpenAI(lambda n, p: Act("413")) as server:
        client = ChatClient(base_url=server.base_url, model="fake", api_key="", max_retries=3)
        with pytest.raises(ChatFailed) as failed:
            client.chat([{"role": "user", "content": "hi"}], max_tokens=2)
        assert server.requests == 1
    assert failed.value.cost.calls == 1 and failed.value.cost.retries == 0


def test_judge_timeout_s_from_the_experiment_is_the_whole_call_deadline(tmp_path: Path):
    """Through a run: the compost chunk's prompts drip a byte a second; with
    judge.timeout_s = 1 each of those verdicts ends after about a second, as an error,
    and the run finishes."""

    def behave(n: int, prompt: str) -> Act:
        if "compost" in prompt.lower():
            return Act("drip", text="yes", hang_s=1.0)
        return Act(text="yes")

    with FakeOpenAI(behave) as server:
        config = load_experiment(
            DATA / "experiment.toml",
            [
                f"judge.base_url={server.base_url}",
                "judge.model=fake-drip",
                "judge.max_retries=0",
                "judge.timeout_s=1",
            ],
        )
        t0 = time.perf_counter()
        run = run_experiment(config, results_dir=tmp_path / "r", cache_dir=tmp_path / "c")
        elapsed = time.perf_counter() - t0
    assert run.header.status == "done"
    errs = [h for q in run.questions for h in q.hits if h.verdict.relevant.error]
    assert errs and all("compost" in h.chunk.text.lower() for h in errs)
    assert all(h.verdict.relevant.error.startswith("APITimeoutError") for h in errs)
    # a dripped reply is ~250 bytes: read to its end, each call would take minutes
    assert server.kinds["drip"] >= 1 and elapsed < 150
