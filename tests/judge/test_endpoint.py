"""The judge against a misbehaving OpenAI-compatible server: retries, errors kept apart,
concurrency limits, budgets, and token/cost accounting."""

from __future__ import annotations

import time

import pytest

from harness.config import CriteriaConfig, load_experiment
from harness.errors import JudgeUnavailable
from harness.judge import ChatJudge, JudgeStats, judge_pairs
from harness.llm.ratelimit import RateLimiter
from harness.pipeline import run_experiment
from harness.testing import Act, FakeOpenAI
from tests.conftest import DATA

PAIRS = [(f"question {i}?", f"passage number {i} about swaps") for i in range(24)]


def judge_for(server: FakeOpenAI, **kw) -> ChatJudge:
    kw.setdefault("retry_base_s", 0.01)
    return ChatJudge(base_url=server.base_url, model="fake", api_key="sk-test-not-a-key", **kw)


def test_rate_limits_timeouts_5xx_are_retried_until_they_pass():
    def behave(n, prompt):
        if n % 5 == 0:
            return Act("429", retry_after_s=0.05)
        if n % 7 == 0:
            return Act("500")
        if n % 11 == 0:
            return Act("hang", hang_s=1.0)
        return Act(text="yes")

    with FakeOpenAI(behave) as server:
        judge = judge_for(server, timeout_s=0.3, max_retries=6)
        stats = JudgeStats()
        verdicts = judge_pairs(
            PAIRS, judge, criteria=CriteriaConfig(), cache=None, stats=stats, concurrency=4
        )
    assert all(v.error is None for v in verdicts)  # every recoverable verdict recovered
    assert all(v.relevant.value and v.complete.value for v in verdicts)
    assert stats.retries >= server.kinds.get("429", 0) + server.kinds.get("500", 0)
    assert stats.retries > 0 and stats.errors == 0
    # tokens: what the client summed is exactly what the server reported for its answers
    assert stats.prompt_tokens == server.reported_prompt_tokens
    # every request is a call, failed ones included; the answered ones report a token each
    assert stats.calls == server.requests
    assert stats.completion_tokens == server.reported_completion_tokens
    assert server.reported_completion_tokens == stats.calls - stats.failed_attempts


def test_garbage_is_reasked_then_recorded_with_its_raw_output():
    def behave(n, prompt):
        return Act("garbage") if "passage number 3 " in prompt else Act(text="no")

    with FakeOpenAI(behave) as server:
        stats = JudgeStats()
        verdicts = judge_pairs(
            PAIRS[:6], judge_for(server), criteria=CriteriaConfig(), cache=None, stats=stats
        )
    bad = verdicts[3]
    assert bad.relevant.value is None and "expected yes or no" in bad.relevant.error
    assert bad.relevant.raw.count("banana split") == 2  # asked twice, both answers kept
    assert bad.relevant.calls == 2
    assert stats.errors == 1
    assert all(v.relevant.value is False for i, v in enumerate(verdicts) if i != 3)


@pytest.mark.parametrize(("latency_s", "limit"), [(0.05, 3), (0.02, 1)])
def test_concurrency_limit_is_never_exceeded(latency_s, limit):
    with FakeOpenAI(latency_s=latency_s) as server:
        judge_pairs(
            PAIRS,
            judge_for(server),
            criteria=CriteriaConfig(),
            cache=None,
            stats=JudgeStats(),
            concurrency=limit,
        )
    assert server.max_in_flight <= limit
    assert server.max_in_flight == limit  # and it is used


def test_a_judge_that_stays_down_stops_the_run():
    with FakeOpenAI(lambda n, p: Act("500")) as server:
        judge = judge_for(server, max_retries=1, max_consecutive_failures=4)
        with pytest.raises(JudgeUnavailable, match="failed 4 verdicts in a row"):
            judge_pairs(
                PAIRS,
                judge,
                criteria=CriteriaConfig(),
                cache=None,
                stats=JudgeStats(),
                concurrency=2,
            )
        assert server.requests < 2 * len(PAIRS)  # it stopped instead of grinding on


def test_retry_after_is_honoured():
    with FakeOpenAI(lambda n, p: Act("429", retry_after_s=0.2) if n == 1 else Act()) as server:
        judge = judge_for(server)
        waits = []
        backoff = judge.client.backoff_s
        judge.client.backoff_s = lambda attempt, exc: (
            waits.append(backoff(attempt, exc)) or waits[-1]
        )
        t0 = time.perf_counter()
        v = judge.grade("q?", "p", "relevant", "crit")
        elapsed = time.perf_counter() - t0
    assert v.value is True and v.retries == 1
    assert waits == [0.2] and elapsed >= 0.2
    # without Retry-After: full jitter within base * 2**attempt
    with FakeOpenAI(lambda n, p: Act("429") if n <= 2 else Act()) as server:
        judge = judge_for(server, retry_base_s=0.05)
        waits = []
        backoff = judge.client.backoff_s
        judge.client.backoff_s = lambda attempt, exc: (
            waits.append(backoff(attempt, exc)) or waits[-1]
        )
        assert judge.grade("q?", "p", "relevant", "crit").retries == 2
    assert 0 <= waits[0] <= 0.05 and 0 <= waits[1] <= 0.1


def test_rate_limiter_budgets_with_a_fake_clock():
    now = [0.0]
    slept = []

    def sleep(s):
        slept.append(s)
        now[0] += s

    lim = RateLimiter(
        requests_per_minute=60, tokens_per_minute=600, clock=lambda: now[0], sleep=sleep
    )
    for _ in range(60):  # the request bucket starts full: 60 at once
        lim.acquire(1)
    assert slept == []
    lim.acquire(1)  # the 61st waits one second for a request to refill
    assert slept == [pytest.approx(1.0)]
    # tokens: 600 a minute; 540 are left after 61 one-token requests minus a second's refill
    lim2 = RateLimiter(tokens_per_minute=600, clock=lambda: now[0], sleep=sleep)
    lim2.acquire(600)
    slept.clear()
    lim2.acquire(300)  # half the budget must refill: 30 s
    assert sum(slept) == pytest.approx(30.0)
    assert lim2.waited_s == pytest.approx(30.0)


def test_run_against_the_misbehaving_server_loses_nothing_and_counts_cost(tmp_path):
    def behave(n, prompt):
        if n % 4 == 0:
            return Act("429", retry_after_s=0.02)
        if n % 9 == 0:
            return Act("500")
        if "Compost" in prompt:
            return Act("garbage")
        return Act(text="yes")

    with FakeOpenAI(behave) as server:
        config = load_experiment(
            DATA / "experiment.toml",
            [
                f"judge.base_url={server.base_url}",
                "judge.model=fake",
                "judge.max_retries=6",
                "judge.price_prompt_per_mtok=2.5",
                "judge.price_completion_per_mtok=10",
            ],
        )
        run = run_experiment(config, results_dir=tmp_path, cache_dir=tmp_path / "c")
        s = run.header.stats
        assert run.header.status == "done" and len(run.questions) == 6
        assert s["judge_retries"] > 0
        assert s["prompt_tokens"] == server.reported_prompt_tokens
        assert s["cost_usd"] == pytest.approx(
            (s["prompt_tokens"] * 2.5 + s["completion_tokens"] * 10) / 1e6
        )
        # The compost chunks' verdicts are errors (garbage twice), kept apart from the metrics.
        errs = [h for q in run.questions for h in q.hits if h.verdict.error]
        assert errs and all("compost" in h.chunk.text.lower() for h in errs)
        assert s["judge_errors"] == len(errs)
        assert run.header.metrics["errors@3"] >= 1

        # A rerun pays only for what failed.
        before = server.answered
        again = run_experiment(config, results_dir=tmp_path, cache_dir=tmp_path / "c")
        assert again.header.stats["judge_paid_verdicts"] == len(errs)
        assert server.answered - before == 2 * len(errs)  # each re-asked once more


def test_dry_run_estimates_before_paying_and_sees_the_cache(tmp_path, capsys):
    from harness.cli import main
    from harness.pipeline import estimate_run

    with FakeOpenAI() as server:
        overrides = [
            f"judge.base_url={server.base_url}",
            "judge.model=fake",
            "judge.price_prompt_per_mtok=1",
            "judge.price_completion_per_mtok=4",
        ]
        config = load_experiment(DATA / "experiment.toml", overrides)
        before = estimate_run(config, cache_dir=tmp_path / "c")
        assert server.requests == 0  # nothing was asked
        assert before["exact_pairs"] and before["pairs"] == 18
        assert before["judge_calls_min"] == 18 and before["judge_calls_max"] == 36
        assert before["open_pairs"] == 18
        assert before["prompt_tokens_max"] > before["prompt_tokens_min"] > 18 * 50
        assert before["cost_usd_max"] > 0
        run = run_experiment(config, results_dir=tmp_path, cache_dir=tmp_path / "c")
        assert run.header.stats["judge_calls"] == 36  # the fake says yes to everything
        after = estimate_run(config, cache_dir=tmp_path / "c")
        assert after["judge_calls_max"] == 0
        args = [
            "run",
            str(DATA / "experiment.toml"),
            "--dry-run",
            "--cache-dir",
            str(tmp_path / "c"),
        ]
        for o in overrides:
            args += ["--set", o]
        assert main(args) == 0
        assert "judge calls: 0 to 0" in capsys.readouterr().out
        assert server.requests == 36


def _modes_behave(n, prompt):
    passages = prompt.count("<passage n=")
    if passages:  # listwise: one line per passage; passages about swaps are relevant
        blocks = prompt.split("<passage n=")[1:]
        lines = [
            f"{i}: relevant={'yes' if 'swap' in b else 'no'} complete=no"
            for i, b in enumerate(blocks, 1)
        ]
        return Act(text="\n".join(lines))
    if "relevant: yes|no" in prompt:  # both criteria in one call
        return Act(text="relevant: yes\ncomplete: no")
    return Act(text="yes")


@pytest.mark.parametrize("mode", ["both", "listwise"])
def test_cheaper_modes_make_fewer_calls_and_cache_per_criterion(mode, tmp_path):
    from harness.stores import VerdictCache

    pairs = [("When is the swap?", f"passage {i} about swaps") for i in range(3)]
    pairs += [("Who keeps the key?", f"passage {i} about keys") for i in range(3)]
    with FakeOpenAI(_modes_behave) as server:
        judge = judge_for(server, mode=mode)
        cache = VerdictCache(tmp_path / "v.sqlite")
        stats = JudgeStats()
        verdicts = judge_pairs(
            pairs, judge, criteria=CriteriaConfig(), cache=cache, stats=stats, concurrency=2
        )
        assert server.requests == (6 if mode == "both" else 2)
        assert stats.calls == server.requests  # each call's cost booked once
        assert stats.prompt_tokens == server.reported_prompt_tokens
        if mode == "both":
            assert all(v.relevant.value is True and v.complete.value is False for v in verdicts)
        else:
            assert [v.relevant.value for v in verdicts] == [True] * 3 + [False] * 3
        again = judge_pairs(
            pairs, judge, criteria=CriteriaConfig(), cache=cache, stats=JudgeStats()
        )
        assert server.requests == (6 if mode == "both" else 2)  # all from the cache
        assert [v.grade for v in again] == [v.grade for v in verdicts]
    assert judge.identity() != judge_for(server).identity()  # modes never share verdicts


@pytest.mark.parametrize("mode", ["pointwise", "both", "listwise"])
def test_estimate_matches_the_calls_each_mode_pays(mode, tmp_path):
    from harness.judge import estimate_calls
    from harness.stores import VerdictCache

    swaps = [("When is the swap?", f"passage {i} about swaps") for i in range(3)]
    keys = [("Who keeps the key?", f"passage {i} about keys") for i in range(3)]
    with FakeOpenAI(_modes_behave) as server:
        judge = judge_for(server, mode=mode)
        cache = VerdictCache(tmp_path / "v.sqlite")

        def estimate(pairs):
            return estimate_calls(
                pairs,
                identity=judge.identity(),
                criteria=CriteriaConfig(),
                mode=mode,
                reasons=False,
                cache=cache,
            )

        judge_pairs(swaps[:1], judge, criteria=CriteriaConfig(), cache=cache, stats=JudgeStats())
        paid = server.requests
        pairs = swaps + keys + swaps[1:2]  # a repeated pair is paid once
        e = estimate(pairs)
        assert (e.distinct_pairs, e.open_pairs) == (6, 5)  # swaps[0] is already paid
        stats = JudgeStats()
        judge_pairs(pairs, judge, criteria=CriteriaConfig(), cache=cache, stats=stats)
        assert e.calls_min <= stats.calls == server.requests - paid <= e.calls_max
        assert {"pointwise": (5, 10), "both": (5, 5), "listwise": (2, 2)}[mode] == (
            e.calls_min,
            e.calls_max,
        )
        assert e.prompt_tokens_min <= e.prompt_tokens_max
        assert 0.5 < e.prompt_tokens_max / stats.prompt_tokens < 2  # 4 characters a token
        assert estimate(pairs).calls_max == 0  # all paid now


def test_listwise_output_missing_a_passage_is_an_error_for_all():
    with FakeOpenAI(lambda n, p: Act(text="1: relevant=yes complete=yes")) as server:
        judge = judge_for(server, mode="listwise")
        out = judge.grade_list("q?", ["a", "b"], CriteriaConfig())
    assert all(r.error and "passages [2]" in r.error for r, _ in out)
    assert out[0][0].calls == 2 and out[1][0].calls == 0  # asked twice, booked once


@pytest.mark.parametrize("status", [400, 500])
def test_an_endpoint_without_logprobs_is_judged_without_p_yes(status):
    """llama-cpp-python's server refuses logprobs with a 500 unless started with
    --logits_all; other servers with a 400. Either way the verdicts go on, once told."""
    with FakeOpenAI(refuse_logprobs=status) as server:
        judge = judge_for(server, max_retries=0)
        stats = JudgeStats()
        verdicts = judge_pairs(
            PAIRS[:6], judge, criteria=CriteriaConfig(), cache=None, stats=stats, concurrency=1
        )
    assert server.refused_logprobs == 1
    assert all(v.relevant.value is True and v.relevant.p_yes is None for v in verdicts)
    # 12 answered calls, and the refused request is counted as a failed attempt
    assert stats.errors == 0 and stats.calls == server.requests == 13
    assert stats.failed_attempts == 1 and stats.retries == 0


@pytest.mark.parametrize("status", [400, 500])
def test_requests_in_flight_when_logprobs_are_refused_are_asked_again_without(status):
    # the first refusal turned logprobs off for the client, and each request already
    # sent with them then failed as an error verdict (enough of them in a row, and the
    # consecutive-failure limit stops the run)
    with FakeOpenAI(refuse_logprobs=status, latency_s=0.2) as server:
        judge = judge_for(server, max_retries=0)
        stats = JudgeStats()
        verdicts = judge_pairs(
            PAIRS[:12], judge, criteria=CriteriaConfig(), cache=None, stats=stats, concurrency=12
        )
    assert server.refused_logprobs > 1  # several were in flight with logprobs
    assert stats.errors == 0
    assert all(v.relevant.value is True and v.relevant.p_yes is None for v in verdicts)


def test_dry_run_with_a_paid_embedder_embeds_nothing_and_bounds_questions_x_k(tmp_path):
    from harness.pipeline import estimate_run

    config = load_experiment(
        DATA / "experiment.toml",
        [
            "embedder.name=openai",
            "judge.base_url=http://127.0.0.1:9/v1",  # never called
            "judge.model=fake",
            "questions.limit=4",
        ],
    )
    est = estimate_run(config, cache_dir=tmp_path)
    assert not est["exact_pairs"]
    assert est["questions"] == 4 and est["pairs"] == 4 * 3
    assert est["judge_calls_min"] == 12 and est["judge_calls_max"] == 24
    assert not (tmp_path / "embeddings.sqlite").exists()  # nothing was embedded


def test_a_judge_served_on_demand_starts_its_server_on_the_first_uncached_request(tmp_path):
    """The local judge's server starts only when a verdict is not cached (a rerun of a
    cached run never waits for the model to load), once, however many ask at once."""
    from harness.llm.client import ON_DEMAND_LABEL
    from harness.stores import VerdictCache

    starts: list[float] = []
    with FakeOpenAI(lambda n, prompt: Act(text="yes")) as server:

        def start() -> str:
            starts.append(time.monotonic())
            time.sleep(0.2)  # a server loading its model: the others wait for it
            return server.base_url

        def on_demand_judge() -> ChatJudge:
            return ChatJudge(base_url=start, model="fake", api_key="", concurrency=8)

        judge = on_demand_judge()
        assert judge.spec.args["base_url"] == ON_DEMAND_LABEL
        cache = VerdictCache(tmp_path / "verdicts.sqlite")

        def judge_all(j: ChatJudge):
            stats = JudgeStats()
            return judge_pairs(
                PAIRS, j, criteria=CriteriaConfig(), cache=cache, stats=stats, concurrency=8
            )

        try:
            first = judge_all(judge)
            assert len(starts) == 1 and server.requests == 2 * len(PAIRS)
            assert all(v.error is None and v.relevant.value for v in first)
            assert judge.client.base_url == server.base_url  # errors name the real URL
            again = judge_all(on_demand_judge())
        finally:
            cache.close()
    assert len(starts) == 1  # every verdict cached: the second judge never started one
    assert [v.relevant.value for v in again] == [v.relevant.value for v in first]


def test_the_first_failure_loads_the_sdk_without_stalling_the_requests_in_flight():
    """In a fresh process the first failed request imports the OpenAI SDK (~0.8 s of CPU).
    On the event loop that stalled every request in flight past a short timeout: answers
    the endpoint had sent were dropped and paid again. Off the loop, none is."""
    script = """
import sys
from harness.config import CriteriaConfig
from harness.judge import ChatJudge, JudgeStats, judge_pairs
from harness.testing import Act, FakeOpenAI
assert "openai" not in sys.modules
def behave(n, prompt):
    return Act("500") if n == 3 else Act(text="yes")
pairs = [(f"question {i}?", f"passage {i}") for i in range(16)]
with FakeOpenAI(behave) as server:
    judge = ChatJudge(base_url=server.base_url, model="fake", api_key="", timeout_s=0.5,
                      max_retries=2, retry_base_s=0.01)
    judge_pairs(pairs, judge, criteria=CriteriaConfig(), cache=None, stats=JudgeStats(),
                concurrency=8)
print(server.answered, server.requests)
"""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    answered, requests = map(int, proc.stdout.split())
    # each pair's two criteria answered once; one request failed and was asked again
    assert (answered, requests) == (2 * 16, 2 * 16 + 1)
